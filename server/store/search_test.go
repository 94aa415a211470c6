package store

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"conch/shared"
)

// results searches q and returns the first page's results, failing on an error.
func results(t *testing.T, s *Store, q string, r Readable) []shared.SearchResult {
	t.Helper()
	page, err := s.Search(context.Background(), shared.SearchRequest{Query: q}, r)
	if err != nil {
		t.Fatalf("search %q: %v", q, err)
	}
	return page.Results
}

// hits searches q and returns the ids found, newest first.
func hits(t *testing.T, s *Store, q string, r Readable) []string {
	t.Helper()
	var ids []string
	for _, res := range results(t, s, q, r) {
		ids = append(ids, res.MessageID)
	}
	return ids
}

func create(t *testing.T, s *Store, nm NewMessage) shared.Message {
	t.Helper()
	m, err := s.CreateMessage(context.Background(), nm)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Prompts, agent messages and shell commands are found by their words (any case, any
// accents on SQLite), on both databases; thinking and other tool calls are not searched; results
// say where the message is and mark the words found.
func TestSearchFindsPromptsMessagesAndCommands(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t, time.Millisecond)
	sess := newSession(t, s)
	prompt, _, _, err := s.AddUserMessage(ctx, sess.ID, "Please fix the flaky Résumé upload test", "", "ann")
	if err != nil {
		t.Fatal(err)
	}
	md := shellMeta(shared.StatusCompleted)
	md.Normalized.ShellExec.Command = "go test -run TestUpload ./server/..."
	command := create(t, s, NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent, Type: shared.TypeToolExecute,
		Metadata: md, Output: &shared.ShellOutput{Stdout: "upload output is searched too\n"}})
	create(t, s, NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent, Type: shared.TypeThinking, Content: "upload thinking"})
	reply := create(t, s, NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent, Type: shared.TypeMessage,
		Content: "The upload test waited on a timer; it now waits on the signal."})

	for q, want := range map[string][]string{
		"upload":             {reply.ID, command.ID, prompt.ID}, // the command by its output
		"searched":           {command.ID},
		"UPLOAD flaky":       {prompt.ID},
		"testupload":         {command.ID},
		`"go test"`:          {command.ID},
		`"test go"`:          nil,
		"upload nowhere":     nil,
		"thinking":           nil,
		`AND OR NEAR ( * -x`: nil, // the databases' query syntax is only words here
	} {
		if got := hits(t, s, q, EveryTask); !slices.Equal(got, want) {
			t.Errorf("search %q found %v, want %v", q, got, want)
		}
	}

	if s.dialect.sqlite { // PostgreSQL's 'simple' keeps accents
		if got := hits(t, s, "resume", EveryTask); !slices.Equal(got, []string{prompt.ID}) {
			t.Errorf("search resume found %v, want %v", got, []string{prompt.ID})
		}
	}

	page, err := s.Search(ctx, shared.SearchRequest{Query: "timer"}, EveryTask)
	if err != nil || len(page.Results) != 1 {
		t.Fatalf("search timer: %+v (%v)", page, err)
	}
	res := page.Results[0]
	if res.SessionID != sess.ID || res.TaskID != sess.TaskID || res.TaskTitle != "task" || res.Type != shared.TypeMessage ||
		res.AuthorType != shared.AuthorAgent || !res.CreatedAt.Equal(reply.CreatedAt) || page.HasMore {
		t.Errorf("result %+v", page)
	}
	var found []string
	for _, p := range res.Snippet {
		if p.Hit {
			found = append(found, p.Text)
		}
	}
	if text := snippetText(res.Snippet); !slices.Equal(found, []string{"timer"}) || !strings.Contains(text, "waited on a timer; it now") {
		t.Errorf("snippet %+v", res.Snippet)
	}
}

