//go:build !js

package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"conch/shared"
)

// A first visit installs the first service worker, which claims the page: go-app calls
// that an update. The notice must wait for a worker that replaced an older one.
func TestNoUpdateNoticeOnFirstVisit(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	sess := s.session(t, "first visit")
	b := newBrowser(t)
	b.open(t, s.URL+"/sessions/"+sess.ID)
	b.waitFor(t, "the service worker", `navigator.serviceWorker.controller !== null`)
	// go-app's listener may already have called its update hook, or missed the moment (it
	// is attached late); call it as it does, and wait for go-app's log line, which it
	// writes after the page has rendered the update.
	b.do(t, chromedp.Evaluate[chromedp.Void](`window.conchLogs = [];
const log = console.log;
console.log = (...args) => { conchLogs.push(args.join(" ")); log(...args); };
goappOnUpdate();`))
	b.waitFor(t, "go-app's update log", `conchLogs.some(l => l.includes("has been updated"))`)
	if eval[bool](t, b, `!!document.querySelector(".notice.update")`) {
		t.Fatal("a first visit says a new version of Conch is available")
	}
}

// An error banner above the chat leaves the transcript as it is: an open output stays
// open with its search (go-app matched the page's children by position, so a banner used
// to replace the chat below it).
func TestBannerKeepsOpenOutputs(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	b, _, out := s.openFinished(t, toolsCommand)
	search := out + " input.out-search"
	b.do(t, chromedp.Click(chromedp.CSS(search)), chromedp.SendKeys(chromedp.CSS(search), "NEEDLE"))
	count := fmt.Sprintf(`(document.querySelector(%q) || {textContent: ""}).textContent === "1 of 7"`, out+" .out-count")
	b.waitFor(t, "the count", count)

	// A prompt over the limit is refused: the page says so in a banner above the chat.
	b.do(t, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`const box = document.getElementById("prompt-input");
box.value = "x".repeat(%d); box.dispatchEvent(new Event("input", {bubbles: true}));`, shared.MaxPromptBytes+1)))
	b.do(t, chromedp.Click(chromedp.CSS(`.prompt button[type=submit]`)))
	b.waitFor(t, "the banner", `[...document.querySelectorAll(".alert")].some(e => e.textContent.startsWith("Not sent"))`)
	if !eval[bool](t, b, count) || eval[string](t, b, fmt.Sprintf(`(document.querySelector(%q) || {value: ""}).value`, search)) != "NEEDLE" {
		t.Fatalf("after the banner the output is closed or lost its search; the page says:\n%s", b.text(t, "main"))
	}
}

