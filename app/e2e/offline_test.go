//go:build !js

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"conch/shared"
)

// outputsKept is how many outputs the service worker keeps (app/ui's outputsKept).
const outputsKept = 32

// An output opened online is read again with the server gone, from the service worker's
// copy, marked as maybe out of date; an output never opened is unavailable as before.
func TestOpenedOutputReadableOffline(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	sess := s.session(t, "offline outputs")
	opened := s.run(t, sess.ID, `printf 'kept for offline\n'; printf 'a warning\n' >&2`, nil)
	never := s.run(t, sess.ID, `echo never opened`, nil)
	b := newBrowser(t)
	b.open(t, s.URL+"/sessions/"+sess.ID)
	b.waitFor(t, "the service worker", `navigator.serviceWorker.controller !== null`)

	button := row(opened.ID) + " button.disclosure-toggle"
	out := "#output-" + opened.ID
	b.waitFor(t, "the disclosure", fmt.Sprintf(`!!document.querySelector(%q)`, button))
	b.do(t, chromedp.Click(chromedp.CSS(button)))
	b.waitFor(t, "the transcript", fmt.Sprintf(`!!document.querySelector(%q)`, out+" pre.stderr"))
	if eval[bool](t, b, `!!document.querySelector(".out-offline")`) {
		t.Fatal("an answer from the server is marked offline")
	}
	b.waitFor(t, "the worker's copy", `(async () => (await (await caches.open("conch-outputs")).keys()).length === 1)()`)
	b.do(t, chromedp.Click(chromedp.CSS(button)))
	b.waitFor(t, "the disclosure to close", fmt.Sprintf(`document.querySelector(%q).getAttribute("aria-expanded") === "false"`, button))

	s.stop()
	// The page's offline notice moves the rows down: click once it is there.
	b.waitFor(t, "the offline notice", `!!document.querySelector(".notice.offline")`)
	b.do(t, chromedp.Click(chromedp.CSS(button)))
	b.waitFor(t, "the stale notice", fmt.Sprintf(`(document.querySelector(%q) || {textContent: ""}).textContent.includes("Offline: this output may be out of date.")`, out+" .out-offline"))
	text := b.text(t, out)
	for _, want := range []string{"kept for offline", "a warning", "Exit code 0"} {
		if !strings.Contains(text, want) {
			t.Errorf("the offline transcript lacks %q:\n%s", want, text)
		}
	}
	b.screenshots(t, "offline-output", out)
	b.checkAxe(t, "offline output")

	other := row(never.ID) + " button.disclosure-toggle"
	b.do(t, chromedp.Click(chromedp.CSS(other)))
	b.waitFor(t, "the unavailable state", fmt.Sprintf(`(document.querySelector(%q) || {textContent: ""}).textContent.includes("Command output unavailable.")`, "#output-"+never.ID+" .out-error"))
	if eval[bool](t, b, fmt.Sprintf(`!!document.querySelector(%q)`, "#output-"+never.ID+" .out-offline")) {
		t.Error("an output never opened shows the stale notice")
	}
}

