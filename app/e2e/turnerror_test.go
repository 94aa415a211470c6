//go:build !js

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"conch/shared"
)

// longTurnError is how Gemini CLI fails a turn: its model's answer quoted as JSON, with
// the agent's own prompt in it, every new line escaped.
var longTurnError = `{"error": {"code": 400, "message": "Request contains an invalid argument.\n\nPrompt:\n` +
	strings.Repeat(`You are an interactive CLI agent \"gemini\" specializing in software engineering tasks.\n`, 120) + `"}}`

const longTurnHeadline = `The agent's turn failed: Internal error: {"error": {"code": 400, "message": "Request contains an invalid argument.`

// A failed turn's long error takes a line or two of the chat: its headline, with the
// whole text (unescaped) behind a disclosure fetched only when opened.
func TestLongTurnErrorCollapsed(t *testing.T) {
	t.Parallel()
	s, sess, b := openScripted(t, "a long error")
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if _, err := s.API.SendMessage(ctx, sess.ID, "fail long", ""); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, "the error's headline", fmt.Sprintf(`(document.querySelector(".msg.error .error-line") || {}).textContent === %q`, longTurnHeadline))
	page, err := s.API.ListMessages(ctx, shared.ListRequest{SessionID: sess.ID})
	if err != nil {
		t.Fatal(err)
	}
	failed := page.Messages[len(page.Messages)-1]
	toggle := ".msg.error button.disclosure-toggle"
	if got := b.text(t, toggle); !strings.HasPrefix(got, "Details · ") || failed.Metadata == nil || failed.Metadata.DetailBytes < 8000 {
		t.Errorf("disclosure %q for %+v", got, failed.Metadata)
	}
	for _, w := range []int{1280, 393} {
		b.do(t, chromedp.EmulateViewport(int64(w), 851))
		b.waitFor(t, fmt.Sprint(w, " px"), fmt.Sprintf(`window.innerWidth === %d`, w))
		// The headline and the disclosure's button: at most three lines of text and the button.
		if h := eval[float64](t, b, `document.querySelector(".msg.error").getBoundingClientRect().height`); h > 120 {
			t.Errorf("at %d px the collapsed error is %.0f px high", w, h)
		}
	}
	time.Sleep(dwell) // nothing may be fetched before the person opens it
	if n := b.snapshots(failed.ID); n != 0 {
		t.Fatalf("%d error detail requests before opening", n)
	}
	b.screenshots(t, "turn-error", ".msg.error")

	b.do(t, chromedp.EmulateViewport(1280, 900))
	b.do(t, chromedp.Click(chromedp.CSS(toggle)))
	b.waitFor(t, "the whole error", `!!document.querySelector(".msg.error pre.error-text")`)
	text := b.text(t, ".msg.error pre.error-text")
	if strings.Count(text, "\n") != 123 || strings.Contains(text, `\n`) || !strings.Contains(text, `agent "gemini" specializing`) {
		t.Errorf("the whole error, %d lines: %.300q", strings.Count(text, "\n"), text)
	}
	if h := eval[float64](t, b, `document.querySelector(".msg.error pre.error-text").getBoundingClientRect().height`); h > 0.5*900 {
		t.Errorf("the open error is %.0f px high: it should scroll within 40%% of the screen", h)
	}
	if n := b.snapshots(failed.ID); n != 1 {
		t.Errorf("%d error detail requests after opening, want 1", n)
	}
	b.screenshots(t, "turn-error-open", ".msg.error")
}
