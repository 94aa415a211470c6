package acp

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"conch/server/waittest"
	"conch/shared"
)

// watch reads a view's output until it holds want, with a deadline.
func watch(t *testing.T, v *ConsoleView, screen *bytes.Buffer, want string) []shared.TerminalEvent {
	t.Helper()
	var events []shared.TerminalEvent
	deadline := time.After(waittest.Limit(t))
	for !strings.Contains(screen.String(), want) {
		select {
		case <-v.Ready():
		case <-deadline:
			t.Fatalf("waiting for %q; the terminal shows %q", want, screen.String())
		}
		for _, e := range v.Take() {
			if e.Type == shared.TerminalOutput {
				screen.Write(e.Output)
				continue
			}
			events = append(events, e)
			if e.Type == shared.TerminalEnd {
				t.Fatalf("the terminal ended (%s) before showing %q: %q", e.Reason, want, screen.String())
			}
		}
	}
	return events
}

// prompt is what bash's \$ prints after the directory in the console's prompt.
func prompt() string {
	if os.Geteuid() == 0 {
		return " # "
	}
	return " $ "
}

// openConsole starts a shell session and opens its terminal as ada, an editor; it returns
// once the prompt shows (drawn from the screen, or as the shell prints it), with what the
// view showed and said until then.
func openConsole(t *testing.T) (*testEnv, shared.Session, *ConsoleView, *bytes.Buffer, []shared.TerminalEvent) {
	t.Helper()
	env := newEnv(t, shellProcess(t), true)
	sess := env.start(t, ShellAgent)
	ed, err := env.m.Console(sess.ID, "ada", true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ed.Close)
	var screen bytes.Buffer
	events := watch(t, ed, &screen, strings.TrimSpace(prompt()))
	return env, sess, ed, &screen, events
}

// A person's terminal: bash in the session's directory and sandbox; each command line
// becomes a stored command of the session with its exit code and output, typed by whom;
// a watcher sees it and cannot type until it takes over.
func TestConsole(t *testing.T) {
	t.Parallel()
	env, sess, ed, screen, events := openConsole(t)
	if len(events) < 2 || events[0].Type != shared.TerminalSize || !reflect.DeepEqual(events[1], shared.TerminalEvent{Type: shared.TerminalWriter, Writer: "ada", Editing: true, MayEdit: true}) {
		t.Errorf("first events %+v", events)
	}
	viewer, err := env.m.Console(sess.ID, "bob", false)
	if err != nil {
		t.Fatal(err)
	}
	defer viewer.Close()
	if err := viewer.Input([]byte("echo no\r")); shared.ErrorCode(err) != shared.CodeForbidden {
		t.Errorf("a viewer types: %v", err)
	}
	if err := viewer.TakeOver(); shared.ErrorCode(err) != shared.CodeForbidden {
		t.Errorf("a viewer takes over: %v", err)
	}

	if err := ed.Input([]byte("echo hi > here.txt; cat here.txt; pwd\r")); err != nil {
		t.Fatal(err)
	}
	watch(t, ed, screen, sess.Cwd+"\r\n\x1b]133;D;0\a") // the next prompt: no type-ahead in the output
	var seen bytes.Buffer
	watch(t, viewer, &seen, sess.Cwd+"\r\n")
	if err := ed.Input([]byte("cat " + filepath.Join(env.dir, "conch.db") + "\r")); err != nil {
		t.Fatal(err)
	}
	watch(t, ed, screen, "Permission denied")

	var cmds []shared.Message
	waitFor(t, env.ev, "two commands stored, ended", func() bool {
		cmds = cmds[:0]
		for _, m := range env.messages(t, sess.ID) {
			if m.Type == shared.TypeToolExecute && m.AuthorType == shared.AuthorUser && m.Metadata.Status.IsTerminal() {
				cmds = append(cmds, m)
			}
		}
		return len(cmds) == 2
	})
	first, out := env.tool(t, sess.ID, cmds[0].Metadata.ToolCallID)
	if se := shared.ShellOf(first); se.Command != "echo hi > here.txt; cat here.txt; pwd" || se.WorkDir != sess.Cwd ||
		first.Metadata.Status != shared.StatusCompleted || first.Metadata.Author != "ada" {
		t.Errorf("first command %+v %+v", first.Metadata, se)
	}
	if out.Stdout != "hi\r\n"+sess.Cwd+"\r\n" || out.ExitCode == nil || *out.ExitCode != 0 || out.StartedAt == nil || out.FinishedAt == nil {
		t.Errorf("first output %q exit %v", out.Stdout, out.ExitCode)
	}
	second, out := env.tool(t, sess.ID, cmds[1].Metadata.ToolCallID)
	if second.Metadata.Status != shared.StatusFailed || out.ExitCode == nil || *out.ExitCode != 1 || !strings.Contains(out.Stdout, "Permission denied") {
		t.Errorf("the database: %s, exit %v, %q", second.Metadata.Status, out.ExitCode, out.Stdout)
	}

	// A running command's output is stored as it grows, at most once per flush interval.
	if err := ed.Input([]byte("echo early; sleep 1.2; echo late; read x\r")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, env.ev, "the output so far, stored while it runs", func() bool {
		for _, m := range env.messages(t, sess.ID) {
			if se := shared.ShellOf(m); se != nil && strings.HasPrefix(se.Command, "echo early") {
				return m.Metadata.Status == shared.StatusRunning && se.Output.StdoutBytes == len("early\r\nlate\r\n")
			}
		}
		return false
	})
	if err := ed.Input([]byte("\r")); err != nil {
		t.Fatal(err)
	}
	watch(t, ed, screen, "late\r\n\r\n\x1b]133;D;0\a")

	// A second editor takes the keyboard over; the first is told and can no longer type.
	other, err := env.m.Console(sess.ID, "cy", true)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.TakeOver(); err != nil {
		t.Fatal(err)
	}
	if err := ed.Input([]byte("true\r")); shared.ErrorCode(err) != shared.CodeForbidden {
		t.Errorf("the first editor types after the takeover: %v", err)
	}
	found := false
	for _, e := range ed.Take() {
		found = found || e.Type == shared.TerminalWriter && e.Writer == "cy" && !e.Editing && e.MayEdit
	}
	if !found {
		t.Error("the first editor was not told of the takeover")
	}

	// The terminal ends with the session's agent.
	if _, err := env.m.StopAgent(t.Context(), sess.ID); err != nil {
		t.Fatal(err)
	}
	ended := false
	for _, e := range other.Take() {
		ended = ended || e.Type == shared.TerminalEnd
	}
	if !ended {
		t.Error("the terminal did not end with the agent")
	}
}