// The worker keeps the newest outputsKept outputs: one more pushes the oldest out, and an
// answer that only appends is not kept in place of a whole one.
func TestOfflineOutputsBounded(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	sess := s.session(t, "many outputs")
	var urls []string
	for i := range outputsKept + 1 {
		m := s.run(t, sess.ID, fmt.Sprintf("echo output %d", i), nil)
		urls = append(urls, fmt.Sprintf("%s/api/v1/task-sessions/%s/messages/%s/shell-output", s.URL, sess.ID, m.ID))
	}
	b := newBrowser(t)
	b.open(t, s.URL+"/sessions/"+sess.ID)
	b.waitFor(t, "the service worker", `navigator.serviceWorker.controller !== null`)
	list := `["` + strings.Join(urls, `","`) + `"]`
	b.do(t, chromedp.Evaluate[chromedp.Void](`(async () => { for (const u of `+list+`) await fetch(u); })()`, chromedp.EvalAwaitPromise))
	kept := `(async () => (await (await caches.open("conch-outputs")).keys()).map(r => r.url))()`
	b.waitFor(t, "the newest outputs kept", fmt.Sprintf(`%s.then(k => k.length === %d && k[k.length - 1] === %q)`, kept, outputsKept, urls[outputsKept]))
	got := eval[[]string](t, b, kept)
	if got[0] != urls[1] {
		t.Errorf("oldest kept %s, want %s (the first pushed out)", got[0], urls[1])
	}

	// An offsets request answered with only what is new (nothing, here) leaves the whole
	// copy in place; a whole answer fetched after it shows the worker has handled it.
	last := urls[outputsKept]
	b.do(t, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(async () => { await fetch(%q); await fetch(%q); })()`,
		last+fmt.Sprintf("?stdout_offset=%d&stderr_offset=0", len(fmt.Sprintf("output %d\n", outputsKept))), urls[1]), chromedp.EvalAwaitPromise))
	b.waitFor(t, "the refetched output to be the newest", fmt.Sprintf(`%s.then(k => k[k.length - 1] === %q)`, kept, urls[1]))
	whole := eval[string](t, b, fmt.Sprintf(`(async () => (await (await caches.open("conch-outputs")).match(%q)).text())()`, last))
	var snap shared.ShellOutputSnapshot
	if err := json.Unmarshal([]byte(whole), &snap); err != nil || snap.Append != nil || snap.Output.Stdout != fmt.Sprintf("output %d\n", outputsKept) {
		t.Fatalf("kept copy %q (%v)", whole, err)
	}
}

// keptPages lists the paths of the session pages the service worker keeps, oldest first.
const keptPages = `(async () => (await (await caches.open("conch-pages")).keys()).map(r => new URL(r.url).pathname))()`

// A session page reloaded with the server gone shows its messages from the copy the
// service worker kept, says it is offline and that they may be out of date, and shows the
// output opened online. Pages loaded by the browser are kept, and so are pages opened
// inside the app, which are no navigation.
func TestSessionReadableOfflineAfterReload(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	sess := s.session(t, "offline reload")
	opened := s.run(t, sess.ID, `printf 'kept for offline\n'`, nil)
	other := s.session(t, "opened inside the app")
	inApp := s.run(t, other.ID, `echo in the other session`, nil)

	b := newBrowser(t)
	b.open(t, s.URL+"/sessions/"+sess.ID)
	b.waitFor(t, "the service worker", `navigator.serviceWorker.controller !== null`)
	b.do(t, chromedp.Reload()) // the first load came before the worker: this one is kept
	b.waitApp(t)
	b.waitFor(t, "the kept page", keptPages+fmt.Sprintf(`.then(k => k.includes(%q))`, "/sessions/"+sess.ID))
	button := row(opened.ID) + " button.disclosure-toggle"
	b.waitFor(t, "the disclosure", fmt.Sprintf(`!!document.querySelector(%q)`, button))
	b.do(t, chromedp.Click(chromedp.CSS(button)))
	b.waitFor(t, "the worker's copy of the output", `(async () => (await (await caches.open("conch-outputs")).keys()).length === 1)()`)

	// Inside the app: the task list, then the other session.
	b.do(t, chromedp.Click(chromedp.CSS("a.back")))
	link := fmt.Sprintf(`a[href=%q]`, "/sessions/"+other.ID)
	b.waitFor(t, "the other session's link", fmt.Sprintf(`!!document.querySelector(%q)`, link))
	b.do(t, chromedp.Click(chromedp.CSS(link)))
	b.waitLive(t, "Live")
	b.waitFor(t, "the page opened inside the app to be kept", keptPages+fmt.Sprintf(`.then(k => k.includes(%q))`, "/sessions/"+other.ID))

	s.stop()
	offline := `(document.querySelector(".notice.offline") || {textContent: ""}).textContent`
	for _, c := range []struct {
		sess shared.Session
		msg  shared.Message
		load chromedp.Action[chromedp.Void]
	}{{other, inApp, chromedp.Reload()}, {sess, opened, chromedp.Navigate(s.URL + "/sessions/" + sess.ID)}} {
		b.do(t, c.load)
		b.waitApp(t)
		b.waitFor(t, "the offline notice", offline+`.includes("may be out of date")`)
		if got := b.text(t, row(c.msg.ID)+" .cmd-text"); got != shared.ShellOf(c.msg).Command {
			t.Errorf("offline, session %s shows the command %q, want %q", c.sess.ID, got, shared.ShellOf(c.msg).Command)
		}
	}
	b.do(t, chromedp.Click(chromedp.CSS(button)))
	out := "#output-" + opened.ID
	b.waitFor(t, "the stale output", fmt.Sprintf(`(document.querySelector(%q) || {textContent: ""}).textContent.includes("Offline: this output may be out of date.")`, out+" .out-offline"))
	if text := b.text(t, out); !strings.Contains(text, "kept for offline") {
		t.Errorf("the offline transcript lacks its output:\n%s", text)
	}
	b.screenshots(t, "offline-reload", ".notice.offline")
	b.checkAxe(t, "session page reloaded offline")
}

// Signing out forgets every copy the service worker kept (pages and outputs), so the next
// person on the device finds nothing of this one's sessions.
func TestSignOutClearsKeptCopies(t *testing.T) {
	t.Parallel()
	s := startServerWithToken(t)
	sess := s.session(t, "private")
	m := s.run(t, sess.ID, `echo private output`, nil)
	b := newBrowser(t)
	b.do(t, chromedp.Navigate(s.URL+"/sessions/"+sess.ID+"?token="+e2eToken))
	b.waitApp(t)
	b.waitFor(t, "the service worker", `navigator.serviceWorker.controller !== null`)
	b.do(t, chromedp.Reload())
	b.waitApp(t)
	button := row(m.ID) + " button.disclosure-toggle"
	b.waitFor(t, "the disclosure", fmt.Sprintf(`!!document.querySelector(%q)`, button))
	b.do(t, chromedp.Click(chromedp.CSS(button)))
	b.waitFor(t, "the kept output", `(async () => (await (await caches.open("conch-outputs")).keys()).length === 1)()`)
	b.waitFor(t, "the kept page", keptPages+`.then(k => k.length === 1)`)

	b.do(t, chromedp.Click(chromedp.CSS("a.back")))
	signOut := `[...document.querySelectorAll(".bar button")].find(e => e.textContent === "Sign out")`
	b.waitFor(t, "the sign-out button", "!!"+signOut)
	b.do(t, chromedp.Evaluate[chromedp.Void](signOut+".click()"))
	b.waitThrough(t, "the sign-in page", `location.pathname === "/login" && !!document.querySelector("#token")`)
	kept := eval[[]string](t, b, `(async () => {
		const urls = [];
		for (const name of await caches.keys()) {
			for (const r of await (await caches.open(name)).keys()) urls.push(name + " " + r.url);
		}
		return urls;
	})()`)
	if len(kept) != 0 {
		t.Errorf("after signing out the browser still keeps %d copies: %v", len(kept), kept)
	}
}

// Before app.wasm has loaded (here: never, it is blocked), a session page already shows
// its messages, prerendered by the server, scrolled to the newest; the app, once it runs,
// starts from the same messages.
func TestSessionPagePrerendersNewestMessages(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	sess := s.session(t, "prerendered")
	seed(t, s, sess.ID, 25, func(i int) string { return fmt.Sprintf("echo prerendered %d", i) })
	newest := `[...document.querySelectorAll(".messages .msg")].pop()`
	inView := `((r) => r.bottom > 0 && r.top < innerHeight)(` + newest + `.getBoundingClientRect())`

	b := newBrowser(t)
	send(t, b, network.Enable, network.EnableParams{})
	send(t, b, network.SetBlockedURLs, network.SetBlockedURLsParams{URLPatterns: []*network.BlockPattern{{URLPattern: "*://*:*/web/app.wasm", Block: true}}})
	b.do(t, chromedp.Navigate(s.URL+"/sessions/"+sess.ID))
	b.waitFor(t, "the newest message in view", `document.readyState === "complete" && `+inView)
	if n := eval[int](t, b, `document.querySelectorAll(".messages .cmd").length`); n != 25 {
		t.Errorf("the prerendered page shows %d commands, want 25", n)
	}
	if got := eval[string](t, b, newest+`.textContent.trim()`); got != "exit 0" {
		t.Errorf("the newest message reads %q", got)
	}
	if eval[bool](t, b, `!!document.querySelector(".live")`) {
		t.Fatal("the app runs although app.wasm is blocked")
	}
	b.screenshots(t, "prerendered-session", ".messages > .chunk > :last-child")

	a := newBrowser(t)
	a.open(t, s.URL+"/sessions/"+sess.ID)
	a.waitLive(t, "Live")
	a.waitFor(t, "the newest message in view", inView)
	if n := eval[int](t, a, `document.querySelectorAll(".messages .cmd").length`); n != 25 {
		t.Errorf("the app shows %d commands, want 25", n)
	}
}

// An error's whole text opened online is read again offline, after a reload with the
// server gone, from the service worker's copy.
func TestOpenedErrorDetailReadableOffline(t *testing.T) {
	t.Parallel()
	s, sess, b := openScripted(t, "offline error")
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if _, err := s.API.SendMessage(ctx, sess.ID, "fail long", ""); err != nil {
		t.Fatal(err)
	}
	toggle, text := ".msg.error button.disclosure-toggle", ".msg.error pre.error-text"
	b.waitFor(t, "the error's disclosure", fmt.Sprintf(`!!document.querySelector(%q)`, toggle))
	b.waitFor(t, "the service worker", `navigator.serviceWorker.controller !== null`)
	b.do(t, chromedp.Reload()) // the first load came before the worker: this one is kept
	b.waitApp(t)
	b.waitFor(t, "the kept page", keptPages+fmt.Sprintf(`.then(k => k.includes(%q))`, "/sessions/"+sess.ID))
	b.waitFor(t, "the error's disclosure", fmt.Sprintf(`!!document.querySelector(%q)`, toggle))
	b.do(t, chromedp.Click(chromedp.CSS(toggle)))
	b.waitFor(t, "the whole error", fmt.Sprintf(`!!document.querySelector(%q)`, text))
	b.waitFor(t, "the worker's copy", `(async () => (await (await caches.open("conch-outputs")).keys()).some(r => r.url.endsWith("/error-detail")))()`)

	s.stop()
	b.do(t, chromedp.Reload())
	b.waitApp(t)
	b.waitFor(t, "the offline notice", `!!document.querySelector(".notice.offline")`)
	b.do(t, chromedp.Click(chromedp.CSS(toggle)))
	b.waitFor(t, "the whole error offline", fmt.Sprintf(`!!document.querySelector(%q)`, text))
	if got := b.text(t, text); strings.Count(got, "\n") != 123 || !strings.Contains(got, `agent "gemini" specializing`) {
		t.Errorf("the offline error, %d lines: %.300q", strings.Count(got, "\n"), got)
	}
	b.screenshots(t, "offline-error-detail", text)
}
