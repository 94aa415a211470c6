//go:build !js

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"conch/shared"
	"conch/shared/poll"
)

// dwell is how long a test watches for requests that must not happen.
const dwell = 3 * time.Second

// longCommand wraps over several lines at any width, prints to both streams and exits 7.
const longCommand = `echo "first line of output"; echo "a line on standard error" >&2; ` +
	`: this part of the command is deliberately long so that the row has to wrap it over several lines instead of cutting it off at the edge; ` +
	`exit 7`

func TestNoOutputNoDisclosure(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	sess := s.session(t, "no output")
	m := s.run(t, sess.ID, "true", nil)
	if sh := shared.ShellOf(m); sh.Output.HasOutput {
		t.Fatalf("summary of `true` has output: %+v", sh.Output)
	}

	b := newBrowser(t)
	b.open(t, s.URL+"/sessions/"+sess.ID)
	b.waitFor(t, "the command row", fmt.Sprintf(`!!document.querySelector(%q)`, row(m.ID)+" .status-text"))
	if n := eval[int](t, b, fmt.Sprintf(`document.querySelectorAll(%q).length`, row(m.ID)+" button")); n != 0 {
		t.Fatalf("a command without output shows %d buttons", n)
	}
	if got := b.text(t, row(m.ID)+" .status-text"); got != "Command succeeded" {
		t.Fatalf("status %q, want Command succeeded", got)
	}
	if n := b.snapshots(m.ID); n != 0 {
		t.Fatalf("%d snapshot requests for a command without output", n)
	}
}

func TestCompletedOutputFetchedOnceOnOpen(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	sess := s.session(t, "exit 7")
	m := s.run(t, sess.ID, longCommand, nil)
	if st := m.Metadata.Status; st != shared.StatusFailed {
		t.Fatalf("status %s, want failed", st)
	}

	b := newBrowser(t)
	b.open(t, s.URL+"/sessions/"+sess.ID)
	button := row(m.ID) + " button.disclosure-toggle"
	b.waitFor(t, "the disclosure", fmt.Sprintf(`!!document.querySelector(%q)`, button))

	// The whole command is shown, wrapped over several lines, never cut.
	if got := b.text(t, row(m.ID)+" .cmd-text"); got != longCommand {
		t.Fatalf("command shown as %q", got)
	}
	lines := eval[float64](t, b, fmt.Sprintf(`(() => { const e = document.querySelector(%q);
		return e.getBoundingClientRect().height / parseFloat(getComputedStyle(e).lineHeight); })()`, row(m.ID)+" .cmd-text"))
	if lines < 2 {
		t.Fatalf("the long command takes %.1f lines, want it wrapped over several", lines)
	}
	if got := b.text(t, row(m.ID)+" .status-text"); got != "Command failed" {
		t.Fatalf("status %q, want Command failed", got)
	}
	if name := eval[string](t, b, fmt.Sprintf(`document.querySelector(%q).getAttribute("aria-label")`, button)); name != "Show command output: "+b.text(t, button) {
		t.Fatalf("the collapsed disclosure is named %q: not Show command output with its visible label", name)
	}
	if label := b.text(t, button); !strings.HasPrefix(label, "Output · ") || !strings.HasSuffix(label, " B") {
		t.Fatalf("label %q", label)
	}
	if n := b.snapshots(m.ID); n != 0 {
		t.Fatalf("%d snapshot requests before the click", n)
	}

	b.do(t, chromedp.Click(chromedp.CSS(button)))
	out := "#output-" + m.ID
	b.waitFor(t, "the transcript", fmt.Sprintf(`(document.querySelector(%q) || {innerText: ""}).innerText.includes("Exit code 7")`, out))
	transcript := b.text(t, out)
	for _, want := range []string{"first line of output", "a line on standard error", "Exit code 7"} {
		if !strings.Contains(transcript, want) {
			t.Errorf("transcript lacks %q:\n%s", want, transcript)
		}
	}
	if got := b.text(t, out+" pre.stderr"); !strings.Contains(got, "a line on standard error") {
		t.Errorf("stderr is not in its own block: %q", got)
	}
	if !strings.HasPrefix(eval[string](t, b, fmt.Sprintf(`document.querySelector(%q).getAttribute("aria-label")`, button)), "Hide command output: Output · ") {
		t.Fatal("the open disclosure is not named Hide command output")
	}
	if n := b.snapshots(m.ID); n != 1 {
		t.Fatalf("%d snapshot requests after the click, want 1", n)
	}
	time.Sleep(dwell) // a finished command must not be polled
	if n := b.snapshots(m.ID); n != 1 {
		t.Fatalf("%d snapshot requests after a dwell, want still 1", n)
	}
	b.screenshot(t, "desktop.png")

	// Closing by keyboard: Tab reaches the disclosure with a visible focus ring, Enter
	// closes it and removes the transcript; nothing more is fetched.
	b.do(t, chromedp.Evaluate[chromedp.Void](`document.activeElement.blur(); window.scrollTo(0, 0)`))
	focused := fmt.Sprintf(`document.activeElement === document.querySelector(%q)`, button)
	// (Tab starts after the last click, so it passes the transcript's tools on its way.)
	for i := 0; i < 30 && !eval[bool](t, b, focused); i++ {
		b.do(t, chromedp.KeyEvent("\t"))
	}
	if !eval[bool](t, b, focused) {
		t.Fatal("Tab does not reach the disclosure button")
	}
	if ring := eval[string](t, b, `getComputedStyle(document.activeElement).outlineStyle`); ring == "none" {
		t.Fatal("the focused disclosure button has no visible focus ring")
	}
	b.do(t, chromedp.KeyEvent("\r"))
	b.waitFor(t, "the transcript to go", fmt.Sprintf(`!document.querySelector(%q)`, out))
	if n := b.snapshots(m.ID); n != 1 {
		t.Fatalf("%d snapshot requests after closing, want 1", n)
	}
}

