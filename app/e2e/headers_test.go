//go:build !js

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// consoleLog keeps what a page's console shows (messages, browser log entries such as CSP
// refusals, uncaught exceptions) and the requests it sends, and signals each new line.
type consoleLog struct {
	mu      sync.Mutex
	lines   []string
	changed chan struct{}
}

func listenConsole(t *testing.T, b *browser) *consoleLog {
	t.Helper()
	l := &consoleLog{changed: make(chan struct{}, 1)}
	if err := chromedp.Listen(b.ctx, l.observe); err != nil {
		t.Fatal(err)
	}
	return l
}

func (l *consoleLog) observe(ev any) {
	var line string
	switch e := ev.(type) {
	case *cdplog.EventEntryAdded:
		line = fmt.Sprintf("log %s/%s: %s", e.Entry.Source, e.Entry.Level, e.Entry.Text)
	case *runtime.EventConsoleAPICalled:
		var args []string
		for _, a := range e.Args {
			args = append(args, strings.Trim(string(a.Value), `"`)+a.Description)
		}
		line = fmt.Sprintf("console.%s: %s", e.Type, strings.Join(args, " "))
	case *runtime.EventExceptionThrown:
		line = "exception: " + e.ExceptionDetails.Text
	case *network.EventRequestWillBeSent:
		line = "request: " + e.Request.URL
	default:
		return
	}
	l.mu.Lock()
	l.lines = append(l.lines, line)
	l.mu.Unlock()
	select {
	case l.changed <- struct{}{}:
	default:
	}
}

// matching returns the lines that contain any of subs.
func (l *consoleLog) matching(subs ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		for _, s := range subs {
			if strings.Contains(line, s) {
				out = append(out, line)
				break
			}
		}
	}
	return out
}

// await waits until a line contains one of subs and returns the first such line.
func (l *consoleLog) await(t *testing.T, what string, subs ...string) string {
	t.Helper()
	timeout := time.After(deadline)
	for {
		if got := l.matching(subs...); len(got) > 0 {
			return got[0]
		}
		select {
		case <-l.changed:
		case <-timeout:
			t.Fatalf("no %s within %v", what, deadline)
		}
	}
}

// cspComplaints are what a page's console says when the policy blocks something.
var cspComplaints = []string{"Content Security Policy", "Content-Security-Policy", "Refused to"}

// TestSecurityHeadersInTheBrowser: a page of another origin (a second 127.0.0.1 listener)
// cannot frame Conch; under Conch's own policy the app boots, runs a session with its
// WebSocket and an output fetch, opens offline from its worker, and the console never
// reports a blocked resource.
func TestSecurityHeadersInTheBrowser(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	sess := s.session(t, "security headers")
	m := s.run(t, sess.ID, "echo under the policy", nil)

	framer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>framer</title><iframe src="%s/sessions/%s" width="800" height="600"></iframe>`, s.URL, sess.ID)
	}))
	defer framer.Close()
	f := newBrowser(t)
	framing := listenConsole(t, f)
	f.do(t, chromedp.Navigate(framer.URL))
	// Either the browser refuses the frame, or the framed page loads its scripts.
	got := framing.await(t, "refusal or load of the framed page", "frame-ancestors", "request: "+s.URL+"/app.js")
	if !strings.Contains(got, "frame-ancestors") {
		t.Fatalf("another origin framed Conch: %s", got)
	}
	if loaded := framing.matching("request: "+s.URL+"/app.js", "request: "+s.URL+"/web/"); len(loaded) > 0 {
		t.Errorf("the refused frame loaded Conch's files: %v", loaded)
	}

	b := newBrowser(t)
	console := listenConsole(t, b)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the app's console:\n%s", strings.Join(console.matching(""), "\n"))
		}
	})
	ctx, cancel := context.WithTimeout(b.ctx, deadline)
	resp, err := chromedp.RunResponse(ctx, chromedp.Navigate(s.URL+"/sessions/"+sess.ID))
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	policy := header(resp.Headers, "Content-Security-Policy")
	for _, want := range []string{"script-src 'self' 'wasm-unsafe-eval'", "frame-ancestors 'none'"} {
		if !strings.Contains(policy, want) {
			t.Errorf("the page's policy %q lacks %s", policy, want)
		}
	}
	b.waitApp(t)
	b.waitFor(t, "the live WebSocket", `!!document.querySelector(".live-on")`)
	button := row(m.ID) + " button.disclosure-toggle"
	b.waitFor(t, "the disclosure", fmt.Sprintf(`!!document.querySelector(%q)`, button))
	b.do(t, chromedp.Click(chromedp.CSS(button)))
	b.waitFor(t, "the output", fmt.Sprintf(`(document.querySelector("#output-%s") || {textContent: ""}).textContent.includes("under the policy")`, m.ID))
	b.waitFor(t, "the service worker", `navigator.serviceWorker.controller !== null`)
	b.waitFor(t, "the cached shell", `(async () => !!(await caches.match("/")) && !!(await caches.match("/web/app.wasm")) && !!(await caches.match("/web/conch.js")))()`)

	s.stop()
	b.do(t, chromedp.Reload())
	b.waitApp(t)
	b.waitFor(t, "the offline notice", `(document.querySelector(".notice.offline") || {innerText: ""}).innerText.includes("offline")`)
	if complaints := console.matching(cspComplaints...); len(complaints) > 0 {
		t.Errorf("the console reports what the policy blocked:\n%s", strings.Join(complaints, "\n"))
	}
}
