package store

import (
	"context"
	"testing"

	"conch/shared"
)

// A refused prompt binds no file (they stay pending, for the next prompt); a sent one
// binds them in its order; a task's files go with it.
func TestAttachmentsBoundThenDeletedWithTheTask(t *testing.T) {
	s, _ := open(t, 0)
	ctx := context.Background()
	sess := newSession(t, s)
	if _, err := s.SetPromptCapabilities(ctx, sess.ID, shared.PromptCapabilities{EmbeddedContext: true}); err != nil {
		t.Fatal(err)
	}
	a, err := s.CreateAttachment(ctx, sess.ID, "a.txt", "text/plain", []byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.CreateAttachment(ctx, sess.ID, "b.txt", "text/plain", []byte("b"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := s.AddUserMessage(ctx, sess.ID, "look", "", "", b.ID, "no-such-file"); shared.ErrorCode(err) != shared.CodeNotFound {
		t.Fatalf("a prompt with an unknown file: %v", err)
	}
	count := func(where string, args ...any) int64 {
		var n int64
		if err := s.db.Model(&attachmentRow{}).Where(where, args...).Count(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count("message_id IS NULL"); n != 2 {
		t.Fatalf("%d files pending after a refused prompt, want 2", n)
	}
	msg, _, _, err := s.AddUserMessage(ctx, sess.ID, "look", "", "", b.ID, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.PromptAttachments(ctx, msg.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Attachment != b || got[1].Attachment != a || string(got[0].Data) != "b" {
		t.Fatalf("the prompt's files: %+v", got)
	}
	if _, err := s.DeleteTask(ctx, sess.TaskID); err != nil {
		t.Fatal(err)
	}
	if n := count("1 = 1"); n != 0 {
		t.Errorf("%d files left after their task was deleted", n)
	}
}