// Send's state comes from the store: once the prompt's stored message is on the page, the
// box is empty and Send is ready again, however long the POST's own answer takes (it waits
// until the turn is queued, which may mean starting an agent).
func TestSendStateFromTheStore(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	sess := s.session(t, "send")
	b := newBrowser(t)
	b.open(t, s.URL+"/sessions/"+sess.ID)
	b.waitLive(t, "Live")
	b.bypassWorker(t)
	paused := make(chan fetch.RequestID, 1)
	if err := chromedp.Listen(b.ctx, func(ev any) {
		if e, ok := ev.(*fetch.EventRequestPaused); ok && e.Request.Method == "POST" {
			select {
			case paused <- e.RequestID:
			default: // one prompt is sent
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	send(t, b, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*/messages", RequestStage: fetch.RequestStageResponse}}})

	b.do(t, chromedp.SendKeys(chromedp.CSS("#prompt-input"), "echo stored"), chromedp.Click(chromedp.CSS(`.prompt button[type=submit]`)))
	var id fetch.RequestID
	select {
	case id = <-paused: // the server answered; the page has not seen it
	case <-time.After(deadline):
		t.Fatal("the prompt's POST was never sent")
	}
	b.waitFor(t, "the prompt on the page", `[...document.querySelectorAll(".msg.user")].some(e => e.textContent === "echo stored")`)
	b.waitFor(t, "Send ready with an empty box", `(() => { const s = document.querySelector(".prompt button[type=submit]");
return s.textContent === "Send" && !s.disabled && document.getElementById("prompt-input").value === ""; })()`)

	send(t, b, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: id})
	b.waitFor(t, "the command's output", `[...document.querySelectorAll(".msg.cmd")].some(e => e.textContent.includes("echo stored"))`)
	if got := eval[string](t, b, `[...document.querySelectorAll(".alert")].map(e => e.textContent).join("\n")`); got != "" {
		t.Fatalf("banners after the answer: %s", got)
	}
}

// The page follows live output while the person is at its end: the newest line of a
// printing command stays in view above the prompt bar, on a desktop and on a phone. Read
// higher up, the page stays put and offers "jump to newest"; the session's header stays
// in view.
func TestPageFollowsLiveOutput(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	sess := s.session(t, "follow")
	filler := ":"
	for i := 1; i <= 60; i++ {
		filler += fmt.Sprintf("\n# an earlier line %d", i)
	}
	s.run(t, sess.ID, filler, nil)
	m := s.run(t, sess.ID, `for i in $(seq 1 100000); do echo "line $i"; sleep 0.05; done`, func(m shared.Message) bool {
		return m.Metadata.Status == shared.StatusRunning && shared.ShellOf(m).Output.StdoutBytes > 0
	})
	out := "#output-" + m.ID
	newest := fmt.Sprintf(`Number(([...document.querySelectorAll(%q)].pop() || {dataset: {n: 0}}).dataset.n)`, out+" pre.stdout .ln")
	atEnd := `scrollY + innerHeight >= document.documentElement.scrollHeight - 2`
	// The newest line drawn is fully above the prompt bar.
	newestShown := fmt.Sprintf(`(() => { const l = [...document.querySelectorAll(%q)].pop(), p = document.querySelector(".prompt");
return !!l && l.getBoundingClientRect().bottom <= p.getBoundingClientRect().top + 1; })()`, out+" pre.stdout .ln")
	headerShown := `document.querySelector(".session-page .bar").getBoundingClientRect().top === 0`
	jump := `(() => { const j = document.querySelector(".jump"); return !!j && j.getClientRects().length > 0; })()`
	moreLines := func(b *browser) {
		t.Helper()
		b.waitFor(t, "more lines", fmt.Sprintf(`%s >= %d`, newest, eval[int](t, b, newest)+10))
	}

	for _, size := range []struct {
		w, h   int64
		mobile bool
	}{{1280, 900, false}, {393, 851, true}} {
		b := newBrowser(t)
		if size.mobile {
			b.do(t, chromedp.EmulateViewport(size.w, size.h, chromedp.EmulateScale(2.75), chromedp.EmulateMobile))
		}
		b.open(t, s.URL+"/sessions/"+sess.ID)
		toggle := row(m.ID) + " button.disclosure-toggle"
		b.waitFor(t, "the disclosure", fmt.Sprintf(`!!document.querySelector(%q)`, toggle))
		b.do(t, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector(%q).click()`, toggle)))
		moreLines(b)
		b.waitFor(t, fmt.Sprintf("at %dx%d the newest line in view, at the end of the page", size.w, size.h), newestShown+" && "+atEnd+" && !"+jump)
		moreLines(b)
		if !eval[bool](t, b, newestShown+" && "+atEnd) {
			t.Fatalf("at %dx%d the page stopped following", size.w, size.h)
		}

		// Higher up the page stays where the person is, and offers the newest.
		b.wheelUp(t)
		b.waitFor(t, "jump to newest", jump)
		y := eval[float64](t, b, `scrollY`)
		moreLines(b)
		if got := eval[float64](t, b, `scrollY`); got != y {
			t.Fatalf("at %dx%d the page moved from %v to %v while the person read higher up", size.w, size.h, y, got)
		}
		if !eval[bool](t, b, headerShown) {
			t.Fatalf("at %dx%d the session's header scrolled away", size.w, size.h)
		}
		b.do(t, chromedp.Click(chromedp.CSS(".jump")))
		b.waitFor(t, "the end of the page again", newestShown+" && "+atEnd+" && !"+jump)
		if !size.mobile { // the pictures, at each size and scheme: following, then reading higher up
			b.screenshots(t, "follow", "")
			b.do(t, chromedp.EmulateViewport(size.w, size.h))
			b.wheelUp(t)
			b.waitFor(t, "jump to newest", jump)
			b.screenshots(t, "jump", "")
		}
	}
}

// wheelUp turns the mouse wheel up over the page, as a person scrolls back: over the
// session's sticky bar, since anywhere lower may be an output box that scrolls itself.
func (b *browser) wheelUp(t *testing.T) {
	t.Helper()
	y := eval[float64](t, b, `(r => (r.top + r.bottom) / 2)(document.querySelector(".session-page .bar").getBoundingClientRect())`)
	send(t, b, input.DispatchMouseEvent, input.DispatchMouseEventParams{Type: input.DispatchMouseEventTypeMouseWheel, X: 100, Y: y, DeltaX: -1, DeltaY: -600}) // deltaX is required, and 0 would be left out
}
