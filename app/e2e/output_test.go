//go:build !js

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"conch/shared"
)

// colourCommand prints colours, attributes, a \r progress bar, an OSC title and text that
// looks like markup to stdout, and a coloured warning to stderr.
const colourCommand = `printf '\033[31mred\033[0m \033[1;4mbold\033[0m \033[38;5;208morange\033[0m \033[38;2;0;128;255mtrue\033[0m \033[7minverse\033[0m\n'; ` +
	`printf 'progress 33%%\rprogress 66%%\rprogress 99%%\n'; ` +
	`printf '\033]0;a title\007<script>window.pwned=1</script><img src=x onerror="window.pwned=1">\n'; ` +
	`printf '\033[33mwarning\033[0m on stderr\n' >&2`

func TestTerminalOutputRendered(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	b, m, out := s.openFinished(t, colourCommand)

	text := b.text(t, out)
	for _, junk := range []string{"\x1b", "[31m", "[0m", "a title", "33%", "66%"} {
		if strings.Contains(text, junk) {
			t.Errorf("the transcript shows %q:\n%q", junk, text)
		}
	}
	lines := eval[[]string](t, b, fmt.Sprintf(`[...document.querySelectorAll(%q)].map(e => e.textContent)`, out+" pre.stdout .ln"))
	want := []string{"red bold orange true inverse\n", "progress 99%\n", `<script>window.pwned=1</script><img src=x onerror="window.pwned=1">` + "\n"}
	if strings.Join(lines, "|") != strings.Join(want, "|") {
		t.Errorf("stdout lines %q, want %q", lines, want)
	}
	if eval[bool](t, b, `window.pwned === 1 || !!document.querySelector("#output-`+m.ID+` img, #output-`+m.ID+` script")`) {
		t.Error("output became markup")
	}

	// Styles are classes the stylesheets draw: red is not the default colour, and so on.
	style := func(sel, prop string) string {
		return eval[string](t, b, fmt.Sprintf(`getComputedStyle(document.querySelector(%q))[%q]`, sel, prop))
	}
	spans := map[string]string{"red": "t-f1", "bold": "t-bold", "orange": "t-f208", "true": "t-f33", "inverse": "t-bi"}
	for word, class := range spans {
		sel := fmt.Sprintf(`%s pre.stdout span.%s`, out, class)
		if got := b.text(t, sel); got != word {
			t.Errorf("span.%s holds %q, want %q", class, got, word)
		}
	}
	if base, red := style(out+" pre.stdout", "color"), style(out+" pre.stdout .t-f1", "color"); base == red {
		t.Errorf("red is drawn in the default colour %s", base)
	}
	if got := style(out+" pre.stdout .t-f208", "color"); got != "rgb(255, 135, 0)" {
		t.Errorf("palette entry 208 drawn as %s", got)
	}
	if w := style(out+" pre.stdout .t-bold", "fontWeight"); w != "700" {
		t.Errorf("bold drawn with weight %s", w)
	}
	if got := b.text(t, out+" pre.stderr .t-f3"); got != "warning" {
		t.Errorf("stderr's yellow span holds %q", got)
	}
	if n := eval[int](t, b, fmt.Sprintf(`document.querySelectorAll(%q).length`, out+" [style]")); n != 0 {
		t.Errorf("%d elements of the transcript carry inline styles", n)
	}
	b.screenshots(t, "terminal-output", out)
}

// openFinished runs command (which writes to stderr) in a new session until it finishes,
// opens the session in a new browser, opens the command's output and waits for both
// streams; out is the selector of the transcript.
func (s *server) openFinished(t *testing.T, command string) (b *browser, m shared.Message, out string) {
	t.Helper()
	sess := s.session(t, "finished command")
	m = s.run(t, sess.ID, command, nil)
	b = newBrowser(t)
	b.open(t, s.URL+"/sessions/"+sess.ID)
	button := row(m.ID) + " button.disclosure-toggle"
	b.waitFor(t, "the disclosure", fmt.Sprintf(`!!document.querySelector(%q)`, button))
	b.do(t, chromedp.Click(chromedp.CSS(button)))
	out = "#output-" + m.ID
	b.waitFor(t, "the transcript", fmt.Sprintf(`!!document.querySelector(%q)`, out+" pre.stderr"))
	return b, m, out
}

