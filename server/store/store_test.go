package store

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"conch/server/internal/clocktest"
	"conch/server/internal/pgtest"
	"conch/shared"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// open opens a store on a new database: a SQLite file, or PostgreSQL when
// CONCH_TEST_DB=postgres (pgtest.DSN); path opens it again.
func open(t testing.TB, step time.Duration) (*Store, string) {
	t.Helper()
	path := pgtest.DSN(t)
	c := clocktest.New(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC), step) // step 0 freezes time, so that ordering ties happen
	s, err := Open(path, c.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

func newSession(t *testing.T, s *Store) shared.Session {
	t.Helper()
	ctx := context.Background()
	task, err := s.CreateTask(ctx, "task", "")
	if err != nil {
		t.Fatal(err)
	}
	sess, err := s.CreateSession(ctx, task.ID, "shell", "/tmp")
	if err != nil {
		t.Fatal(err)
	}
	return sess
}

func shellMeta(status shared.ToolStatus) *shared.Metadata {
	return &shared.Metadata{ToolCallID: "call-1", Title: "ls", Status: status, Kind: "execute",
		Normalized: &shared.Normalized{Kind: shared.NormalizedShellExec,
			ShellExec: &shared.ShellExec{Command: "ls", WorkDir: "/tmp"}}}
}

func addText(t *testing.T, s *Store, sessionID string, n int) []shared.Message {
	t.Helper()
	var out []shared.Message
	for i := 0; i < n; i++ {
		m, err := s.CreateMessage(context.Background(), NewMessage{SessionID: sessionID,
			AuthorType: shared.AuthorAgent, Type: shared.TypeMessage, Content: string(rune('a' + i))})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func ids(ms []shared.Message) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString(m.Content)
	}
	return b.String()
}

func TestPagination(t *testing.T) {
	for _, step := range []time.Duration{time.Millisecond, 0} { // 0: every created_at ties
		s, _ := open(t, step)
		sess := newSession(t, s)
		msgs := addText(t, s, sess.ID, 7) // contents a..g in creation order
		ctx := context.Background()
		tests := []struct {
			q        shared.ListRequest
			want     string
			hasMore  bool
			wantLast string
		}{
			{shared.ListRequest{}, "abcdefg", false, "g"},
			{shared.ListRequest{Limit: new(3)}, "abc", true, "c"},
			{shared.ListRequest{Limit: new(3), Sort: "desc"}, "gfe", true, "e"},
			{shared.ListRequest{Limit: new(3), After: msgs[2].ID}, "def", true, "f"},
			{shared.ListRequest{Limit: new(3), After: msgs[4].ID}, "fg", false, "g"},
			{shared.ListRequest{Limit: new(3), Before: msgs[4].ID, Sort: "desc"}, "dcb", true, "b"},
			{shared.ListRequest{Limit: new(3), Before: msgs[2].ID, Sort: "desc"}, "ba", false, "a"},
			{shared.ListRequest{Limit: new(2), Before: msgs[4].ID}, "cd", true, "d"},
			{shared.ListRequest{Limit: new(2), After: msgs[1].ID, Sort: "desc"}, "dc", true, "c"},
			{shared.ListRequest{After: msgs[6].ID}, "", false, ""},
			{shared.ListRequest{Limit: new(900)}, "abcdefg", false, "g"},
		}
		for _, tt := range tests {
			tt.q.SessionID = sess.ID
			page, err := s.ListMessages(ctx, tt.q)
			if err != nil {
				t.Fatalf("step %v %+v: %v", step, tt.q, err)
			}
			last := ""
			if page.Cursor != "" {
				for _, m := range msgs {
					if m.ID == page.Cursor {
						last = m.Content
					}
				}
			}
			if got := ids(page.Messages); got != tt.want || page.HasMore != tt.hasMore || last != tt.wantLast || page.Total != 7 {
				t.Errorf("step %v %+v: got %q has_more=%v cursor=%q total=%d; want %q %v %q 7",
					step, tt.q, got, page.HasMore, last, page.Total, tt.want, tt.hasMore, tt.wantLast)
			}
		}
	}
}

func TestListErrors(t *testing.T) {
	s, _ := open(t, time.Millisecond)
	a, b := newSession(t, s), newSession(t, s)
	ma := addText(t, s, a.ID, 1)[0]
	addText(t, s, b.ID, 1)
	ctx := context.Background()
	tests := []struct {
		name string
		q    shared.ListRequest
		want shared.Error
	}{
		{"cursor from another session", shared.ListRequest{SessionID: b.ID, Before: ma.ID},
			shared.Error{Code: shared.CodeInvalid, Message: "cursor is not a message of this session"}},
		{"unknown cursor", shared.ListRequest{SessionID: a.ID, After: "nope"},
			shared.Error{Code: shared.CodeInvalid, Message: "cursor is not a message of this session"}},
		{"both cursors", shared.ListRequest{SessionID: a.ID, Before: ma.ID, After: ma.ID},
			shared.Error{Code: shared.CodeInvalid, Message: "give before or after, not both"}},
		{"bad sort", shared.ListRequest{SessionID: a.ID, Sort: "up"},
			shared.Error{Code: shared.CodeInvalid, Message: "sort must be asc or desc"}},
		{"negative limit", shared.ListRequest{SessionID: a.ID, Limit: new(-1)},
			shared.Error{Code: shared.CodeInvalid, Message: "limit must be a positive integer"}},
		{"unknown session", shared.ListRequest{SessionID: "nope"},
			shared.Error{Code: shared.CodeNotFound, Message: "session not found"}},
	}
	for _, tt := range tests {
		_, err := s.ListMessages(ctx, tt.q)
		if got := (shared.Error{Code: shared.ErrorCode(err), Message: shared.ErrorMessage(err)}); got != tt.want {
			t.Errorf("%s: %+v (%v), want %+v", tt.name, got, err, tt.want)
		}
	}
}

func TestAddUserMessageIdempotent(t *testing.T) {
	s, _ := open(t, time.Millisecond)
	sess := newSession(t, s)
	ctx := context.Background()
	first, created, _, err := s.AddUserMessage(ctx, sess.ID, "ls", "c-1", "")
	if err != nil || !created {
		t.Fatalf("first add: created=%v err=%v", created, err)
	}
	again, created, _, err := s.AddUserMessage(ctx, sess.ID, "something else", "c-1", "")
	if err != nil || created || again.ID != first.ID || again.Content != "ls" {
		t.Fatalf("repeat: created=%v err=%v msg=%+v", created, err, again)
	}
	// The same client id in another session is another message.
	other := newSession(t, s)
	if _, created, _, err := s.AddUserMessage(ctx, other.ID, "ls", "c-1", ""); err != nil || !created {
		t.Fatalf("other session: created=%v err=%v", created, err)
	}
	if _, _, _, err := s.AddUserMessage(ctx, sess.ID, "x", "", ""); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := s.AddUserMessage(ctx, "nope", "x", "", ""); shared.ErrorCode(err) != shared.CodeNotFound {
		t.Fatalf("unknown session: %v", err)
	}
	if _, err := s.SetSessionState(ctx, sess.ID, shared.SessionFailed, "agent crashed"); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := s.AddUserMessage(ctx, sess.ID, "x", "c-2", ""); shared.ErrorMessage(err) != "session is failed" || shared.ErrorCode(err) != shared.CodeConflict {
		t.Fatalf("failed session: %v", err)
	}
	// The first message of a repeated id still answers, also after the session failed.
	if m, created, _, err := s.AddUserMessage(ctx, sess.ID, "ls", "c-1", ""); err != nil || created || m.ID != first.ID {
		t.Fatalf("repeat after failure: %v %v", created, err)
	}
	page, err := s.ListMessages(ctx, shared.ListRequest{SessionID: sess.ID})
	if err != nil || len(page.Messages) != 2 || page.Total != 2 {
		t.Fatalf("stored %d messages (total %d), want 2: %v", len(page.Messages), page.Total, err)
	}
}

func TestShellOutputScoping(t *testing.T) {
	s, _ := open(t, time.Millisecond)
	a, b := newSession(t, s), newSession(t, s)
	ctx := context.Background()
	out := &shared.ShellOutput{Stdout: "hello\n", Stderr: "warn\n", ExitCode: new(int)}
	cmd, err := s.CreateMessage(ctx, NewMessage{SessionID: a.ID, AuthorType: shared.AuthorAgent,
		Type: shared.TypeToolExecute, Content: "ls", Metadata: shellMeta(shared.StatusCompleted), Output: out})
	if err != nil {
		t.Fatal(err)
	}
	text := addText(t, s, a.ID, 1)[0]
	running, err := s.CreateMessage(ctx, NewMessage{SessionID: a.ID, AuthorType: shared.AuthorAgent,
		Type: shared.TypeToolExecute, Metadata: shellMeta(shared.StatusRunning)})
	if err != nil {
		t.Fatal(err)
	}

	snap, err := s.GetShellOutput(ctx, a.ID, cmd.ID)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Output.Stdout != "hello\n" || snap.Output.Stderr != "warn\n" || snap.Output.ExitCode == nil ||
		*snap.Output.ExitCode != 0 || snap.Status != shared.StatusCompleted || snap.MessageID != cmd.ID {
		t.Fatalf("snapshot %+v", snap)
	}
	if stamp, err := s.GetShellOutputStamp(ctx, a.ID, cmd.ID); err != nil || !stamp.Equal(snap.UpdatedAt) {
		t.Fatalf("stamp %v, want %v (%v)", stamp, snap.UpdatedAt, err)
	}
	empty, err := s.GetShellOutput(ctx, a.ID, running.ID)
	if err != nil || empty.Output != (shared.ShellOutput{}) || empty.Status != shared.StatusRunning {
		t.Fatalf("empty running snapshot %+v, %v", empty, err)
	}
	for name, c := range map[string][2]string{
		"absent":        {a.ID, "nope"},
		"cross-session": {b.ID, cmd.ID},
		"not a shell":   {a.ID, text.ID},
	} {
		if _, err := s.GetShellOutput(ctx, c[0], c[1]); shared.ErrorMessage(err) != "message not found" {
			t.Errorf("%s: err = %v, want message not found", name, err)
		}
		if _, err := s.GetShellOutputStamp(ctx, c[0], c[1]); shared.ErrorMessage(err) != "message not found" {
			t.Errorf("%s: stamp err = %v, want message not found", name, err)
		}
	}
}

func TestUpdateKeepsFinalState(t *testing.T) {
	s, _ := open(t, time.Millisecond)
	sess := newSession(t, s)
	ctx := context.Background()
	m := runningCommand(t, s, sess.ID)
	if _, _, err := s.UpdateMessage(ctx, m.ID, Update{Output: &shared.ShellOutput{Stdout: "part", Stderr: "e"}}); err != nil {
		t.Fatal(err)
	}
	seven := 7
	final := &shared.ShellOutput{Stdout: "final\n", ExitCode: &seven}
	done, changed, err := s.UpdateMessage(ctx, m.ID, Update{Metadata: shellMeta(shared.StatusCompleted), Output: final})
	if err != nil || !changed {
		t.Fatal(changed, err)
	}
	// A known non-zero exit makes the status failed whatever the agent said.
	if done.Metadata.Status != shared.StatusFailed || *shared.ShellOf(done).Output.ExitCode != 7 {
		t.Fatalf("final message %+v", done.Metadata)
	}
	late, changed, err := s.UpdateMessage(ctx, m.ID, Update{Metadata: shellMeta(shared.StatusRunning),
		Output: &shared.ShellOutput{Stdout: "partial"}})
	if err != nil || changed || late.Metadata.Status != shared.StatusFailed {
		t.Fatalf("late update applied: changed=%v err=%v status=%s", changed, err, late.Metadata.Status)
	}
	snap, _ := s.GetShellOutput(ctx, sess.ID, m.ID)
	if snap.Output.Stdout != "final\n" || snap.Output.Stderr != "" {
		t.Fatalf("final output lost: %q", snap.Output.Stdout)
	}
	// A metadata-only update keeps the stored summary.
	md := shellMeta(shared.StatusFailed)
	md.Title = "renamed"
	kept, _, err := s.UpdateMessage(ctx, m.ID, Update{Metadata: md})
	if err != nil || shared.ShellOf(kept).Output.StdoutBytes != 6 || kept.Metadata.Title != "renamed" {
		t.Fatalf("summary lost: %+v %v", shared.ShellOf(kept), err)
	}
	if _, _, err := s.UpdateMessage(ctx, "nope", Update{}); shared.ErrorCode(err) != shared.CodeNotFound {
		t.Fatalf("unknown id: %v", err)
	}
}

// The store owns the output rules, on both write paths: what a writer hands over is
// bounded, the summary is built from what is kept (a summary handed over is not taken),
// and a known non-zero exit fails the command. The bound is written as the contract
// states it, in bytes, so a change of shared.OutputLimit fails here.
func TestWritesApplyOutputRules(t *testing.T) {
	s, _ := open(t, time.Millisecond)
	sess := newSession(t, s)
	ctx := context.Background()
	one, zero := 1, 0
	started := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	finished := started.Add(12300 * time.Millisecond)
	for _, tt := range []struct {
		name       string
		out        shared.ShellOutput
		wantStdout string
		wantStatus shared.ToolStatus
		wantSum    string
	}{
		{"262,144 bytes kept whole", shared.ShellOutput{Stdout: "b" + strings.Repeat("a", 262143)},
			"b" + strings.Repeat("a", 262143), shared.StatusCompleted,
			`{"has_output":true,"stdout_bytes":262144,"stderr_bytes":0,"truncated":false,"stdout_total_bytes":262144,"stderr_total_bytes":0}`},
		{"262,145 bytes: the last 262,144 kept", shared.ShellOutput{Stdout: "b" + strings.Repeat("a", 262144)},
			strings.Repeat("a", 262144), shared.StatusCompleted,
			`{"has_output":true,"stdout_bytes":262144,"stderr_bytes":0,"truncated":true,"stdout_total_bytes":262145,"stderr_total_bytes":0}`},
		{"invalid UTF-8 counted as stored", shared.ShellOutput{Stdout: "ok\xff", ExitCode: &zero},
			"ok\uFFFD", shared.StatusCompleted,
			`{"has_output":true,"stdout_bytes":5,"stderr_bytes":0,"truncated":false,"exit_code":0,"stdout_total_bytes":5,"stderr_total_bytes":0}`},
		{"a non-zero exit fails a completed command", shared.ShellOutput{Stderr: "no", ExitCode: &one},
			"", shared.StatusFailed,
			`{"has_output":true,"stdout_bytes":0,"stderr_bytes":2,"truncated":false,"exit_code":1,"stdout_total_bytes":0,"stderr_total_bytes":2}`},
		{"totals and times as the runtime counted them", shared.ShellOutput{Stdout: "tail", StdoutTotalBytes: 48 << 20, StartedAt: &started, FinishedAt: &finished},
			"tail", shared.StatusCompleted,
			`{"has_output":true,"stdout_bytes":4,"stderr_bytes":0,"truncated":false,"stdout_total_bytes":50331648,"stderr_total_bytes":0,` +
				`"started_at":"2026-12-03T08:00:00Z","finished_at":"2026-12-03T08:00:12.3Z"}`},
	} {
		for _, write := range []string{"create", "update"} {
			md := shellMeta(shared.StatusCompleted)
			md.Normalized.ShellExec.Output = shared.ShellOutputSummary{HasOutput: true, StdoutBytes: 1}
			nm := NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent, Type: shared.TypeToolExecute, Metadata: md}
			var m shared.Message
			var err error
			if write == "create" {
				nm.Output = &tt.out
				m, err = s.CreateMessage(ctx, nm)
			} else {
				nm.Metadata = shellMeta(shared.StatusRunning)
				if m, err = s.CreateMessage(ctx, nm); err == nil {
					m, _, err = s.UpdateMessage(ctx, m.ID, Update{Metadata: md, Output: &tt.out})
				}
			}
			if err != nil {
				t.Fatalf("%s, %s: %v", tt.name, write, err)
			}
			sum, _ := json.Marshal(shared.ShellOf(m).Output)
			snap, err := s.GetShellOutput(ctx, sess.ID, m.ID)
			// The snapshot reads the same facts back from the body's row.
			snapSum, _ := json.Marshal(snap.Output.Summarize())
			if err != nil || m.Metadata.Status != tt.wantStatus || string(sum) != tt.wantSum || string(snapSum) != tt.wantSum ||
				snap.Output.Stdout != tt.wantStdout || snap.Status != tt.wantStatus {
				t.Errorf("%s, %s: status %s, summary %s, stored %d bytes (%v); want %s, %s, %d bytes",
					tt.name, write, m.Metadata.Status, sum, len(snap.Output.Stdout), err, tt.wantStatus, tt.wantSum, len(tt.wantStdout))
			}
		}
	}
}

