package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"conch/app/cli"
	"conch/app/client"
	"conch/server/waittest"
	"conch/shared"
)

// conch runs the CLI in process against server and returns its streams and error.
func conch(t *testing.T, server string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errs bytes.Buffer
	args = append([]string{args[0], "--server", server}, args[1:]...)
	err = run(context.Background(), args, nil, &out, &errs)
	return out.String(), errs.String(), err
}

// The CLI against a real server, its shell agent and real commands: run prints the
// command's own streams apart from the chatter and ends with the command's status; output
// gives the stored bytes back exactly; tasks lists what run created.
func TestCLI(t *testing.T) {
	// A relative --db: sessions' directories beside it must still work for the agent.
	t.Chdir(t.TempDir())
	base, stop := startServer(t, "conch.db")
	defer stop()

	stdout, stderr, err := conch(t, base, "run", "--", "sh", "-c", "echo out; echo err >&2; exit 7")
	if !errors.Is(err, cli.ExitStatus(7)) {
		t.Fatalf("run ended with %v, want exit status 7\nstderr:\n%s", err, stderr)
	}
	if stdout != "out\n" {
		t.Errorf("stdout %q, want only the command's stdout", stdout)
	}
	for _, want := range []string{`$ sh -c 'echo out; echo err >&2; exit 7'`, "err\n", "✗ exit 7"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	session := regexp.MustCompile(`session (\S+)`).FindStringSubmatch(stderr)
	if session == nil {
		t.Fatalf("run did not name its session:\n%s", stderr)
	}

	// A whole shell line as one word, with bytes that are not text.
	stdout, stderr, err = conch(t, base, "run", "--", `printf 'a\tb\n'; printf 'x%.0s' $(seq 3)`)
	if err != nil || stdout != "a\tb\nxxx" {
		t.Fatalf("run: %v, stdout %q\n%s", err, stdout, stderr)
	}

	tasks, _, err := conch(t, base, "tasks")
	if err != nil || !strings.Contains(tasks, session[1]) || !strings.Contains(tasks, "shell") {
		t.Fatalf("tasks: %v\n%s", err, tasks)
	}

	// conch output needs the message id: the history shown by tail names it.
	_, history, err := tailOnce(t, base, session[1])
	if err != nil {
		t.Fatal(err)
	}
	id := regexp.MustCompile(`conch output (\S+)\)`).FindStringSubmatch(history)
	if id == nil {
		t.Fatalf("tail's history does not say how to fetch the output:\n%s", history)
	}
	for _, c := range []struct {
		args           []string
		stdout, stderr string
	}{
		{[]string{"output", id[1]}, "out\n", "err\n"},
		{[]string{"output", "--stream", "stdout", id[1]}, "out\n", ""},
		{[]string{"output", "--stream", "stderr", id[1]}, "", "err\n"},
	} {
		out, errs, err := conch(t, base, c.args...)
		if err != nil || out != c.stdout || errs != c.stderr {
			t.Errorf("%v: %v, stdout %q, stderr %q; want %q, %q", c.args, err, out, errs, c.stdout, c.stderr)
		}
	}
	if _, _, err := conch(t, base, "output", "no-such-message"); err == nil || !strings.Contains(err.Error(), "message not found") {
		t.Errorf("output of an unknown id: %v", err)
	}
	if _, _, err := conch(t, base, "output", "--stream", "both", id[1]); err == nil {
		t.Error("output took an unknown stream")
	}

	// The exact bytes of an output at the bound: 262,144 bytes, lines of all sorts of text.
	const big = `for i in $(seq 1 4096); do printf 'línea %05d · 0123456789abcdef 0123456789 ✓ [\t] %040d\n' $i $i; done | head -c 262144`
	want, err := exec.Command("sh", "-c", big).Output()
	if err != nil || len(want) != 262144 {
		t.Fatalf("the reference output: %d bytes, %v", len(want), err)
	}
	if stdout, stderr, err = conch(t, base, "run", "--", big); err != nil || stdout != string(want) {
		t.Fatalf("run streamed %d bytes (%v), want the %d the command wrote\n%s", len(stdout), err, len(want), stderr)
	}
	bigID := regexp.MustCompile(`session (\S+)`).FindStringSubmatch(stderr)[1]
	page, err := client.New(base).ListMessages(context.Background(), shared.ListRequest{SessionID: bigID})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range page.Messages {
		if shared.ShellOf(m) == nil {
			continue
		}
		if out, _, err := conch(t, base, "output", "--stream", "stdout", m.ID); err != nil || out != string(want) {
			t.Fatalf("output gave %d bytes (%v), want the %d stored", len(out), err, len(want))
		}
	}

	// The binary itself exits with the command's status.
	if bin := os.Getenv("CONCH_BIN"); bin != "" {
		err := exec.Command(bin, "run", "--server", base, "--", "exit 7").Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 7 {
			t.Errorf("bin/conch run -- 'exit 7' ended with %v, want exit status 7", err)
		}
	}
}

// tailOnce runs tail until it has shown the session's history, then stops it.
func tailOnce(t *testing.T, server, sessionID string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errs syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"tail", "--server", server, sessionID}, nil, &out, &errs) }()
	waittest.Until(t, func() bool { return strings.Contains(errs.String(), "✗ exit 7") })
	cancel()
	err := <-done
	return out.String(), errs.String(), err
}

