package store

import (
	"context"
	"strings"
	"testing"

	"conch/shared"
)

// The hot reads walk an index: a list page, a page from a cursor and a snapshot never
// scan the messages table, whatever its size.
func TestExplainHotReads(t *testing.T) {
	s, _ := open(t, 0)
	sess := newSession(t, s)
	ctx := context.Background()
	var ids []string
	for range 3 {
		m, err := s.CreateMessage(ctx, NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent, Type: shared.TypeMessage, Content: "x"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	plans, err := s.Explain(ctx, func(ctx context.Context) error {
		if _, err := s.ListMessages(ctx, sess.ID, ListQuery{Sort: shared.SortDesc}); err != nil {
			return err
		}
		if _, err := s.ListMessages(ctx, sess.ID, ListQuery{Before: ids[1], Sort: shared.SortDesc}); err != nil {
			return err
		}
		_, err := s.GetShellOutput(ctx, sess.ID, ids[0])
		if err == nil || !strings.Contains(err.Error(), "not found") {
			t.Errorf("GetShellOutput of a text message: %v, want not found", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var read []string
	for _, p := range plans {
		read = append(read, p.SQL)
		for _, step := range p.Steps {
			if strings.HasPrefix(step, "SCAN") {
				t.Errorf("%s\n  scans: %s", p.SQL, step)
			}
		}
	}
	// session, page; session, cursor, page; snapshot
	if len(plans) != 6 {
		t.Fatalf("%d plans, want 6:\n%s", len(plans), strings.Join(read, "\n"))
	}
	if !strings.Contains(strings.Join(plans[1].Steps, "\n"), "idx_messages_session_order") {
		t.Errorf("a list page does not walk idx_messages_session_order: %v", plans[1].Steps)
	}
}
