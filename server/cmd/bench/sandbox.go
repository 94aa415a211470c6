package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"conch/shared"
)

// commandStarts is how many times BenchmarkCommandStart starts `true` in each way, per run.
const commandStarts = 100

// startWays are BenchmarkCommandStart's sub-benchmarks (server/acp/sandbox_bench_test.go),
// the unconfined one first: the sandboxed ones are compared with it, the runner's with
// the way it names (base).
var startWays = []struct{ sub, name, base string }{
	{"unconfined", "unconfined (--no-sandbox)", ""},
	{"network=all", "sandboxed, network all", "unconfined"},
	{"network=none", "sandboxed, network none", "unconfined"},
	{"runner,network=all", "on a runner (acp.Remote over yamux on loopback), sandboxed, network all", "network=all"},
}

// sandboxBench measures what the sandbox costs: starting a command, and a new Gemini CLI
// session's first answer when Gemini CLI is installed (make gemini).
func (b *bench) sandboxBench(ctx context.Context) error {
	b.r.h(2, "The sandbox")
	if err := b.commandStart(ctx); err != nil {
		return err
	}
	return b.geminiFirstAnswer(ctx)
}

// commandStart runs BenchmarkCommandStart with the conch binary as ns-init and reports
// the median and p90 of each way, and what the sandbox adds at the median.
func (b *bench) commandStart(ctx context.Context) error {
	conch, err := filepath.Abs(b.conchBin)
	if err != nil {
		return err
	}
	goBin := os.Getenv("GO")
	if goBin == "" {
		goBin = "go"
	}
	args := []string{"test", "-run", "^$", "-bench", "^BenchmarkCommandStart$", "-benchtime", fmt.Sprintf("%dx", commandStarts),
		"-count", strconv.Itoa(b.runs), "./server/acp"}
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Env = append(os.Environ(), "CONCH_BENCH_INIT="+conch)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %v\n%s", goBin, strings.Join(args, " "), err, out.String())
	}
	p50, p90 := map[string]dist{}, map[string]dist{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 1 && f[0] == "---" && f[1] == "SKIP:" {
			return fmt.Errorf("no sandbox here: %s", out.String())
		}
		if len(f) < 4 || !strings.HasPrefix(f[0], "BenchmarkCommandStart/") {
			continue
		}
		name := strings.TrimPrefix(f[0], "BenchmarkCommandStart/")
		if i := strings.LastIndex(name, "-"); i > 0 { // the GOMAXPROCS suffix
			name = name[:i]
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			switch f[i+1] {
			case "p50-µs":
				p50[name] = append(p50[name], v)
			case "p90-µs":
				p90[name] = append(p90[name], v)
			}
		}
	}
	base := p50[startWays[0].sub]
	if len(base) == 0 {
		return fmt.Errorf("no figures from %s %s:\n%s", goBin, strings.Join(args, " "), out.String())
	}
	var rows [][]string
	for _, w := range startWays {
		added := "-"
		if from := p50[w.base]; len(from) > 0 && len(p50[w.sub]) > 0 {
			d := p50[w.sub].median() - from.median()
			added = msFromMicros(d)
			switch {
			case w.base != startWays[0].sub:
				b.goals.runnerAdded = added
			case !b.goals.sandboxMeasured || d > b.goals.sandboxAdded:
				b.goals.sandboxAdded, b.goals.sandboxMeasured = d, true
			}
		}
		rows = append(rows, []string{w.name, p50[w.sub].format(msFromMicros), p90[w.sub].format(msFromMicros), added})
	}
	b.r.p("Starting a command to its exit, as an agent's `terminal/create` runs one: `true`, started %d times in a row "+
		"each way (`go %s`, with `CONCH_BENCH_INIT=%s`: ns-init is the real conch binary), from the call that starts it "+
		"to its exit status. Every way runs under ns-init in a PID and user namespace of its own; *unconfined* is a "+
		"server run with `--no-sandbox` (ns-init without `--sandbox`); *sandboxed* adds Landlock (the ruleset built and "+
		"applied by ns-init before it starts the command), and network none a network namespace besides, whose "+
		"loopback ns-init brings up. Each start makes its box, as a session's commands do (the machine builds it from "+
		"the session's work, since a runner's paths are its own). Median and p90 of each run's %d starts; "+
		"the median over %d runs, and the spread. *Added* is the sandboxed median less the unconfined one (the goal: "+
		"under 10 ms), and for a runner its median less the same sandbox's here: the command started, its output and "+
		"exit carried over a stream of the runner's connection (the goal: under 5 ms).", commandStarts, strings.Join(args, " "), b.conchBin, commandStarts, b.runs)
	b.r.table([]string{"start of `true`", "median", "p90", "added at the median"}, rows)
	return nil
}

func msFromMicros(v float64) string { return fmt.Sprintf("%.1f ms", v/1000) }

