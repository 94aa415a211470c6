//go:build !js

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"conch/server/store"
	"conch/shared"
)

// TestMeasureMarkdownSession prints the time, median of 5 fresh browsers, to render a
// session of 2,000 messages (1,000 prompts, 1,000 markdown replies with a table, lists and
// a code block): the first page on screen after navigation, and every message on screen
// by paging. Run it when asked: CONCH_UI_MEASURE=1.
func TestMeasureMarkdownSession(t *testing.T) {
	t.Parallel()
	if os.Getenv("CONCH_UI_MEASURE") == "" {
		t.Skip("set CONCH_UI_MEASURE=1 to measure rendering a markdown session")
	}
	const n = 2000
	db := filepath.Join(t.TempDir(), "conch.db")
	sid := seedMarkdown(t, db, n)
	s := startServerAt(t, "127.0.0.1:0", db)
	var first, all []time.Duration
	for range 5 {
		b := newBrowser(t)
		instrument(t, b)
		start := time.Now()
		b.do(t, chromedp.Navigate(s.URL+"/sessions/"+sid))
		b.waitFor(t, "the first page", `window.__t.message && !!document.querySelector(".msg.agent table")`)
		first = append(first, time.Duration(eval[float64](t, b, `__t.message`)*float64(time.Millisecond)))
		b.waitApp(t) // the prerendered page's button does nothing until the app runs
		for eval[bool](t, b, `!!document.querySelector("button.older:not([disabled])")`) {
			k := eval[int](t, b, `document.querySelectorAll(".messages .msg").length`)
			b.do(t, chromedp.Evaluate[chromedp.Void](`document.querySelector("button.older").click()`))
			b.waitFor(t, "an older page", fmt.Sprintf(`document.querySelectorAll(".messages .msg").length > %d`, k))
		}
		if got := eval[int](t, b, `document.querySelectorAll(".messages .msg").length`); got != n {
			t.Fatalf("%d messages on screen, want %d", got, n)
		}
		all = append(all, time.Since(start))
	}
	t.Logf("a session of %d messages with markdown, median of 5: first page on screen %v after navigation start, all %d on screen by paging %v (runs: %v; %v)",
		n, median(first), n, median(all), first, all)
}

// seedMarkdown writes a closed session of n messages into the database db before a
// server opens it, and returns its id.
func seedMarkdown(t *testing.T, db string, n int) string {
	t.Helper()
	return seedClosed(t, db, "markdown", t.TempDir(), "", func(ctx context.Context, st *store.Store, sess shared.Session) error {
		var nms []store.NewMessage
		for i := range n / 2 {
			nms = append(nms, store.NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorUser, Type: shared.TypeMessage, Content: fmt.Sprintf("Step %d, please", i)},
				store.NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent, Type: shared.TypeMessage, Content: markdownReply})
		}
		_, err := st.CreateMessages(ctx, nms)
		return err
	}).ID
}
