package api

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"conch/server/store"
	"conch/shared"
)

// GET /api/v1/search answers the messages found with where they are and a snippet in
// plain runs (agent text stays text), and refuses a bad query with the reason.
func TestSearch(t *testing.T) {
	e := newEnv(t)
	sess := e.session()
	e.text(sess.ID, "no match here")
	m := e.text(sess.ID, `found the needle in <img src=x onerror=alert(1)>`)
	var page shared.SearchPage
	raw := e.expect(http.StatusOK, "GET", "/api/v1/search?q=NEEDLE&limit=5", "", &page)
	if len(page.Results) != 1 || page.HasMore {
		t.Fatalf("answer %s", raw)
	}
	r := page.Results[0]
	if r.MessageID != m.ID || r.SessionID != sess.ID || r.TaskID != sess.TaskID || r.TaskTitle != "task" ||
		r.Type != shared.TypeMessage || r.AuthorType != shared.AuthorAgent || !r.CreatedAt.Equal(m.CreatedAt) {
		t.Errorf("result %+v", r)
	}
	// The runs are the text as stored, cut where the database ends a snippet (PostgreSQL's
	// after the last word).
	var text strings.Builder
	var hits []string
	for _, p := range r.Snippet {
		text.WriteString(p.Text)
		if p.Hit {
			hits = append(hits, p.Text)
		}
	}
	if !slices.Equal(hits, []string{"needle"}) || !strings.HasPrefix(text.String(), "found the needle in <img src=x onerror=alert") {
		t.Errorf("snippet %+v", r.Snippet)
	}

	// A command's output is found by its lines: the result says where the line starts.
	cmd, err := e.store.CreateMessage(context.Background(), store.NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent,
		Type: shared.TypeToolExecute, Metadata: &shared.Metadata{ToolCallID: "t1", Status: shared.StatusCompleted,
			Kind: "execute", Normalized: &shared.Normalized{Kind: shared.NormalizedShellExec, ShellExec: &shared.ShellExec{Command: "make"}}},
		Output: &shared.ShellOutput{Stderr: "ok\n\x1b[1mneedle\x1b[0m <b>bold</b>\n", StderrOffset: new(int64(100))}})
	if err != nil {
		t.Fatal(err)
	}
	raw = e.expect(http.StatusOK, "GET", "/api/v1/search?q=needle", "", &page)
	if len(page.Results) != 2 || page.Results[0].MessageID != cmd.ID || page.Results[0].Output == nil ||
		*page.Results[0].Output != (shared.OutputHit{Stream: "stderr", Offset: 103}) ||
		!strings.Contains(raw, `"snippet":[{"text":"needle","hit":true},{"text":" \u003cb\u003ebold\u003c/b\u003e"}]`) {
		t.Errorf("answer %s", raw)
	}

	for _, q := range []string{"", "q=", "q=" + url.QueryEscape(`" ? "`), "q=" + strings.Repeat("a", shared.MaxSearchBytes+1),
		"q=x&limit=0", "q=x&limit=51", "q=x&limit=ten", "q=x&cursor=later"} {
		var body shared.ErrorBody
		e.expect(http.StatusBadRequest, "GET", "/api/v1/search?"+q, "", &body)
		if body.Error == "" {
			t.Errorf("%q: no reason given", q)
		}
	}
}