// geminiPath is Gemini CLI's entry point, which make gemini installs (app/e2e uses it too).
var geminiPath = filepath.Join(".cache", "gemini", "node_modules", "@google", "gemini-cli", "bundle", "gemini.js")

// geminiAnswer is the model's one scripted reply.
const geminiAnswer = "Hello from the bench."

// geminiLimit bounds each timed step of a Gemini session: its creation, a prompt's answer.
const geminiLimit = 60 * time.Second

// geminiFirstAnswer starts a server with a sandboxed Gemini CLI and one with --no-sandbox,
// and times new sessions on each in turn: from the request that creates one to the
// session ready, and from its first prompt to Gemini's answer.
func (b *bench) geminiFirstAnswer(ctx context.Context) error {
	gemini, err := filepath.Abs(geminiPath)
	if err != nil {
		return err
	}
	_, statErr := os.Stat(gemini)
	node, nodeErr := exec.LookPath("node")
	if statErr != nil || nodeErr != nil {
		why := "Gemini CLI is not installed (`make gemini`)"
		if statErr == nil {
			why = "Gemini CLI runs on Node, and node is not on PATH"
		}
		b.r.p("**Gemini CLI's first answer not measured:** %s.", why)
		return nil
	}
	modes := []struct {
		name  string
		flags []string
	}{{"sandboxed", nil}, {"unconfined (--no-sandbox)", []string{"--no-sandbox"}}}
	servers := make([]*conch, len(modes))
	states := make([]string, len(modes))
	for i, m := range modes {
		dir := filepath.Join(b.tmp, fmt.Sprintf("gemini-%d", i))
		agents, err := geminiProfile(dir, gemini, node)
		if err != nil {
			return err
		}
		srv, err := startConch(ctx, b.conchBin, filepath.Join(dir, "conch.db"), append([]string{"--agents", agents}, m.flags...)...)
		if err != nil {
			return err
		}
		defer srv.stop()
		servers[i] = srv
		var health struct{ Sandbox string }
		if err := srv.getJSON(ctx, "/healthz", &health); err != nil {
			return err
		}
		states[i] = health.Sandbox
	}
	ready, answer := make([]dist, len(modes)), make([]dist, len(modes))
	// Each server's first session warms the page cache for Node and Gemini's bundle and
	// is not counted; then the modes take turns, so that the machine's moods fall on both.
	for run := -1; run < b.runs; run++ {
		for i, srv := range servers {
			progress("   gemini %s, run %d", modes[i].name, run+1)
			r, a, err := geminiSession(ctx, srv, filepath.Join(b.tmp, fmt.Sprintf("gemini-%d", i), fmt.Sprintf("work-%d", run+1)))
			if err != nil {
				return fmt.Errorf("gemini %s: %w", modes[i].name, err)
			}
			if run >= 0 {
				ready[i] = append(ready[i], float64(r.Milliseconds()))
				answer[i] = append(answer[i], float64(a.Milliseconds()))
			}
		}
	}
	var rows [][]string
	for i, m := range modes {
		total := make(dist, len(ready[i]))
		for j := range total {
			total[j] = ready[i][j] + answer[i][j]
		}
		rows = append(rows, []string{m.name, "`" + states[i] + "`", ready[i].format(millis), answer[i].format(millis), total.format(millis)})
	}
	rows = append(rows, []string{"sandboxed less unconfined", "", signedMillis(ready[0].median() - ready[1].median()),
		signedMillis(answer[0].median() - answer[1].median()), ""})
	b.r.p("A new session of Gemini CLI 0.61.0 (Node %s) and its first answer, sandboxed and not: two servers, one "+
		"with `--no-sandbox`, each with the profile `gemini` of app/e2e's Gemini tests (offline: `--fake-responses` "+
		"with one scripted text reply, `GEMINI_API_KEY=offline`, its `GEMINI_CLI_HOME` in a directory of its own, "+
		"listed in the profile's `sandbox.write`; Gemini's node_modules and the replies in `sandbox.read`). *Session "+
		"ready* is the `POST /api/v1/tasks/{id}/sessions` request (it answers once the agent has started and taken the "+
		"new session); *first answer* is from the `POST .../messages` of the first prompt until a WebSocket client "+
		"subscribed to the session receives the agent's message with the reply. Each server's first session is a "+
		"warm-up and is not counted; then the two take turns, each session in a directory of its own. The median of "+
		"%d sessions each, and the spread; */healthz sandbox* is what each server says of its agents' confinement.",
		nodeVersion(node), b.runs)
	b.r.table([]string{"Gemini session", "/healthz sandbox", "session ready", "first answer", "both"}, rows)
	return nil
}

func signedMillis(v float64) string { return fmt.Sprintf("%+.0f ms", v) }