func snippetText(parts []shared.SnippetPart) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// A message's text is searched as it is now: an agent message that grows is found by its
// new words, a command by its new command line.
func TestSearchFollowsUpdates(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t, time.Millisecond)
	sess := newSession(t, s)
	m := create(t, s, NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent, Type: shared.TypeMessage, Content: "alpha"})
	cmd := create(t, s, NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent, Type: shared.TypeToolExecute,
		Metadata: shellMeta(shared.StatusRunning)})
	text := "beta gamma"
	md := shellMeta(shared.StatusCompleted)
	md.Normalized.ShellExec.Command = "make gamma"
	for _, u := range []struct {
		id string
		u  Update
	}{{m.ID, Update{Content: &text}}, {cmd.ID, Update{Metadata: md}}} {
		if _, _, err := s.UpdateMessage(ctx, u.id, u.u); err != nil {
			t.Fatal(err)
		}
	}
	if got := hits(t, s, "alpha", EveryTask); len(got) != 0 {
		t.Errorf("alpha found %v after the text changed", got)
	}
	if got := hits(t, s, "gamma", EveryTask); !slices.Equal(got, []string{cmd.ID, m.ID}) {
		t.Errorf("gamma found %v, want %v", got, []string{cmd.ID, m.ID})
	}
	if got := hits(t, s, "ls", EveryTask); len(got) != 0 {
		t.Errorf("the old command is still found: %v", got)
	}
}

// A search finds only what the caller may read; a deleted task's messages are gone from
// the index with it.
func TestSearchReadableAndDeleted(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t, time.Millisecond)
	a, b := newSession(t, s), newSession(t, s)
	ma := create(t, s, NewMessage{SessionID: a.ID, AuthorType: shared.AuthorAgent, Type: shared.TypeMessage, Content: "shared word"})
	mb := create(t, s, NewMessage{SessionID: b.ID, AuthorType: shared.AuthorAgent, Type: shared.TypeMessage, Content: "shared word"})
	for _, c := range []struct {
		r    Readable
		want []string
	}{
		{EveryTask, []string{mb.ID, ma.ID}},
		{Readable{Tasks: []string{a.TaskID}}, []string{ma.ID}},
		{Readable{Tasks: []string{b.TaskID, "no-such-task"}}, []string{mb.ID}},
		{Readable{}, nil},
	} {
		if got := hits(t, s, "word", c.r); !slices.Equal(got, c.want) {
			t.Errorf("readable %+v found %v, want %v", c.r, got, c.want)
		}
	}
	if _, err := s.DeleteTask(ctx, a.TaskID); err != nil {
		t.Fatal(err)
	}
	if got := hits(t, s, "word", EveryTask); !slices.Equal(got, []string{mb.ID}) {
		t.Errorf("after deleting task a found %v, want %v", got, []string{mb.ID})
	}
	var rows int64
	if err := s.db.Raw("SELECT COUNT(*) FROM message_search").Scan(&rows).Error; err != nil || rows != 1 {
		t.Errorf("message_search keeps %d rows (%v), want 1", rows, err)
	}
	ftsMatches(t, s, "message_search_fts", "shared", 1)
}

// ftsMatches checks, on SQLite, that the full-text index itself (not only the table it
// reads) matches want documents for word.
func ftsMatches(t *testing.T, s *Store, fts, word string, want int64) {
	t.Helper()
	if !s.dialect.sqlite {
		return
	}
	var docs int64
	if err := s.db.Raw("SELECT COUNT(*) FROM "+fts+" WHERE "+fts+" MATCH ?", word).Scan(&docs).Error; err != nil || docs != want {
		t.Errorf("%s matches %d documents for %q (%v), want %d", fts, docs, word, err, want)
	}
}

