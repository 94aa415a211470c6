//go:build !js

package e2e

import (
	"testing"

	"github.com/chromedp/chromedp"
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
