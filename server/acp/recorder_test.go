package acp

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	sdk "github.com/coder/acp-go-sdk"

	"conch/server/acp/acptest"
	"conch/server/store"
	"conch/shared"
)

// Output growth of a stored message is written at most once per interval (latest state
// wins); a change of state is written at once. Time is the fake clock's.
func TestRecorderCoalesces(t *testing.T) {
	t.Parallel()
	env := newEnv(t, scripted(nil), false, Profile{Name: "scripted"})
	sess := env.start(t, "scripted")
	r := newRecorder(recorderConfig{sessionID: sess.ID, cwd: sess.Cwd, store: env.st, events: env.ev,
		clock: clock{env.clock.Now, env.clock.After}, interval: 250 * time.Millisecond, log: slog.New(slog.DiscardHandler),
		terminal: func(string) *terminal { return nil }, outage: time.Minute, stuck: func(error) { t.Error("stuck") }})
	defer r.close()
	updated := func() int { _, n := env.ev.counts(); return n }

	r.update(sdk.StartToolCall("c", "yes", sdk.WithStartKind(sdk.ToolKindExecute), sdk.WithStartStatus(sdk.ToolCallStatusInProgress)))
	waitFor(t, env.ev, "the message to be added", func() bool { a, _ := env.ev.counts(); return a == 1 })
	for i := 0; i < 10; i++ {
		r.update(sdk.UpdateToolCall("c", func(u *sdk.SessionToolCallUpdate) {
			u.Meta = map[string]any{"terminal_output_delta": map[string]any{"data": "y\n"}}
		}))
	}
	waitFor(t, env.ev, "the writer to defer the output", func() bool { return env.clock.Pending() > 0 })
	env.clock.Advance(249 * time.Millisecond)
	if n := updated(); n != 0 {
		t.Fatalf("%d updates before the interval passed", n)
	}
	env.clock.Advance(time.Millisecond)
	waitFor(t, env.ev, "one coalesced update", func() bool { return updated() == 1 })
	env.ev.mu.Lock()
	if se := shared.ShellOf(env.ev.updated[0]); se.Output.StdoutBytes != 20 {
		t.Errorf("coalesced update has %d bytes of output, want 20", se.Output.StdoutBytes)
	}
	env.ev.mu.Unlock()

	// An exit is written at once, without the clock moving.
	r.update(sdk.UpdateToolCall("c", sdk.WithUpdateStatus(sdk.ToolCallStatusCompleted), func(u *sdk.SessionToolCallUpdate) {
		u.Meta = map[string]any{"terminal_exit": map[string]any{"exit_code": 0}}
	}))
	waitFor(t, env.ev, "the final state", func() bool { return updated() == 2 })
	env.ev.mu.Lock()
	final := env.ev.updated[1]
	env.ev.mu.Unlock()
	if se := shared.ShellOf(final); final.Metadata.Status != shared.StatusCompleted || se.Output.ExitCode == nil || *se.Output.ExitCode != 0 {
		t.Errorf("final event %+v", final.Metadata)
	}
	if n := updated(); n != 2 {
		t.Errorf("%d updates", n)
	}
}

// A released terminal's id is gone for the agent, but the tool call that showed it keeps
// the output.
func TestOutputAfterRelease(t *testing.T) {
	t.Parallel()
	var afterRelease error
	env := newEnv(t, scripted(map[string]script{
		"release": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
			term, err := a.Conn.CreateTerminal(ctx, sdk.CreateTerminalRequest{SessionId: sid, Command: "printf", Args: []string{"kept"}})
			if err != nil {
				return err
			}
			ref := []sdk.ToolCallContent{sdk.ToolTerminalRef(term.TerminalId)}
			if err := a.Send(ctx, sid, sdk.StartToolCall("r", "printf kept", sdk.WithStartKind(sdk.ToolKindExecute), sdk.WithStartContent(ref))); err != nil {
				return err
			}
			if _, err := a.Conn.WaitForTerminalExit(ctx, sdk.WaitForTerminalExitRequest{SessionId: sid, TerminalId: term.TerminalId}); err != nil {
				return err
			}
			if _, err := a.Conn.ReleaseTerminal(ctx, sdk.ReleaseTerminalRequest{SessionId: sid, TerminalId: term.TerminalId}); err != nil {
				return err
			}
			_, afterRelease = a.Conn.TerminalOutput(ctx, sdk.TerminalOutputRequest{SessionId: sid, TerminalId: term.TerminalId})
			return a.Send(ctx, sid, sdk.UpdateToolCall("r", sdk.WithUpdateStatus(sdk.ToolCallStatusCompleted)))
		},
	}), false, Profile{Name: "scripted"})
	sess := env.start(t, "scripted")
	env.prompt(t, sess.ID, "release")
	if afterRelease == nil {
		t.Error("terminal/output answered for a released terminal")
	}
	m, out := env.tool(t, sess.ID, "r")
	if m.Metadata.Status != shared.StatusCompleted || out.Stdout != "kept" || out.ExitCode == nil || *out.ExitCode != 0 {
		t.Errorf("%s %+v", m.Metadata.Status, out)
	}
}

