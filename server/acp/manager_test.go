package acp

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"conch/server/acp/acptest"
	"conch/shared"
)

type script = acptest.Script

// raw sends a session/update written as wire JSON.
func raw(ctx context.Context, a *acptest.Agent, sid sdk.SessionId, js string) error {
	var u sdk.SessionUpdate
	if err := json.Unmarshal([]byte(js), &u); err != nil {
		return err
	}
	return a.Send(ctx, sid, u)
}

func rawAll(ctx context.Context, a *acptest.Agent, sid sdk.SessionId, lines ...string) error {
	for _, js := range lines {
		if err := raw(ctx, a, sid, js); err != nil {
			return err
		}
	}
	return nil
}

// Every source shape of a command's output, a permission-first call, updates for unknown
// ids, out-of-order and duplicate updates, text and thoughts: all become stored messages.
func TestScriptedShapes(t *testing.T) {
	t.Parallel()
	var chosen sdk.PermissionOptionId
	env := newEnv(t, scripted(map[string]script{
		"shapes": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
			if err := rawAll(ctx, a, sid,
				`{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"let me "}}`,
				`{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"think"}}`,
				`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Running "}}`,
				`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"tests."}}`,
				// Claude Code adapter
				`{"sessionUpdate":"tool_call","toolCallId":"claude","title":"make","kind":"execute","status":"in_progress","rawInput":{"command":"make","description":"build"},
				  "content":[{"type":"terminal","terminalId":"ext-1"}],"_meta":{"terminal_info":{"terminal_id":"ext-1","cwd":"/w"}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"claude","_meta":{"terminal_output":{"terminal_id":"ext-1","data":"built\n"}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"claude","status":"completed","_meta":{"terminal_exit":{"terminal_id":"ext-1","exit_code":0,"signal":null}}}`,
				// Codex adapter, exit before the last output (out of order), duplicates
				`{"sessionUpdate":"tool_call","toolCallId":"codex","title":"cargo test","kind":"execute","status":"in_progress","rawInput":{"command":["cargo","test"]}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"codex","_meta":{"terminal_output_delta":{"terminal_id":"x","data":"test a ... ok\n"}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"codex","status":"completed","_meta":{"terminal_exit":{"terminal_id":"x","exit_code":101}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"codex","status":"in_progress","_meta":{"terminal_output_delta":{"terminal_id":"x","data":"test b ... FAILED\n"}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"codex","_meta":{"terminal_exit":{"terminal_id":"x","exit_code":101}}}`,
				// opencode
				`{"sessionUpdate":"tool_call","toolCallId":"opencode","title":"npm test","kind":"execute","status":"in_progress"}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"opencode","content":[{"type":"content","content":{"type":"text","text":"1"}}]}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"opencode","status":"completed","rawOutput":{"output":"1\n2\n","metadata":{"output":"1\n2\n","exit":0}}}`,
				// only updates, never a tool_call
				`{"sessionUpdate":"tool_call_update","toolCallId":"orphan","title":"ls","kind":"execute","status":"completed","rawOutput":{"stdout":"a b\n","stderr":"warn\n","exit_code":0}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"orphan-read","status":"in_progress"}`,
				`{"sessionUpdate":"tool_call","toolCallId":"read","title":"Read main.go","kind":"read","status":"completed"}`,
			); err != nil {
				return err
			}
			// Gemini: the call first appears in a permission request.
			resp, err := a.Conn.RequestPermission(ctx, sdk.RequestPermissionRequest{SessionId: sid,
				ToolCall: sdk.ToolCallUpdate{ToolCallId: "gemini", Title: sdk.Ptr("rm -rf build"), Kind: sdk.Ptr(sdk.ToolKindExecute), Status: sdk.Ptr(sdk.ToolCallStatusPending)},
				Options: []sdk.PermissionOption{
					{OptionId: "proceed_always", Kind: sdk.PermissionOptionKindAllowAlways, Name: "Always"},
					{OptionId: "proceed_once", Kind: sdk.PermissionOptionKindAllowOnce, Name: "Once"},
					{OptionId: "cancel", Kind: sdk.PermissionOptionKindRejectOnce, Name: "No"},
				}})
			if err != nil {
				return err
			}
			chosen = resp.Outcome.Selected.OptionId
			return rawAll(ctx, a, sid,
				`{"sessionUpdate":"tool_call_update","toolCallId":"gemini","status":"completed","content":[{"type":"content","content":{"type":"text","text":"removed"}}]}`,
				`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Done."}}`,
			)
		},
	}), false, Profile{Name: "scripted", Permission: PermissionAllow})
	sess := env.start(t, "scripted")
	env.prompt(t, sess.ID, "shapes")

	if chosen != "proceed_once" {
		t.Errorf("permission answer = %q, want proceed_once", chosen)
	}
	code := func(c int) *int { return &c }
	for _, tc := range []struct {
		id      string
		typ     shared.MessageType
		status  shared.ToolStatus
		command string
		workDir string
		out     shared.ShellOutput
	}{
		{"claude", shared.TypeToolExecute, shared.StatusCompleted, "make", "/w", shared.ShellOutput{Stdout: "built\n", ExitCode: code(0)}},
		{"codex", shared.TypeToolExecute, shared.StatusFailed, "cargo test", sess.Cwd, shared.ShellOutput{Stdout: "test a ... ok\ntest b ... FAILED\n", ExitCode: code(101)}},
		{"opencode", shared.TypeToolExecute, shared.StatusCompleted, "npm test", sess.Cwd, shared.ShellOutput{Stdout: "1\n2\n", ExitCode: code(0)}},
		{"orphan", shared.TypeToolExecute, shared.StatusCompleted, "ls", sess.Cwd, shared.ShellOutput{Stdout: "a b\n", Stderr: "warn\n", ExitCode: code(0)}},
		{"gemini", shared.TypeToolExecute, shared.StatusCompleted, "rm -rf build", sess.Cwd, shared.ShellOutput{Stdout: "removed"}},
		{"orphan-read", shared.TypeToolCall, shared.StatusCancelled, "", "", shared.ShellOutput{}}, // never finished in its turn
		{"read", shared.TypeToolCall, shared.StatusCompleted, "", "", shared.ShellOutput{}},
	} {
		m, out := env.tool(t, sess.ID, tc.id)
		if m.Type != tc.typ || m.Metadata.Status != tc.status || m.AuthorType != shared.AuthorAgent {
			t.Errorf("%s: %s %s by %s, want %s %s", tc.id, m.Type, m.Metadata.Status, m.AuthorType, tc.typ, tc.status)
			continue
		}
		if tc.typ != shared.TypeToolExecute {
			continue
		}
		se := shared.ShellOf(m)
		if se.Command != tc.command || se.WorkDir != tc.workDir {
			t.Errorf("%s: command %q in %q, want %q in %q", tc.id, se.Command, se.WorkDir, tc.command, tc.workDir)
		}
		got, _ := json.Marshal(out)
		want, _ := json.Marshal(tc.out.Bounded()) // as stored: totals count the bytes kept
		if string(got) != string(want) {
			t.Errorf("%s: output %s, want %s", tc.id, got, want)
		}
		gotSum, _ := json.Marshal(se.Output)
		wantSum, _ := json.Marshal(tc.out.Summarize())
		if string(gotSum) != string(wantSum) {
			t.Errorf("%s: summary %s, want %s", tc.id, gotSum, wantSum)
		}
	}
	var texts []string
	for _, m := range env.messages(t, sess.ID) {
		if m.Type == shared.TypeMessage || m.Type == shared.TypeThinking {
			texts = append(texts, string(m.AuthorType)+"/"+string(m.Type)+":"+m.Content)
		}
	}
	want := "user/message:shapes|agent/thinking:let me think|agent/message:Running tests.|agent/message:Done."
	if strings.Join(texts, "|") != want {
		t.Errorf("texts = %s\nwant    %s", strings.Join(texts, "|"), want)
	}
	// Every stored agent message was published as added, with its final state as the last event.
	added, _ := env.ev.counts()
	if n := len(env.messages(t, sess.ID)) - 1; added != n {
		t.Errorf("%d added events for %d agent messages", added, n)
	}
	assertEventsMatchStore(t, env, sess.ID)
	if got := env.ev.states(sess.ID); strings.Join(statesOf(got), ",") != "starting,ready,running,ready" {
		t.Errorf("states = %v", got)
	}
}

