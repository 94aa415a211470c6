package ui

import (
	"testing"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/shared"
)

func TestRenderMessage(t *testing.T) {
	tests := []struct {
		name string
		msg  shared.Message
		want []string
		not  []string
	}{
		{
			name: "user prompt",
			msg:  shared.Message{ID: "1", AuthorType: shared.AuthorUser, Type: shared.TypeMessage, Content: "ls -la"},
			want: []string{`class="msg user"`, `class="bubble"`, "ls -la"},
		},
		{
			name: "a signed prompt shows whose it is",
			msg: shared.Message{ID: "1", AuthorType: shared.AuthorUser, Type: shared.TypeMessage, Content: "ls",
				Metadata: &shared.Metadata{Author: "ada"}},
			want: []string{`<span class="msg-author">ada</span>`, "ls"},
		},
		{
			name: "an approval shows who gave it",
			msg: shared.Message{ID: "1", AuthorType: shared.AuthorAgent, Type: shared.TypePermissionRequest, Content: "rm",
				Metadata: &shared.Metadata{Status: shared.StatusSelected, SelectedOptionID: "a", AnsweredBy: "ada",
					Options: []shared.PermissionOption{{OptionID: "a", Name: "Allow once", Kind: "allow_once"}}}},
			want: []string{"Allowed by ada: Allow once"},
		},
		{
			name: "a refusal shows who gave it",
			msg: shared.Message{ID: "1", AuthorType: shared.AuthorAgent, Type: shared.TypePermissionRequest, Content: "rm",
				Metadata: &shared.Metadata{Status: shared.StatusSelected, SelectedOptionID: "r", AnsweredBy: "bob",
					Options: []shared.PermissionOption{{OptionID: "r", Name: "Reject", Kind: "reject_once"}}}},
			want: []string{"Refused by bob: Reject"},
		},
		{
			name: "agent text",
			msg:  shared.Message{ID: "2", AuthorType: shared.AuthorAgent, Type: shared.TypeMessage, Content: "exit 0"},
			want: []string{`class="msg agent"`, "exit 0"},
		},
		{
			name: "thinking is collapsed",
			msg:  shared.Message{ID: "3", AuthorType: shared.AuthorAgent, Type: shared.TypeThinking, Content: "pondering"},
			want: []string{"<details", "<summary>Thinking</summary>", "pondering"},
			not:  []string{" open"},
		},
		{
			name: "error",
			msg:  shared.Message{ID: "4", AuthorType: shared.AuthorAgent, Type: shared.TypeError, Content: "agent crashed"},
			want: []string{`class="msg error"`, "agent crashed"},
			not:  []string{"<button"},
		},
		{
			name: "a long error: its headline, the rest behind a collapsed disclosure",
			msg: shared.Message{ID: "5", AuthorType: shared.AuthorAgent, Type: shared.TypeError, Content: "The agent's turn failed: quota",
				Metadata: &shared.Metadata{DetailBytes: 20480}},
			want: []string{`class="msg error"`, `data-message-id="5"`, "The agent&#39;s turn failed: quota", `aria-expanded="false"`,
				`aria-controls="error-5"`, "Details · 20 KB"},
			not: []string{`id="error-5"`},
		},
		{
			name: "a turn stopped at the token limit",
			msg: shared.Message{ID: "7", AuthorType: shared.AuthorSystem, Type: shared.TypeStatus,
				Content: "Stopped: the model reached its output limit.", Metadata: &shared.Metadata{StopReason: shared.StopMaxTokens}},
			want: []string{`class="msg status status-warn"`, `data-message-id="7"`, "Stopped: the model reached its output limit."},
		},
		{
			name: "a cancelled turn is quiet",
			msg: shared.Message{ID: "8", AuthorType: shared.AuthorSystem, Type: shared.TypeStatus,
				Content: "The turn was cancelled.", Metadata: &shared.Metadata{StopReason: shared.StopCancelled}},
			want: []string{`class="msg status status-quiet"`, "The turn was cancelled."},
		},
		{
			name: "a pending permission request: one button per option, named by the agent",
			msg:  ask(shared.StatusPending, ""),
			want: []string{`class="msg perm perm-pending"`, `data-message-id="p1"`, `role="group"`, `aria-labelledby="perm-title-p1"`,
				`id="perm-title-p1"`, "The agent asks permission", "rm -rf build",
				`class="perm-option perm-allow"`, `data-option-id="yes"`, `>Allow once</button>`,
				`class="perm-option perm-reject"`, `data-option-id="no"`, `>Reject</button>`},
		},
		{
			name: "an answered permission request: the choice, no buttons",
			msg:  ask(shared.StatusSelected, "no"),
			want: []string{"perm-selected", "Answered: Reject"},
			not:  []string{"<button"},
		},
		{
			name: "a cancelled permission request: no buttons",
			msg:  ask(shared.StatusCancelled, ""),
			want: []string{"perm-cancelled", "Not answered: the request was withdrawn"},
			not:  []string{"<button"},
		},
		{
			name: "a plan is a checklist",
			msg: shared.Message{ID: "9", AuthorType: shared.AuthorAgent, Type: shared.TypePlan, Content: "Plan: 1 of 2 steps done",
				Metadata: &shared.Metadata{Entries: []shared.PlanEntry{{Content: "Read the code", Priority: "low", Status: "completed"},
					{Content: "Fix <the> bug", Priority: "high", Status: "in_progress"}}}},
			want: []string{`class="msg plan"`, `data-message-id="9"`, "Plan: 1 of 2 steps done", `class="plan-entry plan-completed"`,
				"done: ", "Read the code", `class="plan-entry plan-in_progress"`, "in progress: ", "Fix &lt;the&gt; bug", "high priority"},
		},
		{
			name: "an agent's reply offers Fork from here, beside it",
			msg:  shared.Message{ID: "r1", AuthorType: shared.AuthorAgent, Type: shared.TypeMessage, Content: "Done."},
			want: []string{`class="reply"`, `class="msg agent"`, `data-message-id="r1"`, `class="fork-here"`, "Fork from here"},
		},
		{
			name: "a pending sign-in: its command, a link that types it, Retry",
			msg: shared.Message{ID: "s9", AuthorType: shared.AuthorSystem, Type: shared.TypeSignIn, Content: "The agent asks you to sign in.",
				Metadata: &shared.Metadata{Status: shared.StatusPending, SignIn: []shared.SignInMethod{{ID: "login", Name: "Log in", Command: "agent --login 'a&b'"}}}},
			want: []string{`class="msg sign-in"`, "Log in", "agent --login &#39;a&amp;b&#39;",
				`href="/web/terminal.html?session_id=s1&type=agent+--login+%27a%26b%27"`, "Retry"},
		},
		{
			name: "a settled sign-in: what became of it, no link",
			msg: shared.Message{ID: "s9", AuthorType: shared.AuthorSystem, Type: shared.TypeSignIn, Content: "The agent asks you to sign in.",
				Metadata: &shared.Metadata{Status: shared.StatusCancelled, SignIn: []shared.SignInMethod{{ID: "login", Name: "Log in", Command: "agent --login"}}}},
			want: []string{"The agent stopped before the sign-in."},
			not:  []string{"<a ", "<button"},
		},
		{
			name: "tool call that is not a shell command",
			msg: shared.Message{ID: "5", AuthorType: shared.AuthorAgent, Type: shared.TypeToolCall, Content: "x",
				Metadata: &shared.Metadata{Title: "Read main.go", Status: shared.StatusCompleted}},
			want: []string{`class="msg tool"`, "Read main.go", "Done", "icon-succeeded"},
			not:  []string{"disclosure"},
		},
		{
			name: "shell command",
			msg: shared.Message{ID: "6", AuthorType: shared.AuthorAgent, Type: shared.TypeToolExecute,
				Metadata: &shared.Metadata{Status: shared.StatusRunning, Normalized: &shared.Normalized{
					Kind: shared.NormalizedShellExec, ShellExec: &shared.ShellExec{Command: "make test"}}}},
			want: []string{"cmd-running", "make test", "Running"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			html := app.HTMLString(renderMessage("s1", "", tt.msg))
			checkHTML(t, html, tt.want, tt.not)
		})
	}
}

// ask is a permission request in the given state, with the agent's two options.
func ask(status shared.ToolStatus, selected string) shared.Message {
	return shared.Message{ID: "p1", AuthorType: shared.AuthorAgent, Type: shared.TypePermissionRequest, Content: "rm -rf build",
		Metadata: &shared.Metadata{ToolCallID: "c1", Title: "rm -rf build", Status: status, SelectedOptionID: selected,
			Options: []shared.PermissionOption{{OptionID: "yes", Name: "Allow once", Kind: "allow_once"}, {OptionID: "no", Name: "Reject", Kind: "reject_once"}}}}
}

// An empty session invites a command from the built-in shell agent's person, a request
// from any other agent's.
func TestEmptyHint(t *testing.T) {
	for agent, want := range map[string]string{
		"shell":  "No messages yet. Type a shell command below.",
		"gemini": "No messages yet. Tell the agent what to do below.",
	} {
		if got := emptyHint(&shared.Session{Agent: agent}); got != want {
			t.Errorf("%s: %q, want %q", agent, got, want)
		}
	}
}
