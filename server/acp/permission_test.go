package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"conch/server/acp/acptest"
	"conch/server/shellagent"
	"conch/server/store"
	"conch/server/waittest"
	"conch/shared"
)

// askScript asks permission for an edit and reports the outcome the agent received on
// got (a zero outcome when the turn's cancel ended the request first: the SDK cancels the
// prompt's context); a cancelled outcome ends the turn cancelled, as real agents do.
func askScript(got chan<- sdk.RequestPermissionOutcome) script {
	return func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
		if err := raw(ctx, a, sid, `{"sessionUpdate":"tool_call","toolCallId":"edit-1","title":"Edit main.go","kind":"edit","status":"pending"}`); err != nil {
			return err
		}
		resp, err := a.Conn.RequestPermission(ctx, sdk.RequestPermissionRequest{SessionId: sid,
			ToolCall: sdk.ToolCallUpdate{ToolCallId: "edit-1"},
			Options: []sdk.PermissionOption{
				{OptionId: "always", Kind: sdk.PermissionOptionKindAllowAlways, Name: "Always allow"},
				{OptionId: "once", Kind: sdk.PermissionOptionKindAllowOnce, Name: "Allow once"},
				{OptionId: "no", Kind: sdk.PermissionOptionKindRejectOnce, Name: "Reject"},
			}})
		if err != nil && ctx.Err() != nil {
			got <- sdk.RequestPermissionOutcome{}
			return acptest.StopWith(sdk.StopReasonCancelled)
		}
		if err != nil {
			return err
		}
		got <- resp.Outcome
		if resp.Outcome.Cancelled != nil {
			return acptest.StopWith(sdk.StopReasonCancelled)
		}
		return a.Send(ctx, sid, sdk.UpdateAgentMessageText("edited"))
	}
}

// waitAsk waits until a permission request of the session is published and returns it.
func waitAsk(t *testing.T, env *testEnv, sessionID string) shared.Message {
	t.Helper()
	var ask shared.Message
	waitFor(t, env.ev, "the permission request", func() bool {
		env.ev.mu.Lock()
		defer env.ev.mu.Unlock()
		for _, m := range env.ev.added {
			if m.SessionID == sessionID && m.Type == shared.TypePermissionRequest {
				ask = m
				return true
			}
		}
		return false
	})
	return ask
}

// With the ask policy a request waits for the person: it is a live message after the
// tool call it is about; a bad answer changes nothing; the chosen option, and only it,
// reaches the agent; a second answer is a conflict.
func TestPermissionAsk(t *testing.T) {
	t.Parallel()
	got := make(chan sdk.RequestPermissionOutcome, 1)
	env := newEnv(t, scripted(map[string]script{"ask": askScript(got)}), false, Profile{Name: "scripted", Permission: PermissionAsk})
	sess := env.start(t, "scripted")
	env.promptAsync(t, sess.ID, "ask")
	ask := waitAsk(t, env, sess.ID)
	md := ask.Metadata
	if ask.AuthorType != shared.AuthorAgent || ask.Content != "Edit main.go" || md.ToolCallID != "edit-1" || md.Title != "Edit main.go" ||
		md.Status != shared.StatusPending || len(md.Options) != 3 ||
		md.Options[1] != (shared.PermissionOption{OptionID: "once", Name: "Allow once", Kind: "allow_once"}) {
		t.Fatalf("request %+v %+v", ask, md)
	}
	msgs := env.messages(t, sess.ID)
	if n := len(msgs); n < 3 || msgs[n-2].Type != shared.TypeToolCall || msgs[n-1].ID != ask.ID {
		t.Errorf("the tool call is not stored right before the request: %+v", msgs)
	}

	ctx := context.Background()
	for _, tt := range []struct{ message, option, code string }{
		{"nope", "once", shared.CodeNotFound},
		{msgs[0].ID, "once", shared.CodeNotFound}, // the user's prompt
		{ask.ID, "sometimes", shared.CodeInvalid},
	} {
		if _, err := env.answer(ctx, sess.ID, tt.message, tt.option); shared.ErrorCode(err) != tt.code {
			t.Errorf("answer %s/%s: %v, want %s", tt.message, tt.option, err, tt.code)
		}
	}
	select {
	case o := <-got:
		t.Fatalf("the agent got %+v before any good answer", o)
	default:
	}

	m, err := env.answer(ctx, sess.ID, ask.ID, "once")
	if err != nil {
		t.Fatal(err)
	}
	if m.Metadata.Status != shared.StatusSelected || m.Metadata.SelectedOptionID != "once" {
		t.Errorf("answered %+v", m.Metadata)
	}
	if o := <-got; o.Selected == nil || o.Selected.OptionId != "once" || o.Cancelled != nil {
		t.Errorf("the agent got %+v, want once", o)
	}
	if _, err := env.answer(ctx, sess.ID, ask.ID, "no"); shared.ErrorCode(err) != shared.CodeConflict {
		t.Errorf("second answer: %v", err)
	}
	env.waitIdle(t, sess.ID)
	msgs = env.messages(t, sess.ID)
	if last := msgs[len(msgs)-1]; last.Content != "edited" {
		t.Errorf("after the answer the turn went on to %q", last.Content)
	}
	// The person's answer is published once, by the replica that stored it (here the
	// test's answer); the runtime publishes only what the agent caused.
	env.ev.mu.Lock()
	var published int
	for _, u := range env.ev.updated {
		if u.ID == ask.ID {
			published++
		}
	}
	env.ev.mu.Unlock()
	if published != 1 {
		t.Errorf("the answer was published %d times, want once", published)
	}
	assertEventsMatchStore(t, env, sess.ID)
}

