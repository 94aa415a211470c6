package e2e

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// The replay page steps through a session in time order, read-only: the keys, the buttons
// and the slider move it a message at a time or to the ends, and a command's output is
// fetched only when its disclosure is opened. Screenshots: artifacts/replay-*.png.
func TestReplayInTheBrowser(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	sess := s.session(t, "Replay three commands")
	s.run(t, sess.ID, "echo first", nil)
	s.run(t, sess.ID, "printf 'second\\n'", nil)
	last := s.run(t, sess.ID, "echo third; echo 'a warning' >&2", nil)

	b := newBrowser(t)
	b.do(t, chromedp.EmulateViewport(393, 851, chromedp.EmulateScale(2.75), chromedp.EmulateMobile))
	b.open(t, s.URL+"/sessions/"+sess.ID)
	b.screenshot(t, "replay-link-mobile-light.png")
	b.do(t, chromedp.EmulateViewport(1280, 900), chromedp.Click(chromedp.CSS("a.replay-link")))
	// The count is the session's when the page listed it (the agent's last words may
	// come after the command ended): the page does not follow the session live.
	b.waitFor(t, "the first message", `!document.getElementById("app-wasm-loader") &&
		(document.querySelector(".replay-at") || {textContent: ""}).textContent.startsWith("Message 1 of ")`)
	n, err := strconv.Atoi(regexp.MustCompile(`of (\d+)`).FindStringSubmatch(b.text(t, ".replay-at > span"))[1])
	if err != nil || n < 6 {
		t.Fatalf("the page counts %d messages (%v), want the 3 prompts and commands at least", n, err)
	}
	at := func(i int) {
		t.Helper()
		b.waitFor(t, fmt.Sprintf("message %d of %d", i, n), fmt.Sprintf(
			`(document.querySelector(".replay-at") || {textContent: ""}).textContent.startsWith("Message %d of %d")`, i, n))
	}
	if got := b.text(t, "#replay-step"); !strings.Contains(got, "echo first") {
		t.Errorf("the first step shows %q, want the first prompt", got)
	}
	b.do(t, chromedp.KeyEvent(kb.End))
	at(n)
	b.do(t, chromedp.KeyEvent(kb.ArrowLeft))
	at(n - 1)
	b.do(t, chromedp.Click(chromedp.CSS(`button[aria-label="Previous message"]`)))
	at(n - 2)
	b.do(t, chromedp.Evaluate[chromedp.Void](`(() => { const s = document.querySelector(".replay-slider");
		s.value = "2"; s.dispatchEvent(new Event("change", {bubbles: true})); })()`))
	at(2)
	b.do(t, chromedp.KeyEvent(kb.End))
	at(n)
	if got := b.total(); got != 0 {
		t.Errorf("stepping fetched %d outputs; none was opened", got)
	}
	if got := eval[int](t, b, `document.querySelectorAll("textarea, .prompt, form").length`); got != 0 {
		t.Errorf("the replay has %d prompt boxes or forms; it changes nothing", got)
	}
	b.do(t, chromedp.Click(chromedp.CSS(row(last.ID)+" button.disclosure-toggle")))
	b.waitLoads(t, last.ID, 1)
	b.waitFor(t, "the output", fmt.Sprintf(`(document.querySelector(%q) || {textContent: ""}).textContent.includes("a warning")`, row(last.ID)))
	b.checkAxe(t, "the replay page")
	b.screenshots(t, "replay", "")
}
