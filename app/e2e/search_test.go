package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// Search from the task list: the results page shows each message found with the words
// marked and the agent's markup as text, and a result opens its session scrolled to that
// message, marked. Screenshots: artifacts/search-box-*.png (the task list),
// search-*.png and search-landed-*.png.
func TestSearchInTheBrowser(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	sess := s.session(t, "Find the banana")
	found := s.run(t, sess.ID, "echo 'banana <b>split</b>' && echo done", nil)
	for i := range 12 { // later work, so that the page opens far from the message found
		s.run(t, sess.ID, fmt.Sprintf("echo step %d", i), nil)
	}

	b := newBrowser(t)
	b.do(t, chromedp.Navigate(s.URL+"/"))
	b.waitFor(t, "the task list run by the app", `!document.getElementById("app-wasm-loader") && !!document.querySelector(".tasks .task")`)
	b.screenshots(t, "search-box", "")
	b.do(t, chromedp.EmulateViewport(1280, 900))
	b.do(t, chromedp.SendKeys(chromedp.CSS("#search-q"), "Banana\n"))
	b.waitFor(t, "the results", `location.pathname === "/search" && document.querySelectorAll(".results .result").length >= 2`)

	marks := eval[[]string](t, b, `[...document.querySelectorAll(".results mark")].map(m => m.textContent)`)
	if len(marks) < 2 || strings.Join(marks, ",") != strings.TrimSuffix(strings.Repeat("banana,", len(marks)), ",") {
		t.Errorf("marked words %q, want banana in each result", marks)
	}
	if n := eval[int](t, b, `document.querySelectorAll(".results b").length`); n != 0 {
		t.Errorf("the agent's <b> became %d elements", n)
	}
	if text := b.text(t, ".results"); !strings.Contains(text, "<b>split</b>") || !strings.Contains(text, "Find the banana") {
		t.Errorf("results read %q", text)
	}
	b.screenshots(t, "search", "")

	b.do(t, chromedp.EmulateViewport(1280, 900))
	b.do(t, chromedp.Click(chromedp.CSS(fmt.Sprintf(`.result a[href$=%q]`, found.ID))))
	b.waitFor(t, "the session at the message found", fmt.Sprintf(`(() => {
		const r = document.querySelector('%s.landed');
		if (!r || location.hash !== "") return false;
		const box = r.getBoundingClientRect();
		return box.top >= 0 && box.bottom <= innerHeight;
	})()`, row(found.ID)))
	b.screenshots(t, "search-landed", row(found.ID))
}

// A word in a command's output is found too: the result shows its line, and opens the
// session with the command's output open at that line, the word marked and in view, far
// from the output's end. Screenshots: artifacts/search-output-*.png and
// search-output-landed-*.png.
func TestSearchOutputOpensTheLine(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	sess := s.session(t, "Find the zebra")
	cmd := s.run(t, sess.ID, `seq 1 500 | sed 's/^/filler line /'; printf '\033[32mzebra\033[0m crossing at line 501\n'; seq 502 3000 | sed 's/^/filler line /'`, nil)

	b := newBrowser(t)
	b.do(t, chromedp.EmulateViewport(1280, 900))
	b.do(t, chromedp.Navigate(s.URL+"/search?q=zebra"))
	b.waitFor(t, "the output result", `!!document.querySelector(".results .result .snippet.output mark")`)
	if text := b.text(t, ".results .snippet.output"); text != "zebra crossing at line 501" {
		t.Errorf("the result's line reads %q", text)
	}
	b.screenshots(t, "search-output", "")

	b.do(t, chromedp.EmulateViewport(1280, 900))
	b.do(t, chromedp.Click(chromedp.CSS(`.result a[href*="#line-"]`)))
	b.waitFor(t, "the output open at the line found", fmt.Sprintf(`(() => {
		const m = document.querySelector('#output-%s mark.current');
		if (!m || m.textContent !== "zebra") return false;
		const box = m.getBoundingClientRect();
		return box.top >= 0 && box.bottom <= innerHeight && m.closest(".ln").dataset.n === "501";
	})()`, cmd.ID))
	b.screenshots(t, "search-output-landed", row(cmd.ID))
}