func statesOf(s []shared.SessionState) []string {
	out := make([]string, len(s))
	for i, st := range s {
		out[i] = string(st)
	}
	return out
}

// assertEventsMatchStore checks that the last event of each message equals the stored message.
func assertEventsMatchStore(t *testing.T, env *testEnv, sessionID string) {
	t.Helper()
	last := map[string]shared.Message{}
	env.ev.mu.Lock()
	for _, m := range append(append([]shared.Message{}, env.ev.added...), env.ev.updated...) {
		if prev, ok := last[m.ID]; !ok || !m.UpdatedAt.Before(prev.UpdatedAt) {
			last[m.ID] = m
		}
	}
	env.ev.mu.Unlock()
	for _, m := range env.messages(t, sessionID) {
		if m.AuthorType == shared.AuthorUser {
			continue
		}
		ev, ok := last[m.ID]
		got, _ := json.Marshal(ev)
		want, _ := json.Marshal(m)
		if !ok || string(got) != string(want) {
			t.Errorf("last event of %s:\n%s\nstored:\n%s", m.ID, got, want)
		}
	}
}

// Over 1,024 notifications in one burst and a line over the SDK's limit (1 MiB here, as
// the limits' rules are the same at 10: TestGuard) leave the session working; a running
// command's output growth is coalesced.
func TestScriptedFloodAndOversizedLine(t *testing.T) {
	t.Parallel()
	const n = 1500 // two updates each: 3,000 notifications in one burst
	env := newEnv(t, scripted(map[string]script{
		"flood": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
			if err := raw(ctx, a, sid, `{"sessionUpdate":"tool_call","toolCallId":"f","title":"yes","kind":"execute","status":"in_progress"}`); err != nil {
				return err
			}
			for i := 0; i < n; i++ {
				if err := a.Send(ctx, sid, sdk.UpdateAgentMessageText("x")); err != nil {
					return err
				}
				if err := a.Send(ctx, sid, sdk.UpdateToolCall("f", func(u *sdk.SessionToolCallUpdate) {
					u.Meta = map[string]any{"terminal_output_delta": map[string]any{"data": "y\n"}}
				})); err != nil {
					return err
				}
			}
			return raw(ctx, a, sid, `{"sessionUpdate":"tool_call_update","toolCallId":"f","status":"completed","_meta":{"terminal_exit":{"exit_code":0}}}`)
		},
		"oversized": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
			big := strings.Repeat("0123456789", 2<<20/10) + "END"
			return a.Send(ctx, sid, sdk.StartToolCall("big", "cat big", sdk.WithStartKind(sdk.ToolKindExecute),
				sdk.WithStartStatus(sdk.ToolCallStatusCompleted), sdk.WithStartRawOutput(map[string]any{"stdout": big, "exit_code": 0})))
		},
	}), false, Profile{Name: "scripted"})
	env.m.lines = lineLimits{sdk: 1<<20 - 1, max: 64 << 20}
	sess := env.start(t, "scripted")
	env.prompt(t, sess.ID, "flood")
	env.prompt(t, sess.ID, "oversized")

	m, out := env.tool(t, sess.ID, "f")
	if m.Metadata.Status != shared.StatusCompleted || out.Stdout != strings.Repeat("y\n", n) {
		t.Errorf("flood tool call: %s, %d bytes of output", m.Metadata.Status, len(out.Stdout))
	}
	var text string
	for _, m := range env.messages(t, sess.ID) {
		if m.Type == shared.TypeMessage && m.AuthorType == shared.AuthorAgent {
			text += m.Content
		}
	}
	if text != strings.Repeat("x", n) {
		t.Errorf("agent text has %d bytes, want %d", len(text), n)
	}
	// The clock never moved: besides creation, only changes of state and the end of
	// the turn were written, however many updates arrived.
	if _, updated := env.ev.counts(); updated > 4 {
		t.Errorf("%d updated events for %d output updates", updated, 2*n)
	}
	m, out = env.tool(t, sess.ID, "big")
	if m.Metadata.Status != shared.StatusCompleted || !out.Truncated || len(out.Stdout) != shared.OutputLimit || !strings.HasSuffix(out.Stdout, "789END") {
		t.Errorf("oversized: %s truncated=%v %d bytes", m.Metadata.Status, out.Truncated, len(out.Stdout))
	}
	if st := env.ev.states(sess.ID); st[len(st)-1] != shared.SessionReady {
		t.Errorf("session ended %v", st)
	}
	assertEventsMatchStore(t, env, sess.ID)
}