// shellSession starts the shell agent on a new task.
func shellSession(t *testing.T, api *client.Client) shared.Session {
	t.Helper()
	task, err := api.CreateTask(context.Background(), t.Name(), "")
	if err != nil {
		t.Fatal(err)
	}
	sess, err := api.StartSession(context.Background(), task.ID, "shell", "")
	if err != nil {
		t.Fatal(err)
	}
	return sess
}

// syncBuffer is a bytes.Buffer safe to read while another goroutine writes it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// tail shows what another client does in the session, as it happens.
func TestCLITailSeesOtherClients(t *testing.T) {
	base, stop := startServer(t, filepath.Join(t.TempDir(), "conch.db"))
	defer stop()
	ctx := context.Background()
	api := client.New(base)
	sess := shellSession(t, api)
	tctx, cancel := context.WithCancel(ctx)
	var out, errs syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(tctx, []string{"tail", "--server", base, sess.ID}, nil, &out, &errs) }()
	waittest.Until(t, func() bool { return strings.Contains(errs.String(), "following live") })
	if _, err := api.SendMessage(ctx, sess.ID, "echo from another client", ""); err != nil {
		t.Fatal(err)
	}
	waittest.Until(t, func() bool {
		return strings.Contains(errs.String(), "✓ exit 0") && strings.Contains(out.String(), "from another client\n")
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("tail ended with %v", err)
	}
	if !strings.Contains(errs.String(), "› echo from another client") || !strings.Contains(errs.String(), "$ echo from another client") {
		t.Errorf("tail did not show the prompt and the command:\n%s", errs.String())
	}
}

// A wrong token is said plainly, and the process ends non-zero. The server then slows
// that address down, which is said plainly too.
func TestCLIWrongToken(t *testing.T) {
	base, stop := startServer(t, filepath.Join(t.TempDir(), "conch.db"), "--token", "the-right-token-of-32-characters")
	defer stop()
	clear := regexp.MustCompile(`missing or wrong token|Too many wrong tokens from your address: try again in \d+ s`)
	for i, args := range [][]string{{"tasks"}, {"run", "--", "true"}, {"tail", "some-session"}, {"output", "some-message"}} {
		_, _, err := conch(t, base, append([]string{args[0], "--token", "wrong"}, args[1:]...)...)
		if err == nil || !clear.MatchString(err.Error()) || i == 0 && !strings.Contains(err.Error(), "missing or wrong token") {
			t.Errorf("%v with a wrong token: %v", args, err)
		}
	}
	if bin := os.Getenv("CONCH_BIN"); bin != "" {
		out, err := exec.Command(bin, "tasks", "--server", base, "--token", "wrong").CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || !clear.Match(out) {
			t.Errorf("bin/conch tasks with a wrong token: %v\n%s", err, out)
		}
	}
}

