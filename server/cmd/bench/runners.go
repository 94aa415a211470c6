package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"conch/shared"
)

// runnerPrompts is how many prompts each way (on the server, on a runner) one run sends.
const runnerPrompts = 50

// runnerHeartbeat is how often the step's server pings a runner and how long it waits
// for the answer (serve --runner-heartbeat; 10 s by default): a runner that falls silent
// is dropped 1 to 2 of them later. That is the lease a silent runner's sessions wait out.
const runnerHeartbeat = 2 * time.Second

// runnerLease is the longest a silent runner keeps its sessions.
const runnerLease = 2 * runnerHeartbeat

// Bounds of the runners step's waits: a turn's first output, and a dead runner's session
// answering again (the lease, then an agent's start, with room to spare).
const (
	turnLimit   = 30 * time.Second
	answerLimit = runnerLease + 40*time.Second
	promptEvery = 50 * time.Millisecond
)

// Agent profiles of the runners step: the built-in shell agent, as a separate process,
// once on the server and once on a runner labelled bench; nothing else differs.
const (
	agentHere   = "shell-here"
	agentRunner = "shell-runner"
)

// tickCommand is the turn a runner dies in: a line every 100 ms, for a minute at most.
const tickCommand = "for i in $(seq 600); do echo tick; sleep 0.1; done"

