package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"conch/server/internal/pgtest"
	"conch/shared"
)

// legacySteps is how many leading steps a database made before schema_version may have
// taken (detect): those up to the first without a column.
func legacySteps() int {
	return slices.IndexFunc(steps, func(st step) bool { return st.column == "" })
}

// A database at every version, made by the steps up to it (and, as one made before
// schema_version, without its version row), opens at the last version with its rows:
// its schema is a new database's, its task and output are there, its messages keep their
// created order and a new one comes after them.
func TestMigrateFromEveryVersion(t *testing.T) {
	ctx := context.Background()
	fresh, _ := open(t, time.Millisecond)
	want := schemaOf(t, fresh)
	for n := range len(steps) + 1 {
		for _, legacy := range []bool{false, true} {
			if legacy && (n == 0 || n > legacySteps()) {
				continue // no tables: a new database; or steps no database without schema_version took
			}
			t.Run(fmt.Sprintf("version %d legacy %v", n, legacy), func(t *testing.T) {
				path := pgtest.DSN(t)
				old, err := connect(path, nil)
				if err != nil {
					t.Fatal(err)
				}
				if legacy {
					err = applySteps(old.db, old.dialect, 0, n)
				} else {
					err = old.migrateTo(ctx, n)
				}
				if err != nil {
					t.Fatal(err)
				}
				var rows oldRows
				if n > 0 {
					rows = insertOldRows(t, old, n)
				}
				old.Close()

				s, err := Open(path, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				if got := schemaOf(t, s); !slices.Equal(got, want) {
					t.Errorf("schema differs from a new database's:\n got %q\nwant %q", got, want)
				}
				var version int
				if err := s.db.Raw("SELECT version FROM schema_version").Scan(&version).Error; err != nil || version != len(steps) {
					t.Errorf("schema version %d (%v), want %d", version, err, len(steps))
				}
				if n == 0 {
					return
				}
				if task, err := s.GetTask(ctx, rows.task); err != nil || task.Title != "old task" {
					t.Errorf("task: %+v (%v)", task, err)
				}
				// The search index is filled from the messages stored before it (the rows
				// of a version that has it are written past the store, so not indexed).
				indexed := slices.IndexFunc(steps, func(st step) bool { return st.table == "message_search" }) + 1
				for q, want := range map[string]string{"hello": rows.messages[0], "ls": rows.messages[1]} {
					if n >= indexed {
						break
					}
					page, err := s.Search(ctx, shared.SearchRequest{Query: q}, EveryTask)
					if err != nil || len(page.Results) != 1 || page.Results[0].MessageID != want {
						t.Errorf("search %q: %+v (%v), want message %s", q, page.Results, err, want)
					}
				}
				// The output index is filled from the outputs stored before it.
				if n < slices.IndexFunc(steps, func(st step) bool { return st.table == "output_search" })+1 {
					page, err := s.Search(ctx, shared.SearchRequest{Query: "warn"}, EveryTask)
					if err != nil || len(page.Results) != 1 || page.Results[0].Output == nil || page.Results[0].Output.Stream != "stderr" {
						t.Errorf("search warn: %+v (%v), want the old command's stderr", page.Results, err)
					}
				}
				// Replies stored before the server parsed markdown are parsed (the rows of a
				// version that parses are written past the store, so not parsed).
				parsing := slices.IndexFunc(steps, func(st step) bool { return st.table == "" }) + 1
				if parsing == 0 {
					t.Fatal("no step parses markdown")
				}
				if text, err := s.GetMessage(ctx, rows.messages[0]); err != nil || n < parsing && (text.Metadata == nil || treeText(text.Content, text.Metadata.Markdown) != "hello") {
					t.Errorf("the old reply: %+v (%v)", text.Metadata, err)
				}
				var early []string
				if err := s.db.Raw("SELECT id FROM messages WHERE updated_at < created_at").Scan(&early).Error; err != nil || len(early) > 0 {
					t.Errorf("messages updated before they were created: %v (%v)", early, err)
				}
				snap, err := s.GetShellOutput(ctx, rows.session, rows.messages[1])
				if err != nil || snap.Output.Stdout != "old é 🙂\n" || snap.Output.Stderr != "warn\n" {
					t.Errorf("output: %+v (%v)", snap.Output, err)
				}
				added, err := s.CreateMessage(ctx, NewMessage{SessionID: rows.session, AuthorType: shared.AuthorAgent,
					Type: shared.TypeMessage, Content: "new"})
				if err != nil {
					t.Fatal(err)
				}
				all, err := s.ListMessages(ctx, shared.ListRequest{SessionID: rows.session})
				if err != nil {
					t.Fatal(err)
				}
				after, err := s.ListMessages(ctx, shared.ListRequest{SessionID: rows.session, After: rows.messages[1]})
				if err != nil {
					t.Fatal(err)
				}
				if got, want := idsOf(all.Messages), append(rows.messages, added.ID); !slices.Equal(got, want) || all.Total != 3 {
					t.Errorf("lists %v of %d, want %v of 3", got, all.Total, want)
				}
				if got := idsOf(after.Messages); !slices.Equal(got, []string{added.ID}) {
					t.Errorf("lists %v after the last old message, want %v", got, added.ID)
				}
			})
		}
	}
}

// oldRows are the ids of what insertOldRows stored; messages in their created order.
type oldRows struct {
	task, session string
	messages      []string
}

// insertOldRows stores a task, a session and two messages (a shell command with output,
// then a text created before it) as version n's schema holds them. Before lists followed
// commit order, the session's count could be wrong: opening makes it right.
func insertOldRows(t *testing.T, s *Store, n int) oldRows {
	t.Helper()
	has := func(table, column string) bool {
		return slices.IndexFunc(steps[:n], func(st step) bool { return st.table == table && st.column == column }) >= 0
	}
	r := oldRows{task: newID(), session: newID()}
	command, text := newID(), newID()
	r.messages = []string{text, command} // the text was created first
	meta, err := json.Marshal(shellMeta(shared.StatusCompleted))
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr := "old é 🙂\n", "warn\n"
	exec := func(stmt string, args ...any) {
		if err := s.db.Exec(stmt, args...).Error; err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	count := 1
	if has("messages", "seq") {
		count = 2
	}
	exec("INSERT INTO tasks (id, title, created_at, updated_at) VALUES (?, 'old task', 1, 1)", r.task)
	exec("INSERT INTO task_sessions (id, task_id, agent, cwd, state, message_count, created_at, updated_at) VALUES (?, ?, 'shell', '/tmp', 'ready', ?, 1, 1)",
		r.session, r.task, count)
	// Times in nanoseconds, as the store writes them; a version before the repair step may
	// hold the seconds GORM wrote (the text's updated_at).
	base := time.Now().UnixNano()
	repaired := slices.IndexFunc(steps, func(st step) bool {
		return len(st.stmts) > 0 && strings.Contains(st.stmts[0], "SET updated_at = created_at")
	}) + 1
	if repaired == 0 {
		t.Fatal("no step repairs updated_at")
	}
	message := func(seq int, id string, typ shared.MessageType, content string, meta any, status string) {
		created, updated := base+int64(seq), base+int64(seq)
		if id == r.messages[0] && n < repaired {
			updated = base / int64(time.Second)
		}
		cols, args := "id, session_id, task_id, author_type, type, content, metadata, status, created_at, updated_at",
			[]any{id, r.session, r.task, shared.AuthorAgent, typ, content, meta, status, created, updated}
		if has("messages", "seq") {
			cols, args = cols+", seq", append(args, seq)
		}
		exec("INSERT INTO messages ("+cols+") VALUES (?"+strings.Repeat(", ?", len(args)-1)+")", args...)
	}
	message(2, command, shared.TypeToolExecute, "echo", string(meta), string(shared.StatusCompleted))
	message(1, text, shared.TypeMessage, "hello", nil, "")
	if has("shell_output_chunks", "message_id") {
		// Stored as text without positions: ending just before position 0 (putStream).
		for stream, data := range map[int]string{streamStdout: stdout, streamStderr: stderr} {
			exec("INSERT INTO shell_output_chunks (message_id, stream, start, kept_from, data) VALUES (?, ?, ?, ?, ?)",
				command, stream, -len(data), -len(data), []byte(data))
		}
	} else {
		exec("INSERT INTO shell_outputs (message_id, stdout, stderr) VALUES (?, ?, ?)", command, stdout, stderr)
	}
	return r
}

func idsOf(ms []shared.Message) []string {
	var ids []string
	for _, m := range ms {
		ids = append(ids, m.ID)
	}
	return ids
}

// schemaOf lists s's columns (with their types, nullability and defaults) and indexes.
func schemaOf(t *testing.T, s *Store) []string {
	t.Helper()
	queries := []string{
		`SELECT m.name || '.' || p.name || ' ' || p.type || ' ' || p."notnull" || ' ' || COALESCE(p.dflt_value, '')
			FROM sqlite_master AS m JOIN pragma_table_info(m.name) AS p WHERE m.type = 'table'`,
		`SELECT 'index ' || name FROM sqlite_master WHERE type = 'index'`,
	}
	if !s.dialect.sqlite {
		queries = []string{
			`SELECT table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || COALESCE(column_default, '')
				FROM information_schema.columns WHERE table_schema = current_schema()`,
			`SELECT 'index ' || indexname FROM pg_indexes WHERE schemaname = current_schema()`,
		}
	}
	var all []string
	for _, q := range queries {
		var lines []string
		if err := s.db.Raw(q).Scan(&lines).Error; err != nil {
			t.Fatal(err)
		}
		all = append(all, lines...)
	}
	slices.Sort(all)
	return all
}

// Opening an up-to-date database reads its version and nothing else of the schema.
func TestMigrateUpToDate(t *testing.T) {
	s, _ := open(t, time.Millisecond)
	plans, err := s.Explain(context.Background(), s.migrate)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range plans {
		if !strings.Contains(p.SQL, "schema_version") && !strings.Contains(p.SQL, "pg_advisory_xact_lock") {
			t.Errorf("migrating an up-to-date database ran %s", p.SQL)
		}
	}
	if len(plans) == 0 {
		t.Error("no statements recorded")
	}
}

// A database of a newer server is refused, not changed.
func TestMigrateRefusesNewerSchema(t *testing.T) {
	s, path := open(t, time.Millisecond)
	if err := s.db.Exec("UPDATE schema_version SET version = ?", len(steps)+1).Error; err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := Open(path, nil); err == nil || !strings.Contains(err.Error(), "newer than this server's") {
		t.Fatalf("opening a newer schema: %v", err)
	}
}

// BenchmarkMigrate is the migration's cost at every start, on an up-to-date database.
func BenchmarkMigrate(b *testing.B) {
	s, _ := open(b, 0)
	for b.Loop() {
		if err := s.migrate(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}