// Cancelling the turn answers a pending request cancelled, for the agent and the store;
// an answer afterwards is a conflict.
func TestPermissionCancelledWithTheTurn(t *testing.T) {
	t.Parallel()
	got := make(chan sdk.RequestPermissionOutcome, 1)
	env := newEnv(t, scripted(map[string]script{"ask": askScript(got)}), false, Profile{Name: "scripted"})
	sess := env.start(t, "scripted") // a profile without a policy asks
	env.promptAsync(t, sess.ID, "ask")
	ask := waitAsk(t, env, sess.ID)
	if err := env.m.Cancel(sess.ID); err != nil {
		t.Fatal(err)
	}
	if o := <-got; o.Selected != nil {
		t.Errorf("the agent got %+v, want cancelled", o)
	}
	env.waitIdle(t, sess.ID)
	msgs := env.messages(t, sess.ID)
	var stored shared.Message
	for _, m := range msgs {
		if m.ID == ask.ID {
			stored = m
		}
	}
	if stored.Metadata.Status != shared.StatusCancelled {
		t.Errorf("request after cancel: %s", stored.Metadata.Status)
	}
	if last := msgs[len(msgs)-1]; last.Type != shared.TypeStatus || last.Metadata.StopReason != shared.StopCancelled {
		t.Errorf("last message %s %q", last.Type, last.Content)
	}
	if _, err := env.answer(context.Background(), sess.ID, ask.ID, "once"); shared.ErrorCode(err) != shared.CodeConflict {
		t.Errorf("answer after cancel: %v", err)
	}
	assertEventsMatchStore(t, env, sess.ID)
}

// A request withdrawn before an answer reached its agent ends cancelled, even when the
// person's answer was stored first (on another replica, or here just before the cancel):
// the agent gets cancelled, the store and the events say so, and the late delivery
// changes nothing. An answer delivered where no agent waits for it ends cancelled too.
func TestPermissionWithdrawnBeforeDelivery(t *testing.T) {
	t.Parallel()
	got := make(chan sdk.RequestPermissionOutcome, 1)
	env := newEnv(t, scripted(map[string]script{"ask": askScript(got)}), false, Profile{Name: "scripted"})
	sess := env.start(t, "scripted")
	env.promptAsync(t, sess.ID, "ask")
	ask := waitAsk(t, env, sess.ID)
	ctx := context.Background()
	stored, _, err := env.st.AnswerPermission(ctx, sess.ID, ask.ID, "once") // stored, not handed over yet
	if err != nil {
		t.Fatal(err)
	}
	env.ev.MessageUpdated(stored)
	if err := env.m.Cancel(sess.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case o := <-got:
		if o.Selected != nil {
			t.Errorf("the agent got %+v, want cancelled", o)
		}
	case <-time.After(waittest.Limit(t)):
		t.Fatal("the agent never got an outcome for the request withdrawn after an answer was stored")
	}
	env.waitIdle(t, sess.ID)
	env.m.Answered(sess.ID, ask.ID, "once") // the late delivery
	got2, err := env.st.GetMessage(ctx, ask.ID)
	if err != nil || got2.Metadata.Status != shared.StatusCancelled {
		t.Errorf("request withdrawn before delivery: %+v %v, want cancelled", got2.Metadata, err)
	}
	assertEventsMatchStore(t, env, sess.ID)

	// No agent waits here for this one (its agent went away): the delivery cancels it.
	orphan, err := env.st.CreateMessage(ctx, store.NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent,
		Type: shared.TypePermissionRequest, Content: "may I?", Metadata: &shared.Metadata{Status: shared.StatusPending,
			Options: []shared.PermissionOption{{OptionID: "yes", Name: "Yes", Kind: "allow_once"}}}})
	if err != nil {
		t.Fatal(err)
	}
	env.ev.MessageAdded(orphan)
	if _, err := env.answer(ctx, sess.ID, orphan.ID, "yes"); err != nil {
		t.Fatal(err)
	}
	if m, err := env.st.GetMessage(ctx, orphan.ID); err != nil || m.Metadata.Status != shared.StatusCancelled {
		t.Errorf("an answer no agent waits for: %+v %v, want cancelled", m.Metadata, err)
	}
	assertEventsMatchStore(t, env, sess.ID)
}