// A turn the agent fails leaves an error message and a ready session.
func TestScriptedTurnError(t *testing.T) {
	t.Parallel()
	env := newEnv(t, scripted(map[string]script{}), false, Profile{Name: "scripted"})
	sess := env.start(t, "scripted")
	env.prompt(t, sess.ID, "no such script")
	msgs := env.messages(t, sess.ID)
	last := msgs[len(msgs)-1]
	if last.Type != shared.TypeError || !strings.Contains(last.Content, "no such script") {
		t.Errorf("last message %s %q", last.Type, last.Content)
	}
	if st := env.ev.states(sess.ID); st[len(st)-1] != shared.SessionReady {
		t.Errorf("states %v", st)
	}
}

func TestPermissionDeny(t *testing.T) {
	t.Parallel()
	var chosen sdk.RequestPermissionOutcome
	env := newEnv(t, scripted(map[string]script{
		"ask": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
			resp, err := a.Conn.RequestPermission(ctx, sdk.RequestPermissionRequest{SessionId: sid,
				ToolCall: sdk.ToolCallUpdate{ToolCallId: "p", Title: sdk.Ptr("rm -rf /"), Kind: sdk.Ptr(sdk.ToolKindExecute)},
				Options: []sdk.PermissionOption{
					{OptionId: "yes", Kind: sdk.PermissionOptionKindAllowOnce, Name: "Yes"},
					{OptionId: "no", Kind: sdk.PermissionOptionKindRejectOnce, Name: "No"},
				}})
			chosen = resp.Outcome
			return err
		},
	}), false, Profile{Name: "careful", Permission: PermissionDeny})
	sess := env.start(t, "careful")
	env.prompt(t, sess.ID, "ask")
	if chosen.Selected == nil || chosen.Selected.OptionId != "no" {
		t.Errorf("outcome = %+v", chosen)
	}
	if m, _ := env.tool(t, sess.ID, "p"); m.Metadata.Status != shared.StatusCancelled {
		t.Errorf("a denied call left open ends %s", m.Metadata.Status)
	}
}