func TestRunningOutputPollsUntilFinished(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	sess := s.session(t, "running")
	b := newBrowser(t)
	b.open(t, s.URL+"/sessions/"+sess.ID)
	b.waitLive(t, "Live")

	const command = `for i in 1 2 3; do echo $i; sleep 1; done`
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	// The disclosure must be opened while the command runs, a window of about two seconds
	// after its first output: on a starved machine the row may finish first, and then the
	// command is run again (at most three times).
	var id string
	var n int
	for attempt := 1; ; attempt++ {
		if _, err := s.API.SendMessage(ctx, sess.ID, command, fmt.Sprintf("running-%d", attempt)); err != nil {
			t.Fatal(err)
		}
		// The row arrives over the WebSocket; its disclosure appears once the summary has
		// output. Checking and clicking happen in one step, while the row says running.
		ctx, cancel := context.WithTimeout(b.ctx, deadline)
		var err error
		id, err = chromedp.Run(ctx, chromedp.Poll[string](`(() => {
			const b = document.querySelector(".cmd-running button.disclosure-toggle");
			if (!b) return "";
			b.click();
			return b.closest("[data-message-id]").dataset.messageId;
		})()`, chromedp.WithPollingTimeout(deadline), chromedp.WithPollingInterval(20*time.Millisecond)))
		cancel()
		if err != nil {
			t.Fatalf("no running command with output to open: %v", err)
		}
		out := "#output-" + id
		b.waitFor(t, "the final transcript", fmt.Sprintf(`(document.querySelector(%q) || {innerText: ""}).innerText.includes("Exit code 0")`, out))
		if got := b.text(t, out+" pre.stdout"); got != "1\n2\n3\n" {
			t.Fatalf("final stdout %q", got)
		}
		if got := b.text(t, row(id)+" .status-text"); got != "Command succeeded" {
			t.Fatalf("status %q, want Command succeeded", got)
		}
		if n = b.snapshots(id); n >= 2 {
			break
		}
		if attempt == 3 {
			t.Fatalf("%d snapshot requests for a command open while running, want it refreshed", n)
		}
		t.Logf("attempt %d: the command finished before the disclosure opened; again", attempt)
	}
	time.Sleep(dwell) // finished: polling must have stopped
	if after := b.snapshots(id); after != n {
		t.Fatalf("%d snapshot requests after finishing, then %d after a dwell: still polling", n, after)
	}
}