// A command failed by its exit code is finished: more of its output is still stored,
// and neither a "running" nor a "completed" from the agent revives or clears the failure.
func TestExitFailureIsFinal(t *testing.T) {
	s, _ := open(t, time.Millisecond)
	sess := newSession(t, s)
	ctx := context.Background()
	one := 1
	m, err := s.CreateMessage(ctx, NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent,
		Type: shared.TypeToolExecute, Metadata: shellMeta(shared.StatusRunning),
		Output: &shared.ShellOutput{Stdout: "1\n", ExitCode: &one}})
	if err != nil || m.Metadata.Status != shared.StatusFailed {
		t.Fatalf("created %+v, %v", m.Metadata, err)
	}
	more, changed, err := s.UpdateMessage(ctx, m.ID, Update{Metadata: shellMeta(shared.StatusRunning),
		Output: &shared.ShellOutput{Stdout: "1\n2\n", ExitCode: &one}})
	if err != nil || !changed || more.Metadata.Status != shared.StatusFailed || shared.ShellOf(more).Output.StdoutBytes != 4 {
		t.Fatalf("more output: changed=%v status %s %+v, %v", changed, more.Metadata.Status, shared.ShellOf(more).Output, err)
	}
	done, _, err := s.UpdateMessage(ctx, m.ID, Update{Metadata: shellMeta(shared.StatusCompleted)})
	if err != nil || done.Metadata.Status != shared.StatusFailed {
		t.Fatalf("completed without output: status %s, %v", done.Metadata.Status, err)
	}
}