// --json prints one JSON object per line in the API's own shapes: tasks as GET
// /api/v1/tasks lists them, byte for byte; run's and tail's messages as the list gives
// them (run still ends with the command's status); output's snapshot as GET .../shell-output.
func TestCLIJSON(t *testing.T) {
	base, stop := startServer(t, filepath.Join(t.TempDir(), "conch.db"))
	defer stop()
	lines := func(what, out string) []string {
		t.Helper()
		ls := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		for _, l := range ls {
			if !json.Valid([]byte(l)) || !strings.HasPrefix(l, "{") {
				t.Fatalf("%s: a line that is not one JSON object: %q", what, l)
			}
		}
		return ls
	}

	stdout, stderr, err := conch(t, base, "run", "--json", "--", "echo out; exit 7")
	if !errors.Is(err, cli.ExitStatus(7)) {
		t.Fatalf("run --json ended with %v, want exit status 7\nstderr:\n%s", err, stderr)
	}
	last := map[string]shared.Message{} // by id: the newest line wins
	var order []string
	for _, l := range lines("run --json", stdout) {
		var m shared.Message
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		if _, ok := last[m.ID]; !ok {
			order = append(order, m.ID)
		}
		last[m.ID] = m
	}
	page, err := client.New(base).ListMessages(context.Background(), shared.ListRequest{SessionID: last[order[0]].SessionID})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Messages) != len(order) {
		t.Fatalf("run --json printed %d messages, the session holds %d", len(order), len(page.Messages))
	}
	var command shared.Message
	for i, m := range page.Messages {
		want, _ := json.Marshal(m)
		got, _ := json.Marshal(last[order[i]])
		if string(got) != string(want) {
			t.Errorf("message %d printed as\n%s\nlisted as\n%s", i, got, want)
		}
		if shared.ShellOf(m) != nil {
			command = m
		}
	}
	if sh := shared.ShellOf(command); sh == nil || sh.Output.ExitCode == nil || *sh.Output.ExitCode != 7 {
		t.Fatalf("no command with exit code 7 among %d messages", len(page.Messages))
	}

	stdout, _, err = conch(t, base, "tasks", "--json")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(base + "/api/v1/tasks")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var listed struct {
		Tasks []json.RawMessage `json:"tasks"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&listed); err != nil {
		t.Fatal(err)
	}
	got := lines("tasks --json", stdout)
	if len(got) != len(listed.Tasks) || got[0] != string(listed.Tasks[0]) {
		t.Errorf("tasks --json:\n%s\nGET /api/v1/tasks:\n%s", stdout, listed.Tasks)
	}

	stdout, _, err = conch(t, base, "output", "--json", command.ID)
	var snap shared.ShellOutputSnapshot
	if err != nil || len(lines("output --json", stdout)) != 1 || json.Unmarshal([]byte(stdout), &snap) != nil ||
		snap.MessageID != command.ID || snap.Output.Stdout != "out\n" || snap.Output.ExitCode == nil {
		t.Errorf("output --json: %v\n%s", err, stdout)
	}
	if _, _, err := conch(t, base, "output", "--json", "--stream", "stdout", command.ID); err == nil {
		t.Error("output took --json with --stream")
	}

	ctx, cancel := context.WithCancel(context.Background())
	var out, errs syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"tail", "--json", "--server", base, command.SessionID}, nil, &out, &errs)
	}()
	waittest.Until(t, func() bool { return strings.Contains(errs.String(), "following live") })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("tail --json ended with %v", err)
	}
	if n := len(lines("tail --json", out.String())); n != len(page.Messages) {
		t.Errorf("tail --json printed %d lines for %d messages:\n%s", n, len(page.Messages), out.String())
	}
}