// While a running command's output stays the same, every poll names the version the page
// holds and is answered 304 with no body, and nothing on screen changes.
func TestUnchangedPollsCarryNoBody(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	b, m := s.openRunning(t, `echo start; sleep 60`, len("start\n"))
	b.waitFor(t, "the transcript", fmt.Sprintf(`(document.querySelector(%q) || {textContent: ""}).textContent === "start\n"`,
		"#output-"+m.ID+" pre.stdout"))
	b.do(t, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`window.__changes = 0;
		new MutationObserver((ms) => { window.__changes += ms.length; }).observe(document.querySelector(%q),
			{subtree: true, childList: true, characterData: true, attributes: true});`, "#output-"+m.ID)))
	watched := len(b.finished(m.ID))
	loads := b.waitLoads(t, m.ID, watched+5)

	first := loads[0]
	if first.status != 200 || first.ifNoneMatch != "" || first.etag == "" || first.bodyBytes == 0 {
		t.Fatalf("first snapshot request: %+v, want an unconditional 200 with an ETag and a body", first)
	}
	for i, l := range loads {
		t.Logf("request %d: status %d, If-None-Match %s, %.0f bytes received, %d of them body", i+1, l.status, l.ifNoneMatch, l.bytes, l.bodyBytes)
		if i > 0 && (l.status != 304 || l.ifNoneMatch != first.etag || l.bodyBytes != 0) {
			t.Errorf("poll %d: %+v, want 304 to If-None-Match %s with no body", i+1, l, first.etag)
		}
	}
	if n := eval[int](t, b, `window.__changes`); n != 0 {
		// (The transcript, not the row: the row's running time counts up on purpose.)
		t.Errorf("the transcript changed %d times during %d unchanged polls", n, len(loads)-watched)
	}
	if eval[int](t, b, fmt.Sprintf(`document.querySelectorAll(%q).length`, row(m.ID)+".cmd-running")) != 1 {
		t.Error("the command is no longer shown running: its output may have changed")
	}
}

func TestUnknownExitIsNeutral(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	sess := s.session(t, "unknown exit")
	killed := s.run(t, sess.ID, `echo before the signal; kill -KILL $$`, nil)
	if sh := shared.ShellOf(killed); sh.Output.ExitCode != nil {
		t.Fatalf("a command killed by a signal has exit code %d", *sh.Output.ExitCode)
	}

	b := newBrowser(t)
	b.open(t, s.URL+"/sessions/"+sess.ID)
	button := row(killed.ID) + " button.disclosure-toggle"
	b.waitFor(t, "the disclosure", fmt.Sprintf(`!!document.querySelector(%q)`, button))
	if n := eval[int](t, b, fmt.Sprintf(`document.querySelectorAll(%q).length`, row(killed.ID)+" .icon-neutral")); n != 1 {
		t.Fatalf("a command killed by a signal has no neutral icon")
	}
	b.do(t, chromedp.Click(chromedp.CSS(button)))
	out := "#output-" + killed.ID
	b.waitFor(t, "the transcript", fmt.Sprintf(`(document.querySelector(%q) || {innerText: ""}).innerText.includes("Exit code unavailable")`, out))
	if got := b.text(t, out); !strings.Contains(got, "before the signal") {
		t.Fatalf("transcript %q", got)
	}

	// A cancelled command keeps its output and is neutral too.
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	const long = `echo started; sleep 30`
	if _, err := s.API.SendMessage(ctx, sess.ID, long, "cancel-1"); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, "the running command", `!!document.querySelector(".cmd-running")`)
	id := eval[string](t, b, `document.querySelector(".cmd-running").dataset.messageId`)
	if err := s.API.Cancel(ctx, sess.ID); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, "the cancelled command", fmt.Sprintf(`!!document.querySelector(%q)`, row(id)+".cmd-neutral"))
	if got := b.text(t, row(id)+" .status-text"); got != "Command cancelled" {
		t.Fatalf("status %q, want Command cancelled", got)
	}
}