// A request pending when the server stops ends cancelled; answering it afterwards, with
// no agent left to hand it to, is a conflict.
func TestPermissionPendingAtStop(t *testing.T) {
	t.Parallel()
	got := make(chan sdk.RequestPermissionOutcome, 1)
	env := newEnv(t, scripted(map[string]script{"ask": askScript(got)}), false, Profile{Name: "scripted"})
	sess := env.start(t, "scripted")
	env.promptAsync(t, sess.ID, "ask")
	ask := waitAsk(t, env, sess.ID)
	env.m.Close()
	for _, m := range env.messages(t, sess.ID) {
		if m.ID == ask.ID && m.Metadata.Status != shared.StatusCancelled {
			t.Errorf("request after stop: %s", m.Metadata.Status)
		}
	}
	if _, err := env.answer(context.Background(), sess.ID, ask.ID, "once"); shared.ErrorCode(err) != shared.CodeConflict {
		t.Errorf("answer after stop: %v", err)
	}
	if _, err := env.answer(context.Background(), sess.ID, "nope", "once"); shared.ErrorCode(err) != shared.CodeNotFound {
		t.Errorf("answer of an unknown message after stop: %v", err)
	}
	tasks, err := env.st.ListTasks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if tasks[0].NeedsAttention {
		t.Error("the task needs attention after the stop")
	}
}

// `conch agent shell --ask` asks before each command: Allow runs it, Deny does not, and
// the call it showed ends cancelled.
func TestShellAgentAsks(t *testing.T) {
	t.Parallel()
	env := newEnv(t, pipeLauncher(shellagent.RunAsking), true, Profile{Name: "shell-ask"})
	sess := env.start(t, "shell-ask")
	ctx := context.Background()
	for _, tt := range []struct {
		option string
		status shared.ToolStatus
		last   string
	}{
		{shellagent.OptionAllow, shared.StatusCompleted, "exit 0"},
		{shellagent.OptionDeny, shared.StatusCancelled, "Not run: permission denied."},
	} {
		file := filepath.Join(sess.Cwd, tt.option+".txt")
		before := len(env.messages(t, sess.ID))
		env.promptAsync(t, sess.ID, "echo ran > "+file)
		var ask shared.Message
		waitFor(t, env.ev, "the request", func() bool {
			msgs := env.messages(t, sess.ID)
			for _, m := range msgs[before:] {
				if m.Type == shared.TypePermissionRequest {
					ask = m
					return true
				}
			}
			return false
		})
		if ask.Content != "echo ran > "+file || len(ask.Metadata.Options) != 2 || ask.Metadata.Options[0].Name != "Allow" {
			t.Fatalf("request %+v", ask.Metadata)
		}
		if _, err := env.answer(ctx, sess.ID, ask.ID, tt.option); err != nil {
			t.Fatal(err)
		}
		env.waitIdle(t, sess.ID)
		m, _ := lastShell(t, env, sess.ID)
		msgs := env.messages(t, sess.ID)
		_, statErr := os.Stat(file)
		if m.Metadata.Status != tt.status || !strings.HasPrefix(msgs[len(msgs)-1].Content, tt.last) || (statErr == nil) != (tt.option == shellagent.OptionAllow) {
			t.Errorf("%s: call %s, last %q, file: %v", tt.option, m.Metadata.Status, msgs[len(msgs)-1].Content, statErr)
		}
	}
}

