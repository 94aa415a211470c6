package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"conch/server/internal/pgtest"
	"conch/shared"
)

// EndTurn stores the stop reason on the session; any reason but end_turn adds one status
// message, counted in the session's total. An unknown session changes nothing.
func TestEndTurn(t *testing.T) {
	s, _ := open(t, 1)
	ctx := context.Background()
	sess := newSession(t, s)
	if m, err := s.EndTurn(ctx, sess.ID, shared.StopEndTurn); err != nil || m != nil {
		t.Fatalf("end_turn: %+v, %v", m, err)
	}
	m, err := s.EndTurn(ctx, sess.ID, shared.StopMaxTokens)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(m)
	want := `{"id":"` + m.ID + `","session_id":"` + sess.ID + `","task_id":"` + sess.TaskID +
		`","author_type":"system","type":"status","content":"Stopped: the model reached its output limit.",` +
		`"metadata":{"stop_reason":"max_tokens"},"created_at":"` + m.CreatedAt.Format("2006-01-02T15:04:05.999999999Z07:00") +
		`","updated_at":"` + m.UpdatedAt.Format("2006-01-02T15:04:05.999999999Z07:00") + `"}`
	if string(got) != want {
		t.Errorf("status message\n got %s\nwant %s", got, want)
	}
	after, err := s.GetSession(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.LastStopReason != shared.StopMaxTokens || !after.UpdatedAt.After(sess.UpdatedAt) {
		t.Errorf("session after: %+v", after)
	}
	page, err := s.ListMessages(ctx, shared.ListRequest{SessionID: sess.ID})
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != 1 || len(page.Messages) != 1 || page.Messages[0].ID != m.ID {
		t.Errorf("listed %+v", page)
	}
	if _, err := s.EndTurn(ctx, "nope", shared.StopRefusal); shared.ErrorCode(err) != shared.CodeNotFound {
		t.Errorf("unknown session: %v", err)
	}
}

// A database made before last_stop_reason existed gains the column when opened, keeping
// its sessions; opening it again changes nothing.
func TestOpenAddsColumnsToOlderDatabases(t *testing.T) {
	pgtest.SQLiteOnly(t, "an older SQLite file; TestOpenAddsOutputColumns covers both")
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`CREATE TABLE tasks (id TEXT PRIMARY KEY, title TEXT NOT NULL, description TEXT NOT NULL DEFAULT '',
			created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL)`,
		`CREATE TABLE task_sessions (id TEXT PRIMARY KEY, task_id TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
			agent TEXT NOT NULL, cwd TEXT NOT NULL, state TEXT NOT NULL, error TEXT NOT NULL DEFAULT '',
			message_count INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL)`,
		`INSERT INTO tasks VALUES ('t1', 'old', '', 1, 1)`,
		`INSERT INTO task_sessions VALUES ('s1', 't1', 'shell', '/tmp', 'closed', '', 0, 1, 1)`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	for range 2 {
		s, err := Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		sess, err := s.GetSession(context.Background(), "s1")
		s.Close()
		if err != nil || sess.State != shared.SessionClosed || sess.LastStopReason != "" {
			t.Fatalf("old session: %+v, %v", sess, err)
		}
	}
}

// The modes and commands an agent offers are stored on its session and come back with it;
// an empty list of commands clears them.
func TestSessionModesAndCommands(t *testing.T) {
	s, _ := open(t, 1)
	ctx := context.Background()
	sess := newSession(t, s)
	modes := shared.Modes{Current: "ask", Available: []shared.SessionMode{{ID: "ask", Name: "Ask"}, {ID: "code", Name: "Code", Description: "edits files"}}}
	if _, err := s.SetSessionModes(ctx, sess.ID, modes); err != nil {
		t.Fatal(err)
	}
	got, err := s.SetSessionCommands(ctx, sess.ID, []shared.Command{{Name: "review", Description: "Review the diff", Hint: "branch"}})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(struct {
		M *shared.Modes    `json:"modes"`
		C []shared.Command `json:"commands"`
	}{got.Modes, got.Commands})
	if want := `{"modes":{"current":"ask","available":[{"id":"ask","name":"Ask"},{"id":"code","name":"Code","description":"edits files"}]},` +
		`"commands":[{"name":"review","description":"Review the diff","hint":"branch"}]}`; string(raw) != want {
		t.Errorf("got %s\nwant %s", raw, want)
	}
	if got, _ := s.SetSessionCommands(ctx, sess.ID, nil); got.Commands != nil || got.Modes == nil {
		t.Errorf("cleared commands: %+v", got)
	}
	if tasks, err := s.ListTasks(ctx); err != nil || tasks[0].Sessions[0].Modes != nil || tasks[0].Sessions[0].State != sess.State {
		t.Errorf("the task list carries modes: %+v, %v", tasks, err)
	}
	if _, err := s.SetSessionModes(ctx, "nope", modes); shared.ErrorCode(err) != shared.CodeNotFound {
		t.Errorf("unknown session: %v", err)
	}
}