// An agent that releases a running command and ends its turn at once (as a cancelled turn
// does) still leaves how the command ended: release answers once the command is gone.
func TestReleaseKnowsHowTheCommandEnded(t *testing.T) {
	t.Parallel()
	env := newEnv(t, scripted(map[string]script{
		"release running": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
			term, err := a.Conn.CreateTerminal(ctx, sdk.CreateTerminalRequest{SessionId: sid, Command: "sleep", Args: []string{"300"}})
			if err != nil {
				return err
			}
			ref := []sdk.ToolCallContent{sdk.ToolTerminalRef(term.TerminalId)}
			if err := a.Send(ctx, sid, sdk.StartToolCall("s", "sleep 300", sdk.WithStartKind(sdk.ToolKindExecute), sdk.WithStartContent(ref))); err != nil {
				return err
			}
			_, err = a.Conn.ReleaseTerminal(ctx, sdk.ReleaseTerminalRequest{SessionId: sid, TerminalId: term.TerminalId})
			return err // the turn ends with the call still open
		},
	}), false, Profile{Name: "scripted"})
	sess := env.start(t, "scripted")
	env.prompt(t, sess.ID, "release running")
	m, out := env.tool(t, sess.ID, "s")
	if m.Metadata.Status != shared.StatusCancelled || out.Signal != "SIGINT" {
		t.Errorf("the released command: %s, signal %q; want cancelled, stopped by SIGINT", m.Metadata.Status, out.Signal)
	}
}

// An agent message of 6 MB, in one chunk or many, is stored as messages of at most
// store.MaxTextBytes, split between characters, nothing lost or cut; a list page of them
// stays within shared.MaxPageBytes. (6 MB: over a page, and past the bound many times; the
// bench's hostile step sends 30 MB to a real server.)
func TestLongAgentMessageIsSplit(t *testing.T) {
	t.Parallel()
	huge := "a" + strings.Repeat("é", 3<<20)
	env := newEnv(t, scripted(map[string]script{
		"one": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
			return a.Send(ctx, sid, sdk.UpdateAgentMessageText(huge))
		},
		"many": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
			for rest := huge; rest != ""; {
				n := len(store.CutText(rest, 100_001)) // chunks of whole characters, as JSON carries them
				if err := a.Send(ctx, sid, sdk.UpdateAgentMessageText(rest[:n])); err != nil {
					return err
				}
				rest = rest[n:]
			}
			return nil
		},
	}), false, Profile{Name: "scripted"})
	for _, prompt := range []string{"one", "many"} {
		sess := env.start(t, "scripted")
		env.prompt(t, sess.ID, prompt)
		var got strings.Builder
		for req := (shared.ListRequest{SessionID: sess.ID}); ; {
			page, err := env.st.ListMessages(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if raw, _ := json.Marshal(page); len(raw) > shared.MaxPageBytes {
				t.Fatalf("%s: a page of %d messages is %d bytes", prompt, len(page.Messages), len(raw))
			}
			for _, m := range page.Messages {
				if m.Type != shared.TypeMessage || m.AuthorType != shared.AuthorAgent {
					continue
				}
				if len(m.Content) > store.MaxTextBytes || !utf8.ValidString(m.Content) || m.Metadata == nil || m.Metadata.TextTruncated {
					t.Fatalf("%s: a message of %d bytes, cut %v", prompt, len(m.Content), m.Metadata != nil && m.Metadata.TextTruncated)
				}
				got.WriteString(m.Content)
			}
			if !page.HasMore {
				break
			}
			req.After = page.Cursor
		}
		if got.String() != huge {
			t.Errorf("%s: %d bytes stored of %d", prompt, got.Len(), len(huge))
		}
	}
}