// A message as returned by a write (what is published live) and as listed after a
// reopen (what a reload shows) encode to the same JSON, and neither carries a body.
func TestLiveAndReloadedIdentical(t *testing.T) {
	s, path := open(t, time.Millisecond)
	sess := newSession(t, s)
	ctx := context.Background()
	sentinel := "SENTINEL-" + strings.Repeat("é", 100_000)
	m, _ := s.CreateMessage(ctx, NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent,
		Type: shared.TypeToolExecute, Metadata: shellMeta(shared.StatusRunning)})
	live, _, err := s.UpdateMessage(ctx, m.ID, Update{Metadata: shellMeta(shared.StatusRunning),
		Output: &shared.ShellOutput{Stdout: sentinel + "\xff"}})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s2, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	page, err := s2.ListMessages(ctx, shared.ListRequest{SessionID: sess.ID})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(live)
	b, _ := json.Marshal(page.Messages[0])
	if string(a) != string(b) {
		t.Fatalf("live and reloaded differ:\n%s\n%s", a, b)
	}
	if strings.Contains(string(a), "SENTINEL") {
		t.Fatal("body in a projected message")
	}
	want := `"output":{"has_output":true,"stdout_bytes":` + jsonInt(len(sentinel)+3) + `,"stderr_bytes":0,"truncated":false,"stdout_total_bytes":` + jsonInt(len(sentinel)+3) + `,"stderr_total_bytes":0}`
	if !strings.Contains(string(a), want) {
		t.Fatalf("summary missing: %s", a)
	}
}

