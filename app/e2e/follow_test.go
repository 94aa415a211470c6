//go:build !js

package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"

	"conch/shared"
)

// A first visit installs the first service worker, which claims the page: go-app calls
// that an update. The notice must wait for a worker that replaced an older one.
func TestNoUpdateNoticeOnFirstVisit(t *testing.T) {
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