func TestStartSessionErrors(t *testing.T) {
	t.Parallel()
	env := newEnv(t, scripted(nil), false, Profile{Name: "scripted"})
	ctx := context.Background()
	for _, tc := range []struct {
		task, agent, cwd string
		want             shared.Error
	}{
		{env.task.ID, "nope", "", shared.Error{Code: shared.CodeInvalid, Message: `unknown agent "nope"`}},
		{env.task.ID, "scripted", "relative/dir", shared.Error{Code: shared.CodeInvalid, Message: "cwd must be an absolute path"}},
		{env.task.ID, "scripted", "/no/such/dir", shared.Error{Code: shared.CodeInvalid, Message: "cwd /no/such/dir is not a directory"}},
		{"no-such-task", "scripted", "", shared.Error{Code: shared.CodeNotFound, Message: "task not found"}},
	} {
		_, err := env.m.StartSession(ctx, tc.task, tc.agent, tc.cwd)
		if got := (shared.Error{Code: shared.ErrorCode(err), Message: shared.ErrorMessage(err)}); got != tc.want {
			t.Errorf("StartSession(%q, %q, %q) = %+v (%v), want %+v", tc.task, tc.agent, tc.cwd, got, err, tc.want)
		}
	}
	tasks, err := env.st.ListTasks(ctx)
	if err != nil || len(tasks) != 1 || len(tasks[0].Sessions) != 0 {
		t.Errorf("bad input created sessions: %+v %v", tasks, err)
	}
	if err := env.m.Prompt("no-such-session", "", "x"); shared.ErrorCode(err) != shared.CodeNotFound {
		t.Errorf("Prompt on an unknown session: %v", err)
	}
	// A given cwd is used as is.
	dir := t.TempDir()
	sess, err := env.m.StartSession(ctx, env.task.ID, "scripted", dir)
	if err != nil || sess.Cwd != dir || sess.State != shared.SessionReady {
		t.Errorf("session %+v, %v", sess, err)
	}
}