func jsonInt(n int) string { b, _ := json.Marshal(n); return string(b) }

// Lists never read output bodies: they still work with the bodies' table gone.
func TestListReadsNoBodies(t *testing.T) {
	s, _ := open(t, time.Millisecond)
	sess := newSession(t, s)
	ctx := context.Background()
	if _, err := s.CreateMessage(ctx, NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent,
		Type: shared.TypeToolExecute, Metadata: shellMeta(shared.StatusCompleted),
		Output: &shared.ShellOutput{Stdout: strings.Repeat("x", 1000)}}); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Exec("DROP TABLE shell_output_chunks").Error; err != nil {
		t.Fatal(err)
	}
	page, err := s.ListMessages(ctx, shared.ListRequest{SessionID: sess.ID})
	if err != nil || len(page.Messages) != 1 || shared.ShellOf(page.Messages[0]).Output.StdoutBytes != 1000 {
		t.Fatalf("list without bodies: %v %+v", err, page)
	}
}

func TestRecoverAfterRestart(t *testing.T) {
	s, _ := open(t, time.Millisecond)
	sess := newSession(t, s)
	ctx := context.Background()
	if _, err := s.SetSessionState(ctx, sess.ID, shared.SessionRunning, ""); err != nil {
		t.Fatal(err)
	}
	m, _ := s.CreateMessage(ctx, NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent,
		Type: shared.TypeToolExecute, Metadata: shellMeta(shared.StatusRunning),
		Output: &shared.ShellOutput{Stdout: "half"}})
	done, _ := s.CreateMessage(ctx, NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent,
		Type: shared.TypeToolExecute, Metadata: shellMeta(shared.StatusCompleted)})
	if _, err := s.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	got, _ := s.GetSession(ctx, sess.ID)
	if got.State != shared.SessionClosed || got.Error == "" {
		t.Fatalf("session %+v", got)
	}
	snap, _ := s.GetShellOutput(ctx, sess.ID, m.ID)
	if snap.Status != shared.StatusCancelled || snap.Output.Stdout != "half" {
		t.Fatalf("running command after restart: %+v", snap)
	}
	snap, _ = s.GetShellOutput(ctx, sess.ID, done.ID)
	if snap.Status != shared.StatusCompleted {
		t.Fatalf("finished command changed: %+v", snap)
	}
}

