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
			name: "agent text",
			msg:  shared.Message{ID: "2", AuthorType: shared.AuthorAgent, Type: shared.TypeMessage, Content: "exit 0 in 0.1s"},
			want: []string{`class="msg agent"`, "exit 0 in 0.1s"},
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
			html := app.HTMLString(renderMessage("s1", tt.msg))
			checkHTML(t, html, tt.want, tt.not)
		})
	}
}