// geminiScript plays Gemini CLI on a shell command it must ask for: no tool_call, the
// call appears first in the permission request (kind execute, status pending, title =
// the command, the command's description as a text block), with Gemini's three options.
// Allowed, it reports the output as a text block; refused, it reports the refusal as
// Gemini's error path does (status failed, the reason as a text block).
func geminiScript(answered chan<- struct{}) script {
	calls := 0
	return func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
		calls++
		id := fmt.Sprintf("run_shell_command-%d", calls)
		var p sdk.RequestPermissionRequest
		if err := json.Unmarshal([]byte(`{"sessionId":"`+string(sid)+`","toolCall":{"toolCallId":"`+id+`","status":"pending",
			"title":"rm -rf build","kind":"execute","content":[{"type":"content","content":{"type":"text","text":"Removes the build directory."}}]},
			"options":[{"optionId":"proceed_always","name":"Always Allow rm","kind":"allow_always"},
			{"optionId":"proceed_once","name":"Allow","kind":"allow_once"},{"optionId":"cancel","name":"Reject","kind":"reject_once"}]}`), &p); err != nil {
			return err
		}
		resp, err := a.Conn.RequestPermission(ctx, p)
		if err != nil {
			return err
		}
		answered <- struct{}{}
		if o := resp.Outcome.Selected; o != nil && o.OptionId != "cancel" {
			return raw(ctx, a, sid, `{"sessionUpdate":"tool_call_update","toolCallId":"`+id+`","status":"completed",
				"content":[{"type":"content","content":{"type":"text","text":"removed 3 files"}}]}`)
		}
		return raw(ctx, a, sid, `{"sessionUpdate":"tool_call_update","toolCallId":"`+id+`","status":"failed",
			"content":[{"type":"content","content":{"type":"text","text":"Tool \"run_shell_command\" was canceled by the user."}}]}`)
	}
}

// A command the agent asks for has not run: its description is not output. Rejected, it
// says so, ends cancelled and shows no output, whatever text the agent reports after;
// allowed, the text it reports is its output.
func TestPermissionRejectedCommandHasNoOutput(t *testing.T) {
	t.Parallel()
	answered := make(chan struct{}, 1)
	env := newEnv(t, scripted(map[string]script{"gemini": geminiScript(answered)}), false, Profile{Name: "gemini", Permission: PermissionAsk})
	sess := env.start(t, "gemini")
	for _, tt := range []struct {
		option   string
		status   shared.ToolStatus
		rejected bool
		stdout   string
	}{
		{"cancel", shared.StatusCancelled, true, ""},
		{"proceed_once", shared.StatusCompleted, false, "removed 3 files"},
	} {
		before := len(env.messages(t, sess.ID))
		env.promptAsync(t, sess.ID, "gemini")
		var ask shared.Message
		waitFor(t, env.ev, "the request", func() bool {
			for _, m := range env.messages(t, sess.ID)[before:] {
				if m.Type == shared.TypePermissionRequest {
					ask = m
					return true
				}
			}
			return false
		})
		m, out := lastShell(t, env, sess.ID)
		if se := shared.ShellOf(m); se.Output.HasOutput || out.Stdout != "" || m.Metadata.Status != shared.StatusPending {
			t.Errorf("%s: before the answer the command shows %+v, output %q", tt.option, m.Metadata, out.Stdout)
		}
		if _, err := env.answer(context.Background(), sess.ID, ask.ID, tt.option); err != nil {
			t.Fatal(err)
		}
		<-answered
		env.waitIdle(t, sess.ID)
		m, out = lastShell(t, env, sess.ID)
		if se := shared.ShellOf(m); m.Metadata.Status != tt.status || m.Metadata.Rejected != tt.rejected ||
			se.Output.HasOutput != (tt.stdout != "") || out.Stdout != tt.stdout || se.Command != "rm -rf build" {
			t.Errorf("%s: the command ends %+v %+v, output %q", tt.option, m.Metadata, se, out.Stdout)
		}
	}
	assertEventsMatchStore(t, env, sess.ID)
}
