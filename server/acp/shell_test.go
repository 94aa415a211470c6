package acp

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"conch/server/shellagent"
	"conch/shared"
)

// shellInProcess runs the built-in shell agent in this process, joined by io.Pipe; its
// commands are real processes.
var shellInProcess = pipeLauncher(shellagent.Run)

// shellProcess runs the built-in shell agent as a real process: this test binary.
func shellProcess(t testing.TB) Launcher {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return testAgent(exe, "shell")
}

// lastShell is the newest tool_execute message of the session with its full output.
func lastShell(t testing.TB, env *testEnv, sessionID string) (shared.Message, shared.ShellOutput) {
	t.Helper()
	msgs := env.messages(t, sessionID)
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Type == shared.TypeToolExecute {
			return env.tool(t, sessionID, msgs[i].Metadata.ToolCallID)
		}
	}
	t.Fatal("no shell command stored")
	return shared.Message{}, shared.ShellOutput{}
}

func TestShellAgentEndToEnd(t *testing.T) {
	t.Parallel()
	for name, launch := range map[string]Launcher{"in process": shellInProcess, "real process": shellProcess(t)} {
		t.Run(name, func(t *testing.T) {
			env := newEnv(t, launch, false)
			sess := env.start(t, ShellAgent)
			if err := os.WriteFile(sess.Cwd+"/here.txt", nil, 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := `ls; printf 'é\n' >&2; exit 3`
			env.prompt(t, sess.ID, cmd)

			m, out := lastShell(t, env, sess.ID)
			se := shared.ShellOf(m)
			if se.Command != cmd || se.WorkDir != sess.Cwd || m.Metadata.Status != shared.StatusFailed || m.Metadata.Kind != "execute" {
				t.Errorf("command %q in %q, %s (%s)", se.Command, se.WorkDir, m.Metadata.Status, m.Metadata.Kind)
			}
			if out.Stdout != "here.txt\n" || out.Stderr != "é\n" || out.ExitCode == nil || *out.ExitCode != 3 || out.Truncated {
				t.Errorf("output %+v", out)
			}
			if se.Output.StdoutBytes != 9 || se.Output.StderrBytes != 3 || !se.Output.HasOutput {
				t.Errorf("summary %+v", se.Output)
			}
			msgs := env.messages(t, sess.ID)
			last := msgs[len(msgs)-1]
			if last.Type != shared.TypeMessage || last.Content != "exit 3" {
				t.Errorf("closing message %s %q", last.Type, last.Content)
			}

			// The next prompt runs in the same directory, after the first.
			env.prompt(t, sess.ID, "echo again")
			m, out = lastShell(t, env, sess.ID)
			if m.Metadata.Status != shared.StatusCompleted || out.Stdout != "again\n" || *out.ExitCode != 0 {
				t.Errorf("second command: %s %+v", m.Metadata.Status, out)
			}
			if got := strings.Join(statesOf(env.ev.states(sess.ID)), ","); got != "starting,ready,running,ready,running,ready" {
				t.Errorf("states %s", got)
			}
			assertEventsMatchStore(t, env, sess.ID)
		})
	}
}

// A killed command reports its signal, with no exit code.
func TestShellAgentSignal(t *testing.T) {
	t.Parallel()
	env := newEnv(t, shellInProcess, false)
	sess := env.start(t, ShellAgent)
	env.prompt(t, sess.ID, "echo bye; kill -TERM $$")
	m, out := lastShell(t, env, sess.ID)
	if m.Metadata.Status != shared.StatusFailed || out.ExitCode != nil || out.Signal != "SIGTERM" || out.Stdout != "bye\n" {
		t.Errorf("%s %+v", m.Metadata.Status, out)
	}
	msgs := env.messages(t, sess.ID)
	if last := msgs[len(msgs)-1]; !strings.HasPrefix(last.Content, "killed by SIGTERM") {
		t.Errorf("closing message %q", last.Content)
	}
}

// Cancel stops the running command (and its children) with SIGINT first, the tool call
// ends cancelled with the output it had and the signal, the agent says how it ended, and
// the session is ready for the next prompt.
func TestShellAgentCancel(t *testing.T) {
	t.Parallel()
	env := newEnv(t, shellInProcess, true)
	sess := env.start(t, ShellAgent)
	env.promptAsync(t, sess.ID, "printf 'started '; "+hostPID+"; sleep 300 & wait")
	var pid int
	waitFor(t, env.ev, "the command's pid", func() bool {
		pid, _ = strconv.Atoi(strings.TrimPrefix(stdoutSoFar(t, env, sess.ID), "started "))
		return pid != 0
	})
	if err := env.m.Cancel(sess.ID); err != nil {
		t.Fatal(err)
	}
	env.waitIdle(t, sess.ID)
	m, out := lastShell(t, env, sess.ID)
	if m.Metadata.Status != shared.StatusCancelled || !strings.HasPrefix(out.Stdout, "started ") || out.Signal != "SIGINT" {
		t.Errorf("%s %+v, want cancelled, stopped by SIGINT", m.Metadata.Status, out)
	}
	if said := env.texts(t, sess.ID, shared.TypeMessage, shared.AuthorAgent); len(said) == 0 || said[len(said)-1] != "Cancelled: killed by SIGINT" {
		t.Errorf("the agent said %q, want how the command ended", said)
	}
	waitGone(t, pid)
	env.prompt(t, sess.ID, "echo after")
	if _, out := lastShell(t, env, sess.ID); out.Stdout != "after\n" {
		t.Errorf("after cancel: %+v", out)
	}
}

// Closing the manager kills every agent and terminal process group; the running command
// ends cancelled with its output and the session is closed.
func TestManagerCloseKillsEverything(t *testing.T) {
	t.Parallel()
	env := newEnv(t, shellProcess(t), true)
	sess := env.start(t, ShellAgent)
	env.promptAsync(t, sess.ID, hostPID+"; sleep 300 & wait")
	var pid int
	waitFor(t, env.ev, "the command's pid", func() bool {
		pid, _ = strconv.Atoi(stdoutSoFar(t, env, sess.ID))
		return pid != 0
	})
	env.m.Close()
	waitGone(t, pid)
	m, out := lastShell(t, env, sess.ID)
	if m.Metadata.Status != shared.StatusCancelled || strings.TrimSpace(out.Stdout) != strconv.Itoa(pid) {
		t.Errorf("%s %+v", m.Metadata.Status, out)
	}
	got, err := env.st.GetSession(context.Background(), sess.ID)
	if err != nil || got.State != shared.SessionClosed {
		t.Errorf("session %+v %v", got, err)
	}
}

// stdoutSoFar is the stored stdout of the session's shell command, trimmed; "" while
// there is none.
func stdoutSoFar(t testing.TB, env *testEnv, sessionID string) string {
	for _, m := range env.messages(t, sessionID) {
		if m.Type == shared.TypeToolExecute {
			snap, err := env.st.GetShellOutput(context.Background(), sessionID, m.ID)
			if err != nil {
				t.Fatal(err)
			}
			return strings.TrimSpace(snap.Output.Stdout)
		}
	}
	return ""
}

// An empty prompt runs nothing and says so.
func TestShellAgentEmptyPrompt(t *testing.T) {
	t.Parallel()
	env := newEnv(t, shellInProcess, false)
	sess := env.start(t, ShellAgent)
	env.prompt(t, sess.ID, "  \n")
	msgs := env.messages(t, sess.ID)
	if len(msgs) != 2 || msgs[1].Type != shared.TypeMessage || !strings.HasPrefix(msgs[1].Content, "Nothing to run") {
		t.Errorf("messages %+v", msgs)
	}
}

// Sessions run side by side, each in its own directory, each with its own messages.
func TestShellSessionsInParallel(t *testing.T) {
	t.Parallel()
	env := newEnv(t, shellInProcess, false)
	sessions := make([]shared.Session, 3)
	for i := range sessions {
		sessions[i] = env.start(t, ShellAgent)
	}
	for i, s := range sessions {
		env.promptAsync(t, s.ID, "sleep 0.2; pwd; echo "+strconv.Itoa(i))
	}
	for i, s := range sessions {
		env.waitIdle(t, s.ID)
		m, out := lastShell(t, env, s.ID)
		if m.Metadata.Status != shared.StatusCompleted || out.Stdout != s.Cwd+"\n"+strconv.Itoa(i)+"\n" {
			t.Errorf("session %d: %s %q", i, m.Metadata.Status, out.Stdout)
		}
	}
}
