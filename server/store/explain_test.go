package store

import (
	"context"
	"strings"
	"testing"

	"conch/shared"
)

// scans is whether a plan step reads a whole table: SQLite's "SCAN t", PostgreSQL's
// "Seq Scan on t" (which Explain prices out, so that it remains only where no index serves).
func scans(step string) bool {
	return strings.HasPrefix(step, "SCAN") || strings.Contains(step, "Seq Scan")
}

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
		if _, err := s.ListMessages(ctx, shared.ListRequest{SessionID: sess.ID, Sort: shared.SortDesc}); err != nil {
			return err
		}
		if _, err := s.ListMessages(ctx, shared.ListRequest{SessionID: sess.ID, Before: ids[1], Sort: shared.SortDesc}); err != nil {
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
			if scans(step) {
				t.Errorf("%s\n  scans: %s", p.SQL, step)
			}
		}
	}
	// session, page; session, cursor, page; snapshot
	if len(plans) != 6 {
		t.Fatalf("%d plans, want 6:\n%s", len(plans), strings.Join(read, "\n"))
	}
	if !strings.Contains(strings.Join(plans[1].Steps, "\n"), "idx_messages_session_seq") {
		t.Errorf("a list page does not walk idx_messages_session_seq: %v", plans[1].Steps)
	}
}

// Start-up recovery searches partial indexes of what is unfinished and live, so its cost
// follows the live work, not the size of the database (a scan would also map every page
// of the file into the process). Reverting a query to a bound parameter (status IN ?)
// makes SQLite scan again and fails this test.
func TestRecoveryUsesIndexes(t *testing.T) {
	s, _ := open(t, 0)
	ctx := context.Background()
	sess := newSession(t, s)
	addText(t, s, sess.ID, 3)
	for _, st := range []shared.ToolStatus{shared.StatusRunning, shared.StatusCompleted} {
		if _, err := s.CreateMessage(ctx, NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent,
			Type: shared.TypeToolExecute, Content: "ls", Metadata: shellMeta(st)}); err != nil {
			t.Fatal(err)
		}
	}
	plans, err := s.Explain(ctx, func(ctx context.Context) error { _, err := s.Sweep(ctx); return err })
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, p := range plans {
		all = append(all, p.SQL+"\n  "+strings.Join(p.Steps, "\n  "))
		for _, step := range p.Steps {
			if scans(step) {
				t.Errorf("recovery scans a table:\n%s\n  %s", p.SQL, step)
			}
		}
	}
	// The leases, the sessions, the commands, the distinct sessions of unfinished calls, the
	// cancelled call's row, its update, the session read back.
	if len(plans) < 4 {
		t.Fatalf("%d plans, want the recovery's queries and updates:\n%s", len(plans), strings.Join(all, "\n"))
	}
}

// The partial indexes' conditions are literals: they must name exactly the unfinished
// tool statuses and the live session states.
func TestPartialIndexConditions(t *testing.T) {
	for _, st := range []shared.ToolStatus{shared.StatusPending, shared.StatusRunning, shared.StatusCompleted, shared.StatusFailed, shared.StatusCancelled} {
		if got := strings.Contains(unfinished, "'"+string(st)+"'"); got == st.IsTerminal() {
			t.Errorf("%s in %q: %v, want %v", st, unfinished, got, !st.IsTerminal())
		}
	}
	for _, st := range []shared.SessionState{shared.SessionStarting, shared.SessionReady, shared.SessionRunning, shared.SessionFailed, shared.SessionClosed} {
		isLive := st != shared.SessionFailed && st != shared.SessionClosed
		if got := strings.Contains(live, "'"+string(st)+"'"); got != isLive {
			t.Errorf("%s in %q: %v, want %v", st, live, got, isLive)
		}
	}
}

// On PostgreSQL a statement run after settings that change its plan (dialect.forceIndex,
// which output search runs before its index query) is explained after the same settings.
func TestExplainPlansAfterTheSetup(t *testing.T) {
	s, _ := open(t, 0)
	if s.dialect.sqlite {
		t.Skip("no SQLite statement runs after a setup")
	}
	ctx := context.Background()
	const setup = "SELECT set_config('enable_indexonlyscan', 'off', true)"
	plans, err := s.Explain(ctx, func(ctx context.Context) error {
		for _, c := range []context.Context{ctx, withSetup(ctx, setup)} {
			var ids []string
			if err := s.db.WithContext(c).Raw("SELECT id FROM tasks WHERE id = ?", "x").Scan(&ids).Error; err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || len(plans) != 2 {
		t.Fatalf("%d plans, %v", len(plans), err)
	}
	alone, after := strings.Join(plans[0].Steps, "\n"), strings.Join(plans[1].Steps, "\n")
	if only := "Index Only Scan"; !strings.Contains(alone, only) || strings.Contains(after, only) {
		t.Errorf("the plan alone:\n%s\nafter the setup:\n%s\nwant an index-only scan alone and none after", alone, after)
	}
}