func nodeVersion(node string) string {
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		return "of unknown version"
	}
	return strings.TrimSpace(string(out))
}

// geminiProfile writes, under dir, Gemini's home, its scripted reply and an agents file
// with the profile "gemini", as app/e2e's startGeminiServer does, and returns that file.
func geminiProfile(dir, gemini, node string) (string, error) {
	home, replies := filepath.Join(dir, "home"), filepath.Join(dir, "replies")
	settings := filepath.Join(home, ".gemini", "settings.json")
	for _, d := range []string{filepath.Dir(settings), replies} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
	}
	if err := os.WriteFile(settings, []byte(`{"privacy": {"usageStatisticsEnabled": false}}`), 0o644); err != nil {
		return "", err
	}
	// One reply, as --fake-responses reads it; each process of Gemini reads the file from its start.
	reply, err := json.Marshal(map[string]any{"method": "generateContentStream", "response": []any{map[string]any{"candidates": []any{
		map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": geminiAnswer}}},
			"finishReason": "STOP", "index": 0}}}}})
	if err != nil {
		return "", err
	}
	script := filepath.Join(replies, "replies.jsonl")
	if err := os.WriteFile(script, append(reply, '\n'), 0o644); err != nil {
		return "", err
	}
	profiles, err := json.Marshal([]map[string]any{{
		"name": "gemini", "command": node, "permission": "allow",
		// A model named: with "auto" the CLI first asks a router model, a reply the script would need too.
		"args": []string{gemini, "--experimental-acp", "--model", "gemini-2.5-flash", "--fake-responses", script},
		"env":  map[string]string{"GEMINI_API_KEY": "offline", "GEMINI_CLI_HOME": home, "GEMINI_CLI_NO_RELAUNCH": "true"},
		"sandbox": map[string]any{"read": []string{filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(gemini)))), replies},
			"write": []string{home}},
		"no_read_text_file": true,
		"auth_method":       "gemini-api-key",
	}})
	if err != nil {
		return "", err
	}
	agents := filepath.Join(dir, "agents.json")
	return agents, os.WriteFile(agents, profiles, 0o644)
}

// geminiSession creates a task and a Gemini session in cwd, prompts it once and waits for
// the answer; it returns how long the session took to be ready and the answer to come,
// and deletes the task (which ends Gemini).
func geminiSession(ctx context.Context, srv *conch, cwd string) (ready, answer time.Duration, err error) {
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		return 0, 0, err
	}
	var task shared.Task
	if err := srv.post(ctx, "/api/v1/tasks", map[string]string{"title": "gemini " + filepath.Base(cwd)}, &task, http.StatusCreated); err != nil {
		return 0, 0, err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_, _ = srv.do(dctx, http.MethodDelete, "/api/v1/tasks/"+task.ID, nil, http.StatusNoContent)
	}()
	sctx, cancel := context.WithTimeout(ctx, geminiLimit)
	defer cancel()
	began := time.Now()
	var sess shared.Session
	if err := srv.post(sctx, "/api/v1/tasks/"+task.ID+"/sessions", map[string]string{"agent": "gemini", "cwd": cwd},
		&sess, http.StatusCreated); err != nil {
		return 0, 0, err
	}
	ready = time.Since(began)
	if sess.State != shared.SessionReady {
		return 0, 0, fmt.Errorf("the session is %s: %s", sess.State, sess.Error)
	}
	actx, cancel := context.WithTimeout(ctx, geminiLimit)
	defer cancel()
	ws, err := srv.dialWS(actx)
	if err != nil {
		return 0, 0, err
	}
	defer ws.close()
	if _, err := ws.request(actx, shared.ActionSubscribe, shared.SessionRef{SessionID: sess.ID}); err != nil {
		return 0, 0, err
	}
	began = time.Now()
	var prompt shared.Message
	if err := srv.post(actx, "/api/v1/task-sessions/"+sess.ID+"/messages", shared.AddRequest{Content: "Say hello."},
		&prompt, http.StatusAccepted); err != nil {
		return 0, 0, err
	}
	for {
		_, data, err := ws.conn.Read(actx)
		if err != nil {
			return 0, 0, fmt.Errorf("no answer: %w", err)
		}
		var env shared.Envelope
		if err := json.Unmarshal(data, &env); err != nil {
			return 0, 0, err
		}
		if env.Action != shared.ActionMessageAdded && env.Action != shared.ActionMessageUpdated {
			continue
		}
		var m shared.Message
		if err := env.Decode(&m); err != nil {
			return 0, 0, err
		}
		switch {
		case m.AuthorType == shared.AuthorAgent && m.Type == shared.TypeMessage && m.Content == geminiAnswer:
			return ready, time.Since(began), nil
		case m.Type == shared.TypeError:
			return 0, 0, errors.New("the turn failed: " + m.Content)
		}
	}
}
