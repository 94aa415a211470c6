package store

import (
	"context"
	"strings"
	"testing"

	"conch/shared"
)

func askMeta() *shared.Metadata {
	return &shared.Metadata{ToolCallID: "call-1", Title: "rm -rf build", Status: shared.StatusPending,
		Options: []shared.PermissionOption{{OptionID: "yes", Name: "Allow", Kind: "allow_once"}, {OptionID: "no", Name: "Deny", Kind: "reject_once"}}}
}

func addAsk(t *testing.T, s *Store, sessionID string) shared.Message {
	t.Helper()
	m, err := s.CreateMessage(context.Background(), NewMessage{SessionID: sessionID, AuthorType: shared.AuthorAgent,
		Type: shared.TypePermissionRequest, Content: "rm -rf build", Metadata: askMeta()})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// An answer is taken once, for an option the request offers, for a permission request of
// that session only; every refusal changes nothing.
func TestAnswerPermission(t *testing.T) {
	s, _ := open(t, 1)
	ctx := context.Background()
	sess, other := newSession(t, s), newSession(t, s)
	ask := addAsk(t, s, sess.ID)
	text := addText(t, s, sess.ID, 1)[0]

	for _, tt := range []struct {
		name, session, message, option, code string
	}{
		{"unknown message", sess.ID, "nope", "yes", shared.CodeNotFound},
		{"another session's", other.ID, ask.ID, "yes", shared.CodeNotFound},
		{"not a permission request", sess.ID, text.ID, "yes", shared.CodeNotFound},
		{"an option not offered", sess.ID, ask.ID, "maybe", shared.CodeInvalid},
	} {
		if _, _, err := s.AnswerPermission(ctx, tt.session, tt.message, tt.option); shared.ErrorCode(err) != tt.code {
			t.Errorf("%s: %v, want %s", tt.name, err, tt.code)
		}
	}
	if got := listed(t, s, sess.ID, ask.ID); got.Metadata.Status != shared.StatusPending || !got.UpdatedAt.Equal(ask.UpdatedAt) {
		t.Fatalf("refused answers changed the request: %+v", got.Metadata)
	}
	tasks, err := s.ListTasks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		if task.NeedsAttention != (task.ID == sess.TaskID) {
			t.Errorf("task %s needs_attention = %v", task.ID, task.NeedsAttention)
		}
	}

	m, _, err := s.AnswerPermission(ctx, sess.ID, ask.ID, "no")
	if err != nil {
		t.Fatal(err)
	}
	if m.Metadata.Status != shared.StatusSelected || m.Metadata.SelectedOptionID != "no" || !m.UpdatedAt.After(ask.UpdatedAt) {
		t.Errorf("answered: %+v", m.Metadata)
	}
	if got := listed(t, s, sess.ID, ask.ID); got.Metadata.SelectedOptionID != "no" || !got.UpdatedAt.Equal(m.UpdatedAt) {
		t.Errorf("listed after the answer: %+v", got.Metadata)
	}
	_, _, err = s.AnswerPermission(ctx, sess.ID, ask.ID, "yes")
	if shared.ErrorCode(err) != shared.CodeConflict || shared.ErrorMessage(err) != "permission request is not pending" {
		t.Errorf("second answer: %v", err)
	}
	// A cancel racing the answer (the session ended) never turns selected into cancelled.
	if msgs, err := s.CancelActiveToolCalls(ctx, sess.ID); err != nil || len(msgs) != 0 {
		t.Errorf("CancelActiveToolCalls after the answer: %d changed, %v", len(msgs), err)
	}
	if got := listed(t, s, sess.ID, ask.ID); got.Metadata.Status != shared.StatusSelected {
		t.Errorf("after the sweep: %s", got.Metadata.Status)
	}
	if tasks, _ := s.ListTasks(ctx); tasks[0].NeedsAttention || tasks[1].NeedsAttention {
		t.Error("a task still needs attention after the answer")
	}
	// The runtime withdraws an answered request whose answer never reached the agent: it
	// ends cancelled, with no option chosen, once.
	for i, want := range []bool{true, false} {
		m, changed, err := s.CancelPermission(ctx, sess.ID, ask.ID)
		if err != nil || changed != want || m.Metadata.Status != shared.StatusCancelled || m.Metadata.SelectedOptionID != "" {
			t.Errorf("withdrawal %d of an answered request: %+v changed %v, %v", i+1, m.Metadata, changed, err)
		}
	}
}

// Cancelling ends a pending request once; a restart leaves none pending.
func TestCancelPermissionAndRecovery(t *testing.T) {
	s, _ := open(t, 1)
	ctx := context.Background()
	sess := newSession(t, s)
	first, second := addAsk(t, s, sess.ID), addAsk(t, s, sess.ID)
	m, changed, err := s.CancelPermission(ctx, sess.ID, first.ID)
	if err != nil || !changed || m.Metadata.Status != shared.StatusCancelled || m.Metadata.SelectedOptionID != "" {
		t.Fatalf("cancel: %+v %v %v", m.Metadata, changed, err)
	}
	if _, changed, _ := s.CancelPermission(ctx, sess.ID, first.ID); changed {
		t.Error("a second cancel changed it again")
	}
	if _, _, err := s.CancelPermission(ctx, sess.ID, "nope"); shared.ErrorCode(err) != shared.CodeNotFound {
		t.Errorf("cancel of an unknown message: %v", err)
	}
	if _, _, err := s.AnswerPermission(ctx, sess.ID, first.ID, "yes"); shared.ErrorCode(err) != shared.CodeConflict {
		t.Errorf("answer after cancel: %v", err)
	}
	if _, err := s.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if got := listed(t, s, sess.ID, second.ID); got.Metadata.Status != shared.StatusCancelled {
		t.Errorf("after a restart the request is %s", got.Metadata.Status)
	}
	tasks, err := s.ListTasks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if tasks[0].NeedsAttention {
		t.Error("needs attention after a restart")
	}
}

// The tasks list finds tasks needing attention through the partial index of unfinished
// rows, not by scanning the messages.
func TestNeedsAttentionUsesIndex(t *testing.T) {
	s, _ := open(t, 1)
	ctx := context.Background()
	addAsk(t, s, newSession(t, s).ID)
	plans, err := s.Explain(ctx, func(ctx context.Context) error { _, err := s.ListTasks(ctx); return err })
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range plans {
		if !strings.Contains(p.SQL, "permission_request") {
			continue
		}
		found = true
		if steps := strings.Join(p.Steps, "\n"); !strings.Contains(steps, "idx_messages_unfinished") {
			t.Errorf("%s\n  %s", p.SQL, steps)
		}
	}
	if !found {
		t.Fatal("no query of permission requests in ListTasks")
	}
}

func listed(t *testing.T, s *Store, sessionID, id string) shared.Message {
	t.Helper()
	page, err := s.ListMessages(context.Background(), shared.ListRequest{SessionID: sessionID})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range page.Messages {
		if m.ID == id {
			return m
		}
	}
	t.Fatalf("message %s not listed", id)
	return shared.Message{}
}