// A command row says how long the command ran (counting while it runs), how much of its
// output is kept of how much it produced, and the signal that ended it; the start and
// finish times show on focus.
func TestRowFacts(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	sess := s.session(t, "facts")
	big := s.run(t, sess.ID, `head -c 400000 /dev/zero | tr '\0' a; sleep 0.3`, nil)
	killed := s.run(t, sess.ID, `echo before the signal; kill -KILL $$`, nil)
	sum := shared.ShellOf(big).Output
	if sum.StdoutTotalBytes != 400000 || sum.StdoutBytes != shared.OutputLimit || sum.StartedAt == nil || sum.FinishedAt == nil {
		t.Fatalf("summary %+v", sum)
	}

	b := newBrowser(t)
	b.open(t, s.URL+"/sessions/"+sess.ID)
	meta := row(big.ID) + " .cmd-meta"
	b.waitFor(t, "the facts", fmt.Sprintf(`!!document.querySelector(%q)`, meta+" .timing"))
	ran := sum.FinishedAt.Sub(*sum.StartedAt)
	if got, want := b.text(t, meta+" .timing"), "ran "+strconv.FormatFloat(ran.Seconds(), 'f', 1, 64)+" s"; !strings.HasPrefix(got, want) {
		t.Errorf("timing %q, want it to start with %q", got, want)
	}
	if got := b.text(t, meta+" .kept"); got != "showing the last 256 KB of 391 KB" {
		t.Errorf("kept %q", got)
	}
	if eval[bool](t, b, fmt.Sprintf(`getComputedStyle(document.querySelector(%q)).display !== "none"`, meta+" .times")) {
		t.Error("the times show before focus")
	}
	send(t, b, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true}) // :focus in a background tab
	b.do(t, chromedp.Focus(chromedp.CSS(meta+" .timing")))
	b.waitFor(t, "the times on focus", fmt.Sprintf(`getComputedStyle(document.querySelector(%q)).display === "inline"`, meta+" .times"))
	if got := b.text(t, meta+" .times"); !strings.Contains(got, "Started ") || !strings.Contains(got, "finished ") {
		t.Errorf("times %q", got)
	}
	b.screenshots(t, "row-facts", meta)
	if got := b.text(t, row(killed.ID)+" .status-text"); got != "Command ended by SIGKILL" {
		t.Errorf("killed: status %q", got)
	}

	// While a command runs, its time counts up on screen.
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if _, err := s.API.SendMessage(ctx, sess.ID, "sleep 30", "facts-sleep"); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, "the running time", `!!document.querySelector(".cmd-running .timing")`)
	b.waitFor(t, "the running time to count", `/^for [2-9] s/.test(document.querySelector(".cmd-running .timing").textContent)`)
	id := eval[string](t, b, `document.querySelector(".cmd-running").dataset.messageId`)
	b.screenshots(t, "row-running", row(id)+" .timing")
	if err := s.API.Cancel(ctx, sess.ID); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, "the cancelled command", fmt.Sprintf(`!!document.querySelector(%q)`, row(id)+".cmd-neutral"))
	// Cancelling stops the command's process group (SIGINT first), and the agent's release
	// of the terminal answers once the process is gone: the row names the signal and how
	// long it ran.
	b.waitFor(t, "the signal", fmt.Sprintf(`(document.querySelector(%q) || {}).textContent === "ended by SIGINT"`, row(id)+" .signal"))
	if got := b.text(t, row(id)+" .timing"); !strings.HasPrefix(got, "ran ") {
		t.Errorf("cancelled command's timing %q", got)
	}
}

// toolsCommand prints 600 numbered lines, six of them with a coloured "needle" (four
// among the earlier lines drawn only when asked for), and one more needle on stderr.
const toolsCommand = `for i in $(seq 1 600); do if [ $((i % 100)) -eq 50 ]; then printf 'line %d \033[32mneedle\033[0m\n' $i; ` +
	`else printf 'line %d\n' $i; fi; done; echo 'a needle on stderr' >&2`

