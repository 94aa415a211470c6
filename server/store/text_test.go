package store

import (
	"context"
	"testing"
	"time"

	"conch/shared"
)

// Both databases keep the same text: what people send with a NUL byte or invalid UTF-8
// is refused and changes nothing; what agents and the server produce is stored with such
// bytes replaced (PostgreSQL refuses them in a text column).
func TestTextIsStorable(t *testing.T) {
	s, _ := open(t, time.Millisecond)
	ctx := context.Background()
	sess := newSession(t, s)
	for _, tt := range []struct {
		name, want string
		call       func() error
	}{
		{"title", "title contains a NUL character", func() error { _, err := s.CreateTask(ctx, "a\x00b", ""); return err }},
		{"description", "description is not valid UTF-8", func() error { _, err := s.CreateTask(ctx, "t", "\xff"); return err }},
		{"cwd", "cwd contains a NUL character", func() error { _, err := s.CreateSession(ctx, sess.TaskID, "shell", "/tmp\x00"); return err }},
		{"client id", "client_message_id contains a NUL character", func() error {
			_, _, _, err := s.AddUserMessage(ctx, sess.ID, "hi", "c\x00", "")
			return err
		}},
	} {
		if err := tt.call(); shared.ErrorCode(err) != shared.CodeInvalid || shared.ErrorMessage(err) != tt.want {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
	if tasks, err := s.ListTasks(ctx); err != nil || len(tasks) != 1 || len(tasks[0].Sessions) != 1 {
		t.Errorf("a refusal stored something: %+v, %v", tasks, err)
	}
	if page, _ := s.ListMessages(ctx, shared.ListRequest{SessionID: sess.ID}); page.Total != 0 {
		t.Errorf("a refused prompt was stored: %+v", page)
	}

	m, err := s.CreateMessage(ctx, NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent, Type: shared.TypeMessage, Content: "a\x00b\xffc"})
	if err != nil || m.Content != "a\uFFFDb\uFFFDc" {
		t.Errorf("agent text: %q, %v", m.Content, err)
	}
	m, _, err = s.UpdateMessage(ctx, m.ID, Update{Content: new("d\x00")})
	if got, _ := s.GetMessage(ctx, m.ID); err != nil || got.Content != "d\uFFFD" || m.Content != got.Content {
		t.Errorf("agent text updated: %q, stored %q, %v", m.Content, got.Content, err)
	}
	if got, err := s.SetSessionState(ctx, sess.ID, shared.SessionFailed, "exit\x00"); err != nil || got.Error != "exit\uFFFD" {
		t.Errorf("session error: %q, %v", got.Error, err)
	}
}