// runnersBench measures issue 38's runners: what a runner on loopback adds to a prompt's
// first output, and how long a session on a runner that dies takes to answer again.
func (b *bench) runnersBench(ctx context.Context) error {
	b.r.h(2, "Runners")
	dir, err := os.MkdirTemp(b.tmp, "runners-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	srv, pool, err := startRunners(ctx, b.conchBin, dir)
	if err != nil {
		return err
	}
	defer srv.stop()
	defer pool.stopAll()
	if err := b.promptToOutput(ctx, srv); err != nil {
		return err
	}
	return b.runnerDeaths(ctx, srv, pool)
}

// startRunners starts a server with the step's two profiles and database in dir, and the
// runners r1 and r2 connected to it; the caller stops both (after an error, nothing is left).
func startRunners(ctx context.Context, conchBin, dir string) (*conch, *runnerPool, error) {
	bin, err := filepath.Abs(conchBin)
	if err != nil {
		return nil, nil, err
	}
	agents := filepath.Join(dir, "agents.json")
	profiles, err := json.Marshal([]map[string]any{
		{"name": agentHere, "command": bin, "args": []string{"agent", "shell"}, "permission": "allow"},
		{"name": agentRunner, "command": bin, "args": []string{"agent", "shell"}, "permission": "allow", "runner_labels": []string{"bench"}},
	})
	if err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(agents, profiles, 0o644); err != nil {
		return nil, nil, err
	}
	srv, err := startConch(ctx, bin, filepath.Join(dir, "conch.db"), "--agents", agents, "--runner-heartbeat", runnerHeartbeat.String())
	if err != nil {
		return nil, nil, err
	}
	pool := &runnerPool{bin: bin, srv: srv, dir: dir, procs: map[string]*conch{}}
	var tok shared.AccessToken
	err = srv.post(ctx, "/api/v1/runners/tokens", shared.NewRunnerToken{Name: "bench"}, &tok, http.StatusCreated)
	pool.token = tok.Token
	for _, name := range []string{"r1", "r2"} {
		if err == nil {
			err = pool.start(ctx, name)
		}
	}
	if err != nil {
		pool.stopAll()
		srv.stop()
		return nil, nil, err
	}
	return srv, pool, nil
}

// promptToOutput times runs x runnerPrompts prompts each way, alternating, from the
// prompt sent to its command's first output on a watching WebSocket.
func (b *bench) promptToOutput(ctx context.Context, srv *conch) error {
	ways := []struct{ name, agent string }{{"on the server", agentHere}, {"on a runner", agentRunner}}
	sessions := make([]shared.Session, len(ways))
	for i, w := range ways {
		sess, err := srv.startSession(ctx, "runners: prompts "+w.name, w.agent, "")
		if err != nil {
			return err
		}
		defer srv.deleteTask(sess.TaskID)
		if (sess.Runner != "") != (w.agent == agentRunner) {
			return fmt.Errorf("a session of %s was placed on %q", w.agent, sess.Runner)
		}
		if sess.Runner != "" {
			ways[i].name = fmt.Sprintf("on a runner (%s, over loopback)", sess.Runner)
		}
		sessions[i] = sess
	}
	ws, err := srv.dialWS(ctx)
	if err != nil {
		return err
	}
	defer ws.close()
	for _, s := range sessions {
		if _, err := ws.request(ctx, shared.ActionSubscribe, shared.SessionRef{SessionID: s.ID}); err != nil {
			return err
		}
	}
	outs := followOutputs(ctx, ws)
	took := make([][]time.Duration, len(ways))
	for n := range b.runs * runnerPrompts {
		for k := range ways {
			i := (n + k) % len(ways) // each way goes first every other time
			command := fmt.Sprintf("echo x%d", n*len(ways)+i)
			began := time.Now()
			if err := srv.addMessage(ctx, sessions[i].ID, command); err != nil {
				return err
			}
			at, err := outs.wait(ctx, command, turnLimit)
			if err != nil {
				return fmt.Errorf("%s, prompt %d: %w", ways[i].name, n+1, err)
			}
			took[i] = append(took[i], at.Sub(began))
			if err := srv.awaitReady(ctx, sessions[i].ID); err != nil {
				return fmt.Errorf("%s, prompt %d: %w", ways[i].name, n+1, err)
			}
		}
	}
	var rows [][]string
	for i, w := range ways {
		var runs []string
		for r := range b.runs {
			runs = append(runs, latency(took[i][r*runnerPrompts:(r+1)*runnerPrompts], 0.5))
		}
		rows = append(rows, []string{w.name, fmt.Sprint(len(took[i])), latency(took[i], 0.5), latency(took[i], 0.9), latency(took[i], 0.99),
			strings.Join(runs, ", ")})
	}
	added := quantile(took[1], 0.5) - quantile(took[0], 0.5)
	b.goals.runnerPromptAdded = fmt.Sprintf("%.2f ms", float64(added)/float64(time.Millisecond))
	b.r.p("A `conch serve` on 127.0.0.1 (SQLite in a temporary folder) and two `conch runner` processes, r1 and r2 "+
		"(label bench, capacity 4, each its own `--dir`), dialling it with a runner token. Two profiles run the built-in "+
		"shell agent (`conch agent shell`, its own process, sandboxed as by default): one on the server, one that "+
		"requires the label bench (placed on the least busy runner, then by name: r1). %d prompts each way (%d per run), alternating, each a command "+
		"`echo xN`: from the prompt's POST to the first notification on a WebSocket subscribed to both sessions whose "+
		"summary counts the command's stdout bytes (the next prompt waits for the session to be ready again). "+
		"Nearest-rank quantiles over all of them, and each run's median. A runner added **%s** at the median (the goal: under 5 ms).",
		b.runs*runnerPrompts, runnerPrompts, b.goals.runnerPromptAdded)
	b.r.table([]string{"prompt to first output", "prompts", "p50", "p90", "p99", "p50, each run"}, rows)
	return nil
}

// runnerDeaths kills the runner of a session mid-turn (kill -9, then SIGSTOP: a network
// cut), b.runs times each, and times each from the signal to the session's next
// command's first output.
func (b *bench) runnerDeaths(ctx context.Context, srv *conch, pool *runnerPool) error {
	ways := []struct {
		name, how string
		sig       syscall.Signal
	}{
		{"kill -9", "its connection closes at once", syscall.SIGKILL},
		{"SIGSTOP", "a network cut: its connection stays open until the heartbeat lapses", syscall.SIGSTOP},
	}
	var starts []time.Duration
	var rows [][]string
	var goal []string
	for _, w := range ways {
		var answered, ended dist // seconds from the signal
		var prompts, where, why []string
		for range b.runs {
			d, err := runnerDeath(ctx, srv, pool, w.sig)
			if err != nil {
				return fmt.Errorf("%s: %w", w.name, err)
			}
			progress("   %s: %s", w.name, d)
			starts = append(starts, d.start)
			prompts = append(prompts, fmt.Sprintf("%d/%d", d.prompts, d.conflicts))
			if d.ended != "" {
				ended = append(ended, d.took.Seconds())
				why = append(why, d.ended)
				continue
			}
			answered = append(answered, d.took.Seconds())
			where = append(where, d.victim+" → "+d.runner)
		}
		endedCell := "-"
		if len(ended) > 0 {
			endedCell = cell(fmt.Sprintf("%d of %d, after %s: %s", len(ended), b.runs, ended.format(seconds), strings.Join(uniq(why), "; ")))
		}
		rows = append(rows, []string{w.name + " (" + w.how + ")", fmt.Sprintf("%s (%d of %d)", answered.format(seconds), len(answered), b.runs),
			endedCell, strings.Join(prompts, ", "), orNA(len(where) > 0, strings.Join(uniq(where), ", "), "-")})
		goal = append(goal, w.name+" "+orNA(len(answered) > 0, answered.format(seconds), "never answered (the session ended after "+ended.format(seconds)+")"))
	}
	start := quantile(starts, 0.5)
	b.goals.runnerDeath = fmt.Sprintf("%s, against %s + %s", strings.Join(goal, ", "), runnerLease, start.Round(time.Millisecond))
	b.r.p("A runner dies mid-turn: a session of the runner profile, placed on r1 (the least busy, then by name), runs "+
		"`%s`; once its first line has reached the WebSocket, r1's process gets the signal, and the session is prompted "+
		"`echo back` at once. The server queues a prompt that comes during a turn (202), so that one is usually taken; "+
		"it is sent again every %s while the server refuses it (409) and whenever the session stays ready for %d of "+
		"those ticks without running it (a turn queued on the dead runner may go with it). The time runs from the "+
		"signal to `echo back`'s first output on the WebSocket, its agent started (or resumed) on r2. The server pings "+
		"a runner every %s and drops one that has not answered within %s (`serve --runner-heartbeat %s` here; 10 s by "+
		"default), so a runner that falls silent keeps its sessions for up to %s, the lease. r1 is new each time (started "+
		"again after each death), so it is signalled about a second after it connected, and the first ping, %s after "+
		"the connection, lapses %s later: SIGSTOP's figure is near the whole lease. The goal: under the lease "+
		"plus the agent's start; a new session on a runner (its task, then the session ready) took %s at the median "+
		"here. Each wait is bounded (%s after the signal); a session that ends (`failed`) instead of answering again "+
		"is reported so. Afterwards r1 and what it started are killed, r1 started again and the session's task deleted.",
		tickCommand, promptEvery, idleTicks, runnerHeartbeat, runnerHeartbeat, runnerHeartbeat, runnerLease, runnerHeartbeat, runnerHeartbeat,
		start.Round(time.Millisecond), answerLimit)
	b.r.table([]string{"r1 dies by", "to answering again", "ended instead", "prompts taken/refused, each run", "moved"}, rows)
	return nil
}

// uniq is s without repeats, in order.
func uniq(s []string) []string {
	var out []string
	for _, v := range s {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// death is one runner's death, as runnerDeath saw it.
type death struct {
	start     time.Duration // the session's creation, its task included
	victim    string        // the runner the session was placed on
	took      time.Duration // from the signal to the next command's first output, or to the session seen ended
	runner    string        // the runner it answered on
	prompts   int           // prompts taken (202) in between
	conflicts int           // prompts refused (409) in between
	ended     string        // the session's end, when it ended instead of answering again
}

// runnerDeath places a session on a runner, signals that runner mid-turn and times the
// session's next command's first output; the runner is started again afterwards.
func runnerDeath(ctx context.Context, srv *conch, pool *runnerPool, sig syscall.Signal) (d death, err error) {
	began := time.Now()
	sess, err := srv.startSession(ctx, "runners: a death", agentRunner, "")
	if err != nil {
		return d, err
	}
	d.start = time.Since(began)
	defer srv.deleteTask(sess.TaskID)
	d.victim = sess.Runner
	if pool.procs[d.victim] == nil {
		return d, fmt.Errorf("the session was placed on %q, not on a runner of the bench's", d.victim)
	}
	ws, err := srv.dialWS(ctx)
	if err != nil {
		return d, err
	}
	defer ws.close()
	if _, err := ws.request(ctx, shared.ActionSubscribe, shared.SessionRef{SessionID: sess.ID}); err != nil {
		return d, err
	}
	outs := followOutputs(ctx, ws)
	if err := srv.addMessage(ctx, sess.ID, tickCommand); err != nil {
		return d, err
	}
	if _, err := outs.wait(ctx, tickCommand, turnLimit); err != nil {
		return d, err
	}
	victim := pool.procs[d.victim]
	if err := syscall.Kill(victim.PID, sig); err != nil {
		return d, err
	}
	killed := time.Now()
	defer func() { err = errors.Join(err, pool.restart(ctx, d.victim)) }()
	a, err := srv.answerAgain(ctx, sess.ID, "echo back", outs, killed.Add(answerLimit))
	d.prompts, d.conflicts, d.ended = a.prompts, a.conflicts, a.ended
	if err != nil {
		return d, err
	}
	d.took = a.at.Sub(killed)
	if a.ended != "" {
		return d, nil
	}
	var now shared.Session
	if err := srv.getJSON(ctx, "/api/v1/task-sessions/"+sess.ID, &now); err != nil {
		return d, err
	}
	d.runner = now.Runner
	return d, nil
}

func (d death) String() string {
	what := "answered again on " + d.runner
	if d.ended != "" {
		what = "ended " + d.ended
	}
	return fmt.Sprintf("the session on %s %s after %s (%d prompts taken, %d refused)", d.victim, what, d.took.Round(time.Millisecond), d.prompts, d.conflicts)
}

// idleTicks is how many ticks in a row a session must stay ready, its prompt taken but
// not run, before answerAgain prompts it again.
const idleTicks = 3

// answer is how a session came to answer again.
type answer struct {
	at        time.Time // the first output of the command, or when the session was seen ended
	prompts   int       // prompts taken (202)
	conflicts int       // prompts refused (409)
	ended     string    // how the session ended, when it ended instead
}

// answerAgain prompts the session command until that command's first output reaches
// outs. It prompts at once, then every promptEvery while the server refuses (409), and
// again when the session stays ready for idleTicks ticks without running the prompt it
// took (a turn queued on a dead runner may go with it). It stops early, saying how, when
// the session ends, and at deadline.
func (c *conch) answerAgain(ctx context.Context, sessionID, command string, outs *firstOutputs, deadline time.Time) (answer, error) {
	var a answer
	body, err := json.Marshal(shared.AddRequest{Content: command})
	if err != nil {
		return a, err
	}
	tick := time.NewTicker(promptEvery)
	defer tick.Stop()
	send, idle := true, 0
	for {
		if send {
			status, raw, err := c.try(ctx, http.MethodPost, "/api/v1/task-sessions/"+sessionID+"/messages", body)
			switch {
			case err != nil:
				return a, err
			case status == http.StatusAccepted:
				a.prompts++
				send, idle = false, 0
			case status == http.StatusConflict:
				a.conflicts++
			default:
				return a, fmt.Errorf("a prompt after the runner's death: %d: %s", status, raw)
			}
		}
		at, ok, err := outs.seen(command)
		if ok || err != nil {
			a.at = at
			return a, err
		}
		var sess shared.Session
		if err := c.getJSON(ctx, "/api/v1/task-sessions/"+sessionID, &sess); err != nil {
			return a, err
		}
		switch {
		case sess.State.Ended():
			a.at, a.ended = time.Now(), fmt.Sprintf("%s (%s)", sess.State, sess.Error)
			return a, nil
		case sess.State == shared.SessionReady && !send:
			idle++
			send = idle >= idleTicks
		default:
			idle = 0
		}
		if time.Now().After(deadline) {
			return a, fmt.Errorf("no output of %q within %s of the death (the session is %s, on %q)", command, answerLimit, sess.State, sess.Runner)
		}
		select {
		case <-ctx.Done():
			return a, ctx.Err()
		case <-tick.C:
		}
	}
}

// addMessage sends the session a prompt, which must be taken (202).
func (c *conch) addMessage(ctx context.Context, sessionID, content string) error {
	var msg shared.Message
	return c.post(ctx, "/api/v1/task-sessions/"+sessionID+"/messages", shared.AddRequest{Content: content}, &msg, http.StatusAccepted)
}

// awaitReady waits, turnLimit at most, until the session's turn has ended.
func (c *conch) awaitReady(ctx context.Context, sessionID string) error {
	err := pollUntil(ctx, 10*time.Millisecond, turnLimit, func(ctx context.Context) (bool, error) {
		var sess shared.Session
		if err := c.getJSON(ctx, "/api/v1/task-sessions/"+sessionID, &sess); err != nil {
			return false, err
		}
		if sess.State.Ended() {
			return false, fmt.Errorf("the session ended %s: %s", sess.State, sess.Error)
		}
		return sess.State == shared.SessionReady, nil
	})
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("the turn did not end within %s", turnLimit)
	}
	return err
}

// pollUntil asks done every so often until it says yes or fails, for limit at most
// (then it answers context.DeadlineExceeded).
func pollUntil(ctx context.Context, every, limit time.Duration, done func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if ok, err := done(ctx); ok || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// deleteTask removes a task of the bench's, and so frees its runner's room; it runs
// deferred, so it has a context of its own.
func (c *conch) deleteTask(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), aliveTimeout)
	defer cancel()
	if _, err := c.do(ctx, http.MethodDelete, "/api/v1/tasks/"+id, nil, http.StatusNoContent); err != nil {
		progress("   %v", err)
	}
}

// firstOutputs follows a WebSocket subscribed to sessions and notes when each shell
// command's first output reached it: the first notification whose summary counts stdout
// bytes of that command line.
type firstOutputs struct {
	mu      sync.Mutex
	at      map[string]time.Time
	err     error
	changed chan struct{}
}

// followOutputs reads ws in the background until it is closed or ctx is done.
func followOutputs(ctx context.Context, ws *wsClient) *firstOutputs {
	f := &firstOutputs{at: map[string]time.Time{}, changed: make(chan struct{}, 1)}
	go func() {
		for {
			_, data, err := ws.conn.Read(ctx)
			at := time.Now()
			var env shared.Envelope
			if err == nil {
				err = json.Unmarshal(data, &env)
			}
			var m shared.Message
			if err == nil && (env.Action == shared.ActionMessageAdded || env.Action == shared.ActionMessageUpdated) {
				err = env.Decode(&m)
			}
			f.mu.Lock()
			if se := shared.ShellOf(m); se != nil && se.Output.StdoutBytes > 0 {
				if _, ok := f.at[se.Command]; !ok {
					f.at[se.Command] = at
				}
			}
			f.err = err
			f.mu.Unlock()
			select {
			case f.changed <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	return f
}

// seen says whether command's first output has arrived, and when.
func (f *firstOutputs) seen(command string) (time.Time, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	at, ok := f.at[command]
	if !ok && f.err != nil {
		return at, false, fmt.Errorf("waiting for the output of %q: %w", command, f.err)
	}
	return at, ok, nil
}

// wait returns when command's first output arrived, waiting limit at most.
func (f *firstOutputs) wait(ctx context.Context, command string, limit time.Duration) (time.Time, error) {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for {
		if at, ok, err := f.seen(command); ok || err != nil {
			return at, err
		}
		select {
		case <-f.changed:
		case <-timer.C:
			return time.Time{}, fmt.Errorf("no output of %q within %s", command, limit)
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
}

// runnerPool is the step's `conch runner` processes, by name, each with its own folder.
type runnerPool struct {
	bin, token, dir string
	srv             *conch
	procs           map[string]*conch
}

// start starts the runner name and waits until the server lists it as connected.
func (p *runnerPool) start(ctx context.Context, name string) error {
	cmd := exec.Command(p.bin, "runner", "--server", p.srv.URL, "--name", name, "--labels", "bench", "--capacity", "4",
		"--dir", filepath.Join(p.dir, name))
	cmd.Env = append(os.Environ(), "CONCH_RUNNER_TOKEN="+p.token, "CONCH_RUNNER_TOKEN_FILE=", "GOTRACEBACK=none")
	r, err := launch(cmd)
	if err != nil {
		return err
	}
	p.procs[name] = r
	err = pollUntil(ctx, 20*time.Millisecond, turnLimit, func(ctx context.Context) (bool, error) {
		select {
		case <-r.exited:
			return false, errors.New("it exited")
		default:
		}
		var l shared.RunnerList
		if err := p.srv.getJSON(ctx, "/api/v1/runners", &l); err != nil {
			return false, err
		}
		return slices.ContainsFunc(l.Runners, func(got shared.Runner) bool { return got.Name == name && got.Connected }), nil
	})
	if err != nil {
		return fmt.Errorf("runner %s was not connected within %s: %w: %s", name, turnLimit, err, r.stderr)
	}
	return nil
}

// kill ends the runner name and what it started, whatever state it is in (SIGKILL ends
// a stopped process too).
func (p *runnerPool) kill(name string) {
	r := p.procs[name]
	_ = syscall.Kill(-r.PID, syscall.SIGKILL)
	<-r.exited
}

// restart kills the runner name and starts it again.
func (p *runnerPool) restart(ctx context.Context, name string) error {
	p.kill(name)
	if err := p.start(ctx, name); err != nil {
		return errors.Join(fmt.Errorf("runner %s did not start again", name), err)
	}
	return nil
}

func (p *runnerPool) stopAll() {
	for name := range p.procs {
		p.kill(name)
	}
}