// Pages go from the newest match to the oldest and never repeat or skip one.
func TestSearchPages(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t, time.Millisecond)
	sess := newSession(t, s)
	var want []string
	for range 7 {
		m := create(t, s, NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent, Type: shared.TypeMessage, Content: "page me"})
		want = append([]string{m.ID}, want...)
	}
	var got []string
	q := shared.SearchRequest{Query: "page", Limit: 3}
	for range 4 {
		page, err := s.Search(ctx, q, EveryTask)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Results {
			got = append(got, r.MessageID)
		}
		if !page.HasMore {
			break
		}
		q.Cursor = page.Cursor
	}
	if !slices.Equal(got, want) {
		t.Errorf("pages gave %v, want %v", got, want)
	}
}

// Text that carries the snippet's own markers cannot make a hit of words that are not;
// a bad query or page is refused with the reason.
func TestSearchHostileAndInvalid(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t, time.Millisecond)
	sess := newSession(t, s)
	create(t, s, NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent, Type: shared.TypeMessage,
		Content: "needle \x02fake\x03 words"})
	page, err := s.Search(ctx, shared.SearchRequest{Query: "needle"}, EveryTask)
	if err != nil || len(page.Results) != 1 {
		t.Fatalf("search: %+v (%v)", page, err)
	}
	for _, p := range page.Results[0].Snippet {
		if p.Hit && p.Text != "needle" || strings.ContainsAny(p.Text, "\x02\x03") {
			t.Errorf("snippet part %+v", p)
		}
	}
	if text := snippetText(page.Results[0].Snippet); !strings.Contains(text, "fake") {
		t.Errorf("snippet %q lost the text", text)
	}
	for _, q := range []shared.SearchRequest{
		{Query: ""},
		{Query: ` " - * ( `},
		{Query: strings.Repeat("a", shared.MaxSearchBytes+1)},
		{Query: strings.Repeat("a ", shared.MaxSearchTerms+1)},
		{Query: "bad\xff"},
		{Query: "needle", Limit: shared.MaxSearchHits + 1},
		{Query: "needle", Limit: -1},
		{Query: "needle", Cursor: "x"},
		{Query: "needle", Cursor: "-5"},
	} {
		if _, err := s.Search(ctx, q, EveryTask); shared.ErrorCode(err) != shared.CodeInvalid {
			t.Errorf("search %+v: %v, want invalid", q, err)
		}
	}
}

// On PostgreSQL, with the table's statistics, a rare or absent word is looked up in the
// GIN index, and a word in most messages walks the ids newest first until the page is full.
// The query behind a CTE hid the word from the planner: every word walked the ids, which
// for a word in no message means testing every row (16-28 ms at 100,000 messages).
func TestSearchPlanFollowsTheWord(t *testing.T) {
	s, _ := open(t, 0)
	if s.dialect.sqlite {
		t.Skip("FTS4 answers a MATCH from its own index whatever the word")
	}
	ctx := context.Background()
	sess := newSession(t, s)
	batch := make([]NewMessage, 0, 500)
	for i := range 5000 {
		// Words of every frequency, as prose has: the statistics then know how rare the
		// least common ones are.
		content := "common w" + strconv.Itoa(i%10) + " x" + strconv.Itoa(i%100) + " y" + strconv.Itoa(i%500)
		if i == 100 {
			content += " rare"
		}
		batch = append(batch, NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent, Type: shared.TypeMessage, Content: content})
		if len(batch) == cap(batch) {
			if _, err := s.CreateMessages(ctx, batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if err := s.db.Exec("ANALYZE message_search").Error; err != nil { // what autovacuum does after a load
		t.Fatal(err)
	}
	for q, index := range map[string]string{"rare": "idx_message_search_words", "nowhere": "idx_message_search_words", "common": "message_search_pkey"} {
		plans, err := s.Explain(ctx, func(ctx context.Context) error {
			_, err := s.Search(ctx, shared.SearchRequest{Query: q}, EveryTask)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(plans, func(p Plan) bool { return strings.Contains(p.SQL, "FROM message_search") })
		if i < 0 || !strings.Contains(strings.Join(plans[i].Steps, "\n"), index) {
			t.Errorf("searching %q does not use %s:\n%+v", q, index, plans)
		}
	}
}