// The reading tools work from the keyboard and the mouse: search with a count and
// Enter/Shift+Enter, copy of one stream, download of the stored bytes, wrap, full screen.
func TestReadingTools(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	b, m, out := s.openFinished(t, toolsCommand)
	// The last 200 lines are drawn, numbered from 401, with a button for the others.
	if n := eval[int](t, b, fmt.Sprintf(`document.querySelectorAll(%q).length`, out+" pre.stdout .ln")); n != 200 {
		t.Fatalf("%d stdout lines drawn, want the last 200", n)
	}
	if got := eval[string](t, b, fmt.Sprintf(`document.querySelector(%q).dataset.n`, out+" pre.stdout .ln")); got != "401" {
		t.Fatalf("the first line drawn is numbered %s, want 401", got)
	}
	b.do(t, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector(%q).scrollTop = 0`, out+" pre.stdout")))
	b.screenshots(t, "earlier-lines", out+" pre.stdout button.earlier")

	// Search: typing counts the matches; Enter and Shift+Enter move, and the current
	// match is scrolled into its view, the earlier lines drawn when it is among them.
	search := out + " input.out-search"
	b.do(t, chromedp.Click(chromedp.CSS(search)), chromedp.SendKeys(chromedp.CSS(search), "NEEDLE"))
	b.waitFor(t, "the count", fmt.Sprintf(`document.querySelector(%q).textContent === "1 of 7"`, out+" .out-count"))
	b.waitFor(t, "all lines drawn for the first match", fmt.Sprintf(`document.querySelectorAll(%q).length === 600`, out+" pre.stdout .ln"))
	b.do(t, chromedp.KeyEvent("\r"))
	b.waitFor(t, "the second match", fmt.Sprintf(`document.querySelector(%q).textContent === "2 of 7"`, out+" .out-count"))
	current := out + " mark.current"
	if got := eval[string](t, b, fmt.Sprintf(`document.querySelector(%q).closest(".ln").textContent`, current)); got != "line 150 needle\n" {
		t.Errorf("the current match is on %q", got)
	}
	visible := fmt.Sprintf(`(() => { const m = document.querySelector(%q).getBoundingClientRect(), p = document.querySelector(%q).getBoundingClientRect();
		return m.top >= p.top && m.bottom <= p.bottom; })()`, current, out+" pre.stdout")
	b.waitFor(t, "the current match in view", visible)
	b.do(t, chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierShift)))
	b.waitFor(t, "back to the first", fmt.Sprintf(`document.querySelector(%q).textContent === "1 of 7"`, out+" .out-count"))
	b.do(t, chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierShift)))
	b.waitFor(t, "around to the stderr match", fmt.Sprintf(`document.querySelector(%q).textContent === "7 of 7"`, out+" .out-count"))
	if got := b.text(t, out+" pre.stderr mark.current"); got != "needle" {
		t.Errorf("the fourth match %q is not on stderr", got)
	}
	b.screenshots(t, "reading-tools", out+" .out-tools")

	// Copy one stream: what is shown, without escape sequences.
	b.do(t, chromedp.Evaluate[chromedp.Void](`navigator.clipboard.writeText = (t) => { window.__copied = t; return Promise.resolve(); }`))
	b.do(t, chromedp.Click(chromedp.CSS(out+` section.stderr button[aria-label="Copy stderr"]`)))
	b.waitFor(t, "the copy", `window.__copied === "a needle on stderr"`)
	b.waitFor(t, "the copied note", fmt.Sprintf(`(document.querySelector(%q) || {}).textContent === "Copied stderr"`, out+" .out-note-inline"))

	// Download: the stored bytes exactly, escape sequences included.
	dir := t.TempDir()
	done := make(chan string, 1)
	if err := chromedp.Listen(b.ctx, func(ev any) { // the page's session reports its downloads
		if e, ok := ev.(*cdpbrowser.EventDownloadProgress); ok && e.State == cdpbrowser.DownloadProgressStateCompleted {
			select {
			case done <- e.GUID:
			default:
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	send(t, b, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllowAndName,
		DownloadPath: dir, EventsEnabled: new(true), BrowserContextID: b.contextID()})
	b.do(t, chromedp.Click(chromedp.CSS(out+` section.stdout a[aria-label="Download stdout"]`)))
	var guid string
	select {
	case guid = <-done:
	case <-time.After(deadline):
		t.Fatal("the download did not complete")
	}
	got, err := os.ReadFile(filepath.Join(dir, guid))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	snap, err := s.API.ShellOutput(ctx, m.SessionID, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != snap.Output.Stdout || !strings.Contains(string(got), "\x1b[32mneedle") {
		t.Errorf("downloaded %d bytes that differ from the %d stored", len(got), len(snap.Output.Stdout))
	}

	// Wrap off: lines keep their length and the view scrolls sideways.
	wrap := out + ` .out-tools button.tool-wrap`
	if eval[string](t, b, fmt.Sprintf(`getComputedStyle(document.querySelector(%q)).whiteSpace`, out+" pre.stdout")) != "pre-wrap" {
		t.Error("output does not wrap by default")
	}
	b.do(t, chromedp.Click(chromedp.CSS(wrap)))
	b.waitFor(t, "no wrapping", fmt.Sprintf(`getComputedStyle(document.querySelector(%q)).whiteSpace === "pre"`, out+" pre.stdout"))

	// Full screen fills the window; Escape leaves it.
	b.do(t, chromedp.Click(chromedp.CSS(out+` .out-tools button.tool-full`)))
	b.waitFor(t, "full screen", fmt.Sprintf(`(() => { const r = document.querySelector(%q).getBoundingClientRect();
		return r.top === 0 && r.left === 0 && r.width === innerWidth && r.height === innerHeight; })()`, out))
	b.screenshots(t, "full-screen", out+" .out-tools")
	b.do(t, chromedp.Focus(chromedp.CSS(search)), chromedp.KeyEvent(kb.Escape))
	b.waitFor(t, "the row again", fmt.Sprintf(`!document.querySelector(%q).classList.contains("full")`, out))
}

// While a command runs, its output stays scrolled to the end as new lines arrive, but
// only while the person is at the end: someone reading further up keeps their place.
func TestFollowOnlyAtTheEnd(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	b, m := s.openRunning(t, `for i in $(seq 1 3000); do echo "line $i"; sleep 0.01; done`, 3000)
	pre := "#output-" + m.ID + " pre.stdout"
	// The number of the last line drawn (only the last 200 are).
	const last = `(() => { const l = document.querySelectorAll(%q); return l.length ? +l[l.length - 1].dataset.n : 0; })()`
	lines := func() int { return eval[int](t, b, fmt.Sprintf(last, pre+" .ln")) }
	more := func(n int) string { return fmt.Sprintf(last+" > %d", pre+" .ln", n) }
	atEnd := fmt.Sprintf(`(() => { const p = document.querySelector(%q);
		return !!p && p.scrollHeight > p.clientHeight && p.scrollHeight - p.scrollTop - p.clientHeight < 8; })()`, pre)
	b.waitFor(t, "the output at its end", atEnd)
	n := lines()
	b.waitFor(t, "more lines", more(n))
	b.waitFor(t, "still at the end", atEnd)

	// Scrolled up: new lines come, the place stays.
	b.do(t, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector(%q).scrollTop = 0`, pre)))
	n = lines()
	b.waitFor(t, "more lines", more(n))
	if top := eval[float64](t, b, fmt.Sprintf(`document.querySelector(%q).scrollTop`, pre)); top != 0 {
		t.Errorf("the view moved to %.0f while the person read the top", top)
	}

	// Back at the end: following again.
	b.do(t, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(p => p.scrollTop = p.scrollHeight)(document.querySelector(%q))`, pre)))
	n = lines()
	b.waitFor(t, "more lines", more(n))
	b.waitFor(t, "at the end again", atEnd)
}

// steadyCommand prints a line every 10 ms for about 10 s.
const steadyCommand = `for i in $(seq 1 800); do echo "line $i of the steady output"; sleep 0.01; done`

// While a command runs, each poll asks only for what is new and gets it compressed: the
// bodies of the polls after the first add up to less than twice the output printed
// meanwhile, and the transcript ends up holding exactly the stored output.
func TestRunningTransfersOnlyNewOutput(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	b, m := s.openRunning(t, steadyCommand, 100)
	out := "#output-" + m.ID
	b.waitFor(t, "the end of the command", fmt.Sprintf(`(document.querySelector(%q) || {textContent: ""}).textContent.includes("Exit code 0")`, out))
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	snap, err := s.API.ShellOutput(ctx, m.SessionID, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	b.do(t, chromedp.Click(chromedp.CSS(out+" pre.stdout button.earlier")))
	b.waitFor(t, "all lines", fmt.Sprintf(`!document.querySelector(%q)`, out+" pre.stdout button.earlier"))
	if got := b.text(t, out+" pre.stdout"); got != snap.Output.Stdout {
		t.Fatalf("the transcript holds %d bytes, the store %d: appending lost or doubled output", len(got), len(snap.Output.Stdout))
	}
	loads := b.finished(m.ID)
	first := loads[0]
	var later int64
	for i, l := range loads[1:] {
		if !l.offsets || (l.status != 200 && l.status != 304) {
			t.Errorf("poll %d: %+v, want offsets and 200 or 304", i+2, l)
		}
		later += l.bodyBytes
	}
	// The first body held at least the 100 bytes waited for; everything after came later.
	printed := snap.Output.StdoutTotalBytes - 100
	t.Logf("%d polls after the first carried %d body bytes for at most %d bytes printed meanwhile (first body: %d bytes)",
		len(loads)-1, later, printed, first.bodyBytes)
	if len(loads) < 5 || later >= 2*printed {
		t.Errorf("%d polls carried %d body bytes for %d bytes printed meanwhile, want under twice", len(loads)-1, later, printed)
	}
}