func TestMobileStaysWithinWidth(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	sess := s.session(t, "mobile")
	long := `printf '%s\n' "$(printf 'unbroken-output-%.0s' $(seq 1 200))"; ` + longCommand
	m := s.run(t, sess.ID, long, nil)

	b := newBrowser(t)
	b.do(t, chromedp.EmulateViewport(393, 851, chromedp.EmulateScale(2.75), chromedp.EmulateMobile))
	b.open(t, s.URL+"/sessions/"+sess.ID)
	button := row(m.ID) + " button.disclosure-toggle"
	b.waitFor(t, "the disclosure", fmt.Sprintf(`!!document.querySelector(%q)`, button))
	// Clicked through the element, not at coordinates: the page lands at its end meanwhile
	// (and follows it), and a click at where the button was lands elsewhere, opening nothing.
	b.do(t, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector(%q).click()`, button)))
	b.waitFor(t, "the disclosure to open", fmt.Sprintf(`document.querySelector(%q).getAttribute("aria-expanded") === "true"`, button))
	out := "#output-" + m.ID
	b.waitFor(t, "the transcript", fmt.Sprintf(`(document.querySelector(%q) || {textContent: ""}).textContent.includes("Exit code 7")`, out))

	for _, sel := range []string{row(m.ID) + " .cmd-text", button, out, out + " pre.stdout", row(m.ID)} {
		right := eval[float64](t, b, fmt.Sprintf(`document.querySelector(%q).getBoundingClientRect().right`, sel))
		if right > 393 {
			t.Errorf("%s ends at %.0f px, past the 393 px viewport", sel, right)
		}
	}
	if w := eval[int](t, b, `document.documentElement.scrollWidth`); w > 393 {
		t.Errorf("the page is %d px wide: it scrolls sideways", w)
	}
	b.screenshot(t, "mobile.png")

	// The narrowest phones: still no sideways scroll.
	b.do(t, chromedp.EmulateViewport(360, 740, chromedp.EmulateScale(3), chromedp.EmulateMobile))
	b.waitFor(t, "the 360 px layout", `window.innerWidth === 360`)
	if w := eval[int](t, b, `document.documentElement.scrollWidth`); w > 360 {
		t.Errorf("at 360 px the page is %d px wide", w)
	}
}

func TestReloadShowsSameConversation(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	sess := s.session(t, "reload")
	s.run(t, sess.ID, "echo one", nil)
	s.run(t, sess.ID, "true", nil)
	s.run(t, sess.ID, "echo three; exit 3", nil)

	b := newBrowser(t)
	b.open(t, s.URL+"/sessions/"+sess.ID)
	conversation := `Array.from(document.querySelectorAll(".messages .msg")).map(e => e.textContent).join("\n---\n")`
	b.waitFor(t, "three commands", `document.querySelectorAll(".messages .cmd .status-text").length === 3`)
	before := eval[string](t, b, conversation)

	b.do(t, chromedp.Reload())
	b.waitApp(t)
	b.waitFor(t, "three commands again", `document.querySelectorAll(".messages .cmd .status-text").length === 3`)
	if after := eval[string](t, b, conversation); after != before {
		t.Fatalf("after a reload:\n%s\nbefore:\n%s", after, before)
	}
	for _, want := range []string{"echo one", "echo three; exit 3", "Command failed"} {
		if !strings.Contains(before, want) {
			t.Errorf("conversation lacks %q:\n%s", want, before)
		}
	}
}

func TestOfflineShellFromServiceWorker(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	sess := s.session(t, "offline")
	b := newBrowser(t)
	url := s.URL + "/sessions/" + sess.ID
	b.open(t, url)
	// The worker caches the shell while installing; wait until it controls the page
	// and holds the shell and the WASM.
	b.waitFor(t, "the service worker", `navigator.serviceWorker.controller !== null`)
	b.waitFor(t, "the cached shell", `(async () => !!(await caches.match("/")) && !!(await caches.match("/web/app.wasm")))()`)

	// The update notice: a page that already had a worker sees a controller change when a
	// new version takes over. Deploying a second build is out of reach here, so the event
	// is sent by hand; the page's hook and go-app's update path do the rest.
	b.do(t, chromedp.Reload())
	b.waitApp(t)
	b.do(t, chromedp.Evaluate[chromedp.Void](`navigator.serviceWorker.dispatchEvent(new Event("controllerchange"))`))
	b.waitFor(t, "the update notice", `(document.querySelector(".notice.update") || {innerText: ""}).innerText.includes("A new version of Conch is available")`)

	s.stop()
	b.do(t, chromedp.Reload())
	b.waitApp(t)
	b.waitFor(t, "the offline notice", `(document.querySelector(".notice.offline") || {innerText: ""}).innerText.includes("offline")`)
	if !strings.Contains(eval[string](t, b, `location.pathname`), sess.ID) {
		t.Fatal("the deep link was not kept")
	}
	if n := eval[int](t, b, `document.querySelectorAll(".session-page").length`); n != 1 {
		t.Fatal("the offline shell did not render the session route")
	}
}

func TestCreateTaskThenPromptFromTheBrowser(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	b := newBrowser(t)
	b.do(t, chromedp.Navigate(s.URL+"/"))
	b.waitFor(t, "the agents", `!!document.querySelector("#task-agent option[value=shell]") && !document.querySelector(".new-task button[disabled]")`)
	b.do(t,
		chromedp.SendKeys(chromedp.CSS("#task-title"), "Typed in the browser"),
		chromedp.SendKeys(chromedp.CSS("#task-desc"), "from the form"),
	)
	// Clicks go through the elements, not at coordinates: a live list that changes above a
	// button moves it between chromedp finding it and the click.
	b.do(t, chromedp.Evaluate[chromedp.Void](`document.querySelector(".new-task button[type=submit]").click()`))
	b.waitFor(t, "the new session page", `location.pathname.startsWith("/sessions/") && !!document.querySelector(".live")`)
	b.waitLive(t, "Live")

	b.do(t,
		chromedp.SendKeys(chromedp.CSS("#prompt-input"), "echo typed; exit 4"),
		chromedp.KeyEvent("\r"),
	)
	b.waitFor(t, "the command to finish", `[...document.querySelectorAll(".cmd-failed .cmd-text")].some(e => e.textContent === "echo typed; exit 4")`)
	if got := eval[string](t, b, `document.querySelector("#prompt-input").value`); got != "" {
		t.Fatalf("the prompt box still holds %q", got)
	}
	if n := eval[int](t, b, `[...document.querySelectorAll(".msg.user")].filter(e => e.textContent === "echo typed; exit 4").length`); n != 1 {
		t.Fatalf("the prompt is shown %d times, want once", n)
	}

	// The task list shows the task with its session.
	b.do(t, chromedp.Evaluate[chromedp.Void](`document.querySelector("a.back").click()`))
	b.waitFor(t, "the task list", `[...document.querySelectorAll(".task h3")].some(e => e.textContent === "Typed in the browser")`)
	if n := eval[int](t, b, `document.querySelectorAll(".task .sessions a[href^='/sessions/']").length`); n != 1 {
		t.Fatalf("%d session links, want 1", n)
	}
}

func TestReconnectRelistsWithoutDoubles(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "conch.db")
	s := startServerAt(t, "127.0.0.1:0", db)
	sess := s.session(t, "reconnect")
	s.run(t, sess.ID, "echo before the restart", nil)

	b := newBrowser(t)
	b.open(t, s.URL+"/sessions/"+sess.ID)
	b.waitLive(t, "Live")
	b.waitFor(t, "the conversation", `document.querySelectorAll(".messages .msg").length === 3`)

	s.stop()
	b.waitLive(t, "Reconnecting…")
	b.waitFor(t, "the offline notice", `!!document.querySelector(".notice.offline")`)

	// The same address and database: the page reconnects by itself, re-lists, and shows
	// each message once, with the session state the restart left (closed).
	startServerAt(t, strings.TrimPrefix(s.URL, "http://"), db)
	b.waitLive(t, "Live")
	b.waitFor(t, "the closed session", `(document.querySelector(".bar .badge") || {textContent: ""}).textContent === "closed"`)
	if n := eval[int](t, b, `document.querySelectorAll(".messages .msg").length`); n != 3 {
		t.Fatalf("%d messages after the reconnect, want the same 3", n)
	}
	if eval[bool](t, b, `!!document.querySelector(".notice.offline")`) {
		t.Fatal("the offline notice stayed after the reconnect")
	}
}

func TestUnknownSession(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	b := newBrowser(t)
	dials := make(chan string, 16)
	if err := chromedp.Listen(b.ctx, func(ev any) {
		if e, ok := ev.(*network.EventWebSocketCreated); ok {
			dials <- e.URL
		}
	}); err != nil {
		t.Fatal(err)
	}
	b.do(t, chromedp.Navigate(s.URL+"/sessions/no-such-session"))
	b.waitFor(t, "the not-found page", `(document.querySelector("h1") || {}).textContent === "Session not found" && !document.body.innerText.includes("Loading messages")`)
	select {
	case <-dials:
	case <-time.After(deadline):
		t.Fatal("the page never dialled the WebSocket")
	}
	// A loop that went on would dial again after its first backoff; watch twice as long.
	select {
	case url := <-dials:
		t.Fatalf("the page dialled %s again after learning the session does not exist", url)
	case <-time.After(2 * poll.Backoff(1)):
	}
	if n := eval[int](t, b, `document.querySelectorAll(".live").length`); n != 0 {
		t.Fatalf("the live indicator is still shown (%d)", n)
	}
}

// A session watched live past one chunk (100 messages): every message once, in order,
// and the same conversation after a reload.
func TestLongLiveSessionInOrder(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	sess := s.session(t, "long live session")
	b := newBrowser(t)
	b.open(t, s.URL+"/sessions/"+sess.ID)
	b.waitLive(t, "Live")

	const n = 40 // three messages each: prompt, command, agent text
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	var want []string
	for i := range n {
		cmd := fmt.Sprintf("echo %d", i)
		want = append(want, cmd)
		if _, err := s.API.SendMessage(ctx, sess.ID, cmd, fmt.Sprintf("live-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	b.waitFor(t, "every command finished", fmt.Sprintf(`document.querySelectorAll(".cmd-succeeded").length === %d`, n))
	commands := `[...document.querySelectorAll(".messages .cmd-text")].map(e => e.textContent).join("|")`
	if got := eval[string](t, b, commands); got != strings.Join(want, "|") {
		t.Fatalf("commands on screen:\n%s\nwant:\n%s", got, strings.Join(want, "|"))
	}
	conversation := `[...document.querySelectorAll(".messages .msg")].map(e => e.dataset.messageId || e.textContent).join("\n")`
	b.waitFor(t, "every message", fmt.Sprintf(`document.querySelectorAll(".messages .msg").length === %d`, 3*n))
	live := eval[string](t, b, conversation)

	b.do(t, chromedp.Reload())
	b.waitApp(t)
	// A reload shows the newest page; the rest is one "load older" away.
	b.waitFor(t, "the newest page", `document.querySelectorAll(".messages .msg").length === 100 && !!document.querySelector("button.older")`)
	// Through the element: a click at its coordinates scrolls the page to its top by
	// itself, which the page, following the live end, takes for layout and undoes.
	b.do(t, chromedp.Evaluate[chromedp.Void](`document.querySelector("button.older").click()`))
	b.waitFor(t, "the reloaded conversation", fmt.Sprintf(`document.querySelectorAll(".messages .msg").length === %d`, 3*n))
	if got := eval[string](t, b, conversation); got != live {
		t.Fatalf("after a reload:\n%s\nlive:\n%s", got, live)
	}
}
