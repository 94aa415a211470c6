//go:build !js

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"conch/shared"
)

// colourCommand prints colours, attributes, a \r progress bar, an OSC title and text that
// looks like markup to stdout, and a coloured warning to stderr.
const colourCommand = `printf '\033[31mred\033[0m \033[1;4mbold\033[0m \033[38;5;208morange\033[0m \033[38;2;0;128;255mtrue\033[0m \033[7minverse\033[0m\n'; ` +
	`printf 'progress 33%%\rprogress 66%%\rprogress 99%%\n'; ` +
	`printf '\033]0;a title\007<script>window.pwned=1</script><img src=x onerror="window.pwned=1">\n'; ` +
	`printf '\033[33mwarning\033[0m on stderr\n' >&2`

func TestTerminalOutputRendered(t *testing.T) {
	s := startServer(t)
	sess := s.session(t, "colours")
	m := s.run(t, sess.ID, colourCommand, nil)

	b := newBrowser(t)
	b.open(t, s.URL+"/sessions/"+sess.ID)
	button := row(m.ID) + " button.disclosure-toggle"
	b.waitFor(t, "the disclosure", fmt.Sprintf(`!!document.querySelector(%q)`, button))
	b.do(t, chromedp.Click(chromedp.CSS(button)))
	out := "#output-" + m.ID
	b.waitFor(t, "the transcript", fmt.Sprintf(`!!document.querySelector(%q)`, out+" pre.stderr"))

	text := b.text(t, out)
	for _, junk := range []string{"\x1b", "[31m", "[0m", "a title", "33%", "66%"} {
		if strings.Contains(text, junk) {
			t.Errorf("the transcript shows %q:\n%q", junk, text)
		}
	}
	lines := eval[[]string](t, b, fmt.Sprintf(`[...document.querySelectorAll(%q)].map(e => e.textContent)`, out+" pre.stdout .ln"))
	want := []string{"red bold orange true inverse", "progress 99%", `<script>window.pwned=1</script><img src=x onerror="window.pwned=1">`}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
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

// A command row says how long the command ran (counting while it runs), how much of its
// output is kept of how much it produced, and the signal that ended it; the start and
// finish times show on focus.
func TestRowFacts(t *testing.T) {
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
	b.waitFor(t, "the running time to count", `/^running [2-9] s/.test(document.querySelector(".cmd-running .timing").textContent)`)
	id := eval[string](t, b, `document.querySelector(".cmd-running").dataset.messageId`)
	if err := s.API.Cancel(ctx, sess.ID); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, "the cancelled command", fmt.Sprintf(`!!document.querySelector(%q)`, row(id)+".cmd-neutral"))
	// Cancelling kills the command's process group: the row names the signal.
	b.waitFor(t, "the signal", fmt.Sprintf(`(document.querySelector(%q) || {}).textContent === "ended by SIGKILL"`, row(id)+" .signal"))
	if got := b.text(t, row(id)+" .timing"); !strings.HasPrefix(got, "ran ") {
		t.Errorf("cancelled command's timing %q", got)
	}
}
