package store

import (
	"context"
	"strings"
	"testing"

	"conch/shared"
)

// An import is a session ready, stopped, resumable and owned by no replica, with its note
// as its first message; the task then holds the agent's id. A bad id or way to resume, an
// unknown task, or an id the task holds for that agent already change nothing.
func TestImportAgentSession(t *testing.T) {
	s, _ := open(t, 0)
	ctx := context.Background()
	task, err := s.CreateTask(ctx, "task", "")
	if err != nil {
		t.Fatal(err)
	}
	sess, note, err := s.ImportAgentSession(ctx, task.ID, "claude", "/work", "abc-1", ResumeBy, "Imported abc-1.")
	if err != nil {
		t.Fatal(err)
	}
	if sess.TaskID != task.ID || sess.State != shared.SessionReady || !sess.Stopped || !sess.Resumable || sess.Cwd != "/work" ||
		note.SessionID != sess.ID || note.Content != "Imported abc-1." || note.Type != shared.TypeStatus {
		t.Fatalf("session %+v, note %+v", sess, note)
	}
	if id, by, _ := s.AgentSession(ctx, sess.ID); id != "abc-1" || by != ResumeBy {
		t.Errorf("agent session %q by %q", id, by)
	}
	if err := s.ClaimSession(ctx, sess.ID); err != nil {
		t.Errorf("no replica may claim it: %v", err)
	}
	for _, tt := range []struct {
		name, task, agent, id, by, code string
	}{
		{"held already", task.ID, "claude", "abc-1", LoadBy, shared.CodeConflict},
		{"no id", task.ID, "claude", "", ResumeBy, shared.CodeInvalid},
		{"a control character", task.ID, "claude", "a\nb", ResumeBy, shared.CodeInvalid},
		{"too long", task.ID, "claude", strings.Repeat("a", MaxAgentSessionBytes+1), ResumeBy, shared.CodeInvalid},
		{"no way to resume", task.ID, "claude", "abc-2", "", shared.CodeInvalid},
		{"unknown task", "nope", "claude", "abc-2", ResumeBy, shared.CodeNotFound},
	} {
		if _, _, err := s.ImportAgentSession(ctx, tt.task, tt.agent, "/work", tt.id, tt.by, "x"); shared.ErrorCode(err) != tt.code {
			t.Errorf("%s: %v, want %s", tt.name, err, tt.code)
		}
	}
	if _, _, err := s.ImportAgentSession(ctx, task.ID, "codex", "/work", "abc-1", LoadBy, "Imported."); err != nil {
		t.Errorf("the same id of another agent: %v", err)
	}
	held, err := s.HeldAgentSessions(ctx, task.ID, "claude")
	if err != nil || len(held) != 1 || held["abc-1"] != sess.ID {
		t.Errorf("held %v, %v", held, err)
	}
	if ids, _ := s.TaskSessions(ctx, task.ID); len(ids) != 2 {
		t.Errorf("sessions %q", ids)
	}
}