// A profile whose process cannot start gives a failed session with the error, not a hang,
// and a failed session takes no prompts.
func TestStartSessionLaunchFails(t *testing.T) {
	t.Parallel()
	env := newEnv(t, ExecLauncher("/no/such/conch"), false)
	sess, err := env.m.StartSession(context.Background(), env.task.ID, ShellAgent, "")
	if err != nil {
		t.Fatal(err)
	}
	if sess.State != shared.SessionFailed || !strings.Contains(sess.Error, "/no/such/conch") {
		t.Errorf("session %s: %q", sess.State, sess.Error)
	}
	if err := env.m.Prompt(sess.ID, "", "ls"); shared.ErrorCode(err) != shared.CodeConflict {
		t.Errorf("Prompt on a failed session: %v", err)
	}
	if got := statesOf(env.ev.states(sess.ID)); strings.Join(got, ",") != "starting,failed" {
		t.Errorf("states %v", got)
	}
}

// Close while an agent has not answered initialize ends the start at once: nothing hangs.
func TestCloseDuringStart(t *testing.T) {
	t.Parallel()
	silent := pipeLauncher(func(ctx context.Context, in io.Reader, out io.Writer) error {
		<-ctx.Done() // never answers
		return ctx.Err()
	})
	env := newEnv(t, silent, false, Profile{Name: "silent"})
	type result struct {
		sess shared.Session
		err  error
	}
	started := make(chan result, 1)
	go func() {
		s, err := env.m.StartSession(context.Background(), env.task.ID, "silent", "")
		started <- result{s, err}
	}()
	var id string
	waitFor(t, env.ev, "the session to be created", func() bool {
		env.ev.mu.Lock()
		defer env.ev.mu.Unlock()
		if len(env.ev.sessions) > 0 {
			id = env.ev.sessions[0].ID
		}
		return id != ""
	})
	env.m.Close()
	r := <-started
	if r.err != nil || r.sess.ID != id || r.sess.State != shared.SessionClosed {
		t.Errorf("StartSession = %+v, %v", r.sess, r.err)
	}
}

// An agent that talks on and on fills several messages of bounded size; nothing is lost.
func TestLongAgentTextSplits(t *testing.T) {
	t.Parallel()
	chunk := strings.Repeat("words ", 10_000) // 60,000 bytes
	env := newEnv(t, scripted(map[string]script{
		"talk": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
			for range 10 {
				if err := a.Send(ctx, sid, sdk.UpdateAgentMessageText(chunk)); err != nil {
					return err
				}
			}
			return nil
		},
	}), false, Profile{Name: "scripted"})
	sess := env.start(t, "scripted")
	env.prompt(t, sess.ID, "talk")
	var all strings.Builder
	var texts int
	for _, m := range env.messages(t, sess.ID) {
		if m.Type == shared.TypeMessage && m.AuthorType == shared.AuthorAgent {
			texts++
			if len(m.Content) > shared.OutputLimit+len(chunk) {
				t.Errorf("a text message of %d bytes", len(m.Content))
			}
			all.WriteString(m.Content)
		}
	}
	if texts < 2 || all.String() != strings.Repeat(chunk, 10) {
		t.Fatalf("%d text messages holding %d bytes, want several holding %d", texts, all.Len(), 10*len(chunk))
	}
}