func TestTasksAndSessions(t *testing.T) {
	s, _ := open(t, time.Millisecond)
	ctx := context.Background()
	if _, err := s.CreateTask(ctx, "  ", ""); shared.ErrorCode(err) != shared.CodeInvalid || shared.ErrorMessage(err) != "title is required" {
		t.Fatalf("blank title: %v", err)
	}
	if _, err := s.CreateSession(ctx, "nope", "shell", "/"); shared.ErrorMessage(err) != "task not found" {
		t.Fatalf("session of unknown task: %v", err)
	}
	sess := newSession(t, s)
	tasks, err := s.ListTasks(ctx)
	if err != nil || len(tasks) != 1 || len(tasks[0].Sessions) != 1 || tasks[0].Sessions[0].ID != sess.ID {
		t.Fatalf("tasks %+v %v", tasks, err)
	}
	if _, err := s.GetSession(ctx, "nope"); shared.ErrorCode(err) != shared.CodeNotFound || shared.ErrorMessage(err) != "session not found" {
		t.Fatal(err)
	}
}

// A page stops at MaxPageBytes and says has_more; following the cursors, in both
// directions, reads every message exactly once.
func TestPageByteBudget(t *testing.T) {
	s, _ := open(t, time.Millisecond)
	ctx := context.Background()
	sess := newSession(t, s)
	const n, size = 40, 256 << 10
	for i := 0; i < n; i++ {
		if _, err := s.CreateMessage(ctx, NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent,
			Type: shared.TypeMessage, Content: strings.Repeat(string(rune('a'+i%26)), size)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, sort := range []string{shared.SortAsc, shared.SortDesc} {
		seen, pages := map[string]bool{}, 0
		q := shared.ListRequest{SessionID: sess.ID, Limit: new(shared.MaxPageLimit), Sort: sort}
		for {
			page, err := s.ListMessages(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			if len(page.Messages) == 0 || len(page.Messages)*size > shared.MaxPageBytes {
				t.Fatalf("%s page %d holds %d messages of %d bytes", sort, pages, len(page.Messages), size)
			}
			for _, m := range page.Messages {
				if seen[m.ID] {
					t.Fatalf("%s: message %s twice", sort, m.ID)
				}
				seen[m.ID] = true
			}
			if !page.HasMore {
				break
			}
			if sort == shared.SortAsc {
				q.After = page.Cursor
			} else {
				q.Before = page.Cursor
			}
		}
		if len(seen) != n || pages < 3 {
			t.Errorf("%s: %d messages in %d pages, want %d in several", sort, len(seen), pages, n)
		}
	}
}

// A session that ended stays as it ended, with its first reason: a late writer (the
// process of a server whose lease was taken over, stopping its agent) cannot overwrite why.
func TestEndedSessionStaysEnded(t *testing.T) {
	s, _ := open(t, time.Millisecond)
	sess := newSession(t, s)
	ctx := context.Background()
	if _, err := s.SetSessionState(ctx, sess.ID, shared.SessionClosed, SweptError); err != nil {
		t.Fatal(err)
	}
	for _, state := range []shared.SessionState{shared.SessionClosed, shared.SessionFailed, shared.SessionReady} {
		got, err := s.SetSessionState(ctx, sess.ID, state, "")
		if err != nil || got.State != shared.SessionClosed || got.Error != SweptError {
			t.Fatalf("set %s on a closed session: %s %q (%v)", state, got.State, got.Error, err)
		}
	}
}

// The stamp lookup runs before every snapshot answer, the most frequent small request: it
// is one prepared statement (Store.prepare). Built by GORM per call it allocated 79 times
// on SQLite, against 24 prepared: this loose bound catches the way back.
func TestShellOutputStampIsPrepared(t *testing.T) {
	s, _ := open(t, time.Millisecond)
	sess := newSession(t, s)
	ctx := context.Background()
	cmd, err := s.CreateMessage(ctx, NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent, Type: shared.TypeToolExecute,
		Content: "ls", Metadata: shellMeta(shared.StatusCompleted), Output: &shared.ShellOutput{Stdout: "hi\n", ExitCode: new(int)}})
	if err != nil {
		t.Fatal(err)
	}
	var lookupErr error
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := s.GetShellOutputStamp(ctx, sess.ID, cmd.ID); err != nil {
			lookupErr = err
		}
	})
	if lookupErr != nil {
		t.Fatal(lookupErr)
	}
	const bound = 40
	if allocs > bound {
		t.Errorf("the stamp lookup allocates %.0f times, more than %d: is it still one prepared statement?", allocs, bound)
	}
	t.Logf("%.0f allocations per stamp lookup", allocs)
}
