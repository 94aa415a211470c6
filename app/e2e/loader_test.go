//go:build !js

package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"conch/shared"
)

// While app.wasm loads, a session page shows its prerendered messages and a small
// "Loading Conch…" pill just above the sticky prompt bar: not over it or the last
// message, and not floating away from it, on a desktop and on a phone, in light and dark.
func TestLoadingPillAbovePrompt(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	sess := s.session(t, "loading pill")
	for i := range 3 {
		s.run(t, sess.ID, fmt.Sprintf("seq 1 %d", 10*(i+1)), nil)
	}
	b := newBrowser(t)
	// app.wasm never arrives: its request stays paused, so the page stays as it loads.
	send(t, b, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*app.wasm*"}}})
	b.do(t, chromedp.Navigate(s.URL+"/sessions/"+sess.ID))
	pill := `document.getElementById("app-wasm-loader")`
	b.waitFor(t, "the loading pill", fmt.Sprintf(`!!%s && %s.textContent.includes("Loading Conch")`, pill, pill))
	b.screenshots(t, "loading-pill", "")
	for _, size := range []struct {
		name          string
		width, height int64
	}{{"desktop", 1280, 900}, {"phone", 393, 851}} {
		b.do(t, chromedp.EmulateViewport(size.width, size.height))
		// Once the new viewport is laid out: the pill 4 to 24 px above the prompt bar, centred
		// on it, covering no message.
		gap := fmt.Sprintf(`document.querySelector(".prompt").getBoundingClientRect().top - %s.getBoundingClientRect().bottom`, pill)
		cover := fmt.Sprintf(`[...document.querySelectorAll(".messages .msg")].pop().getBoundingClientRect().bottom - %s.getBoundingClientRect().top`, pill)
		centre := fmt.Sprintf(`(r => r.left + r.width / 2)(%s.getBoundingClientRect()) - (r => r.left + r.width / 2)(document.querySelector(".prompt").getBoundingClientRect())`, pill)
		b.waitFor(t, size.name+": the pill 4 to 24 px above the prompt bar, centred on it, covering no message",
			fmt.Sprintf(`((g, c, m) => g >= 4 && g <= 24 && c <= 0 && m >= -2 && m <= 2)(%s, %s, %s)`, gap, cover, centre))
	}
}

// A click on a command's output button of the server-rendered page, made before app.wasm
// has arrived, is not lost: the button shows it taken, and the output opens once the app
// runs. A second click before then takes the first back.
func TestClickBeforeAppRuns(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	sess := s.session(t, "click before the app")
	first := s.run(t, sess.ID, "seq 1 5", nil)
	second := s.run(t, sess.ID, "seq 101 105", nil)
	b := newBrowser(t)
	paused := make(chan fetch.RequestID, 1)
	if err := chromedp.Listen(b.ctx, func(ev any) {
		if e, ok := ev.(*fetch.EventRequestPaused); ok {
			paused <- e.RequestID // one app.wasm per page load
		}
	}); err != nil {
		t.Fatal(err)
	}
	send(t, b, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*app.wasm*"}}})
	b.do(t, chromedp.Navigate(s.URL+"/sessions/"+sess.ID))
	var wasm fetch.RequestID
	select {
	case wasm = <-paused: // the page is as it loads, and stays so until the request goes on
	case <-time.After(deadline):
		t.Fatal("the page never asked for app.wasm")
	}
	button := func(m shared.Message) string { return row(m.ID) + " button.disclosure-toggle" }
	b.do(t, chromedp.Click(chromedp.CSS(button(first))), chromedp.Click(chromedp.CSS(button(second))), chromedp.Click(chromedp.CSS(button(second))))
	if !eval[bool](t, b, `!!document.getElementById("app-wasm-loader")`) {
		t.Fatal("the app ran before app.wasm arrived")
	}
	if got := eval[string](t, b, fmt.Sprintf(`document.querySelector(%q).getAttribute("aria-expanded")`, button(first))); got != "true" {
		t.Errorf("before the app runs, the clicked output button is aria-expanded=%s, want true (the click shown taken)", got)
	}
	if got := eval[int](t, b, `document.querySelectorAll(".disclosure-toggle.kept").length`); got != 1 {
		t.Errorf("%d buttons say they open once loaded, want 1 (the one clicked once)", got)
	}
	b.screenshots(t, "click-before-app", button(first))

	send(t, b, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: wasm})
	b.waitApp(t)
	b.waitFor(t, "the output the click opened", fmt.Sprintf(`(document.getElementById("output-%s") || {textContent: ""}).textContent.includes("5")`, first.ID))
	if open := eval[bool](t, b, fmt.Sprintf(`!!document.getElementById("output-%s")`, second.ID)); open {
		t.Error("an output clicked twice before the app ran is open")
	}
	// Kept clicks are made once: closing the output with the app's own button keeps it closed.
	b.do(t, chromedp.Click(chromedp.CSS(button(first))))
	b.waitFor(t, "the output closed", fmt.Sprintf(`!document.getElementById("output-%s")`, first.ID))
}

// app.wasm is downloaded once per page load and compiled as it arrives
// (instantiateStreaming, not the fallback that compiles a whole buffer); the next visit
// has it from the service worker's cache, not the network.
func TestWasmStreamedAndCached(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	sess := s.session(t, "streamed")
	b := newBrowser(t)
	send(t, b, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: `
		window.__compiled = [];
		for (const name of ["instantiateStreaming", "compileStreaming", "instantiate", "compile"]) {
			const orig = WebAssembly[name];
			WebAssembly[name] = (...args) => { __compiled.push(name); return orig.apply(WebAssembly, args); };
		}`})
	wasm := s.URL + "/web/app.wasm"
	for _, visit := range []string{"first", "second"} {
		b.open(t, s.URL+"/sessions/"+sess.ID)
		if got := eval[[]string](t, b, `__compiled`); !slices.Equal(got, []string{"instantiateStreaming"}) {
			t.Errorf("%s visit: the page compiled with %q, want instantiateStreaming once", visit, got)
		}
		sizes := eval[[]float64](t, b, fmt.Sprintf(`performance.getEntriesByName(%q).map((e) => e.transferSize)`, wasm))
		switch {
		case len(sizes) != 1:
			t.Errorf("%s visit: the page asked for app.wasm %d times, want once", visit, len(sizes))
		case visit == "first" && sizes[0] == 0:
			t.Error("first visit: app.wasm came from a cache, in a fresh profile")
		case visit == "second" && sizes[0] != 0:
			t.Errorf("second visit: %.0f bytes of app.wasm came over the network, want none (the worker's cache)", sizes[0])
		}
		if visit == "first" {
			b.waitFor(t, "the worker's copy of app.wasm", `(async () => navigator.serviceWorker.controller !== null && !!(await caches.match("/web/app.wasm")))()`)
		}
	}
}
