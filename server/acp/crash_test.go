package acp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"conch/server/acp/acptest"
	"conch/server/waittest"
	"conch/shared"
)

// crashAgent is the test binary playing an agent that dies in the middle of a command.
func crashAgent() {
	_ = acptest.Serve(context.Background(), os.Stdin, os.Stdout, map[string]script{"crash": crashMidCommand})
	os.Exit(0)
}

func crashMidCommand(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
	term, err := a.Conn.CreateTerminal(ctx, sdk.CreateTerminalRequest{SessionId: sid, Command: "sh",
		Args: []string{"-c", "echo partial; " + hostPID + "; sleep 300"}})
	if err != nil {
		return err
	}
	err = a.Send(ctx, sid, sdk.StartToolCall("doomed", "long job", sdk.WithStartKind(sdk.ToolKindExecute),
		sdk.WithStartStatus(sdk.ToolCallStatusInProgress),
		sdk.WithStartContent([]sdk.ToolCallContent{sdk.ToolTerminalRef(term.TerminalId)})))
	if err != nil {
		return err
	}
	// In the agent process there is no test, so no deadline of one: waittest.Limit's default.
	for deadline := time.Now().Add(waittest.Limit(nil)); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		out, err := a.Conn.TerminalOutput(ctx, sdk.TerminalOutputRequest{SessionId: sid, TerminalId: term.TerminalId})
		if err != nil {
			return err
		}
		if strings.Count(out.Output, "\n") == 2 {
			fmt.Fprintln(os.Stderr, "boom: the agent lost its mind")
			os.Exit(7)
		}
	}
	return errors.New("the command printed nothing")
}

// An agent process that dies mid-command fails the session with its stderr tail; the
// command's tool call ends cancelled with its output, and the command is killed.
func TestAgentCrashMidCommand(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, testAgent(exe, "crash"), false, Profile{Name: "crashy", Command: exe})
	sess := env.start(t, "crashy")
	env.promptAsync(t, sess.ID, "crash")
	waitFor(t, env.ev, "the session to fail", func() bool {
		st := env.ev.states(sess.ID)
		return st[len(st)-1] == shared.SessionFailed
	})
	got, err := env.st.GetSession(context.Background(), sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != shared.SessionFailed || !strings.Contains(got.Error, "exit status 7") || !strings.Contains(got.Error, "boom: the agent lost its mind") {
		t.Errorf("session %s: %q", got.State, got.Error)
	}
	m, out := env.tool(t, sess.ID, "doomed")
	lines := strings.Split(out.Stdout, "\n")
	if m.Metadata.Status != shared.StatusCancelled || lines[0] != "partial" || len(lines) < 2 {
		t.Fatalf("tool call %s, output %+v", m.Metadata.Status, out)
	}
	pid, _ := strconv.Atoi(lines[1])
	if pid == 0 {
		t.Fatalf("no pid in %q", out.Stdout)
	}
	waitGone(t, pid)
	if err := env.m.Prompt(sess.ID, "", "again"); err == nil {
		t.Error("a failed session took a prompt")
	}
	assertEventsMatchStore(t, env, sess.ID)
}

// An agent that exits before answering initialize gives a failed session with its stderr.
func TestAgentDiesAtStart(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, testAgent(exe, "die-at-start"), false)
	sess, err := env.m.StartSession(context.Background(), env.task.ID, ShellAgent, "")
	if err != nil {
		t.Fatal(err)
	}
	if sess.State != shared.SessionFailed || !strings.Contains(sess.Error, "cannot find my config") {
		t.Errorf("session %s: %q", sess.State, sess.Error)
	}
}