// A watcher that joins while a command runs, after its output scrolled, changed colours
// and moved the cursor, is drawn the screen and then what follows: it shows the same
// screen as the watcher that saw every byte, each prompt once.
func TestConsoleRedraw(t *testing.T) {
	t.Parallel()
	env, sess, ed, all, _ := openConsole(t)
	if err := ed.Input([]byte(`for i in $(seq 1 40); do printf '\e[3%dmline %d\e[m\n' $((i%8)) $i; done; printf '\e[3;5H\e[1mat-%d\e[m\e[24;1H' $((6*7)); read x; echo got $x` + "\r")); err != nil {
		t.Fatal(err)
	}
	watch(t, ed, all, "at-42")
	// The writer's terminal narrows while the command waits: what came before was written
	// at 80 columns (the command line wraps), which a replay at 50 would wrap again.
	want := newScreenModel(80, 24)
	defer want.close()
	want.write(all.Bytes())
	if err := ed.Resize(50, 24); err != nil {
		t.Fatal(err)
	}
	want.resize(50, 24)
	all.Reset()

	late, err := env.m.Console(sess.ID, "bob", false)
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	var seen bytes.Buffer
	events := watch(t, late, &seen, "at-42")
	if !bytes.HasPrefix(seen.Bytes(), []byte("\x1bc")) {
		t.Errorf("the late watcher was not drawn the screen: %q", seen.String())
	}
	sized := false
	for _, e := range events {
		sized = sized || e.Type == shared.TerminalSize && e.Cols == 50 && e.Rows == 24
	}
	if !sized {
		t.Errorf("the late watcher was not told the size: %+v", events)
	}
	if err := ed.Input([]byte("go on\r")); err != nil {
		t.Fatal(err)
	}
	next := "got go on\r\n\x1b]133;D;0\a\x1b[?2004h\x1b]133;A\a" + sess.Cwd + prompt() + "\x1b]133;B\a"
	watch(t, ed, all, next)
	watch(t, late, &seen, next)
	got := newScreenModel(50, 24)
	defer got.close()
	want.write(all.Bytes())
	got.write(seen.Bytes())
	sameScreen(t, got, want)
}
