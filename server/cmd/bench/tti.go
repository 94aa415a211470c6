package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// ttiSession is the session whose page the time-to-interactive benchmark opens.
var ttiSession = seedSpec{Messages: 2000, StdoutBytes: 4 << 10, AllShell: true}

// ttiScript records, from the start of navigation, when the HTML and app.wasm have arrived,
// when app.wasm is compiled (its instance made), when the app
// runs (go-app's loader, in the server-rendered page, is gone: the buttons have their
// handlers) and when the output of the command %[1]q is open with its text.
const ttiScript = `(() => {
	const t = window.__tti = {html: 0, wasm: 0, compiled: 0, app: 0, shown: 0, network: -1};
	let loader = false;
	const check = () => {
		const now = performance.now();
		if (document.getElementById("app-wasm-loader")) loader = true;
		else if (loader && !t.app) t.app = now;
		const out = document.getElementById("output-" + %[1]q);
		if (out && out.textContent.trim() && !t.shown) t.shown = now;
		const nav = performance.getEntriesByType("navigation")[0];
		if (nav && nav.responseEnd > 0) t.html = nav.responseEnd;
		if (!t.wasm) {
			const e = performance.getEntriesByType("resource").find((e) => e.name.endsWith("/app.wasm") && e.responseEnd > 0);
			if (e) t.wasm = e.responseEnd, t.network = e.transferSize;
		}
	};
	const instantiate = WebAssembly.instantiateStreaming;
	WebAssembly.instantiateStreaming = async (...args) => {
		const r = await instantiate.apply(WebAssembly, args);
		t.compiled = performance.now();
		return r;
	};
	new MutationObserver(check).observe(document, {childList: true, subtree: true, characterData: true});
	new PerformanceObserver(check).observe({type: "resource", buffered: true});
})();`

// ttiLoad is one page load's times, in ms from the start of navigation.
type ttiLoad struct {
	HTML     float64 `json:"html"`
	Wasm     float64 `json:"wasm"`
	Compiled float64 `json:"compiled"`
	App      float64 `json:"app"`
	Shown    float64 `json:"shown"`
	Network  float64 `json:"network"` // bytes of app.wasm's response that came over the network (0: a cache)
}

// tti measures how long a server-rendered session page takes to answer a click: from the
// start of navigation until the app runs, and until the output of a command clicked as soon
// as the page has loaded is open. Cold is a fresh browser profile; warm is the next visit
// in the same profile, with the service worker installed and app.wasm in its cache.
func (b *bench) tti(ctx context.Context) error {
	b.r.h(2, "Time to interactive")
	if !b.browser {
		b.r.p("Skipped (`-browser=false`).")
		return nil
	}
	srv, sessions, err := b.serveSeeded(ctx, "tti", ttiSession)
	if err != nil {
		return err
	}
	defer srv.stop()
	s := sessions[0]
	load := func(tab context.Context, url string, cold bool) (ttiLoad, error) {
		return loadTTI(tab, url, s.ShellIDs[len(s.ShellIDs)-1], cold)
	}
	var times [2][5]dist // cold, warm: HTML, app.wasm arrived, compiled, app runs, click answered
	var network [2]dist
	for run := range b.runs {
		loads, err := coldThenWarm(ctx, srv.URL+"/sessions/"+s.SessionID, filepath.Join(b.tmp, fmt.Sprintf("tti-%d", run)), load)
		if err != nil {
			return err
		}
		for i, l := range loads {
			for j, v := range []float64{l.HTML, l.Wasm, l.Compiled, l.App, l.Shown} {
				times[i][j] = append(times[i][j], v)
			}
			network[i] = append(network[i], l.Network)
		}
	}
	b.goals.tti = [2]dist{times[0][4], times[1][4]}
	b.r.p("Headless Chromium opens `/sessions/{id}` of a seeded session of %d shell commands (%s of stdout each); the "+
		"server renders its newest messages into the HTML, whose buttons do nothing until app.wasm runs. Times are from "+
		"the start of navigation (`performance.now()`): *HTML received* and *app.wasm arrived* are the ends of their "+
		"responses (Resource Timing), *compiled* is when `WebAssembly.instantiateStreaming` has made the instance, "+
		"*app runs* is when go-app's loader leaves the page (the app has started and rendered the page: its buttons "+
		"work), *click answered* is when the output of the newest command, clicked (a real mouse event) as soon as "+
		"the page's load event has fired, is open with its text: web/conch.js keeps a click made before the app runs "+
		"and makes it once it does. *Cold* is a fresh browser profile (nothing cached); *warm* is a new tab of that "+
		"profile once the service worker has cached app.wasm. *Over the network* is app.wasm's transfer size (0: "+
		"answered by a cache). The median of %d profiles, and the spread.",
		ttiSession.Messages, bytesIEC(float64(ttiSession.StdoutBytes)), b.runs)
	var rows [][]string
	for i, d := range times {
		row := []string{[]string{"cold", "warm"}[i]}
		for _, v := range d {
			row = append(row, v.format(millis))
		}
		rows = append(rows, append(row, network[i].format(bytesIEC)))
	}
	b.r.table([]string{"visit", "HTML received", "app.wasm arrived", "compiled", "app runs", "click answered", "app.wasm over the network"}, rows)
	return nil
}

// loadTTI opens url in tab, clicks the output button of the shell message shellID once the
// page has loaded and waits until the app runs and the output is open. After a cold load it
// also waits until the service worker has cached app.wasm.
func loadTTI(tab context.Context, url, shellID string, cold bool) (ttiLoad, error) {
	ctx, cancel := context.WithTimeout(tab, 90*time.Second)
	defer cancel()
	err := chromedp.Do(ctx,
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := cdp.Call(ctx, t, page.AddScriptToEvaluateOnNewDocument,
				page.AddScriptToEvaluateOnNewDocumentParams{Source: fmt.Sprintf(ttiScript, shellID)})
			return err
		}),
		chromedp.Navigate(url),
	)
	if err != nil {
		return ttiLoad{}, err
	}
	// The app replaces the server-rendered page when it starts: a button found just before
	// may be gone when the click is sent, and the click is then made on the app's.
	button := chromedp.CSS(fmt.Sprintf(`[data-message-id=%q] button.disclosure-toggle`, shellID))
	for tries := 0; ; tries++ {
		err = chromedp.Do(ctx, chromedp.Click(button))
		if err == nil || tries == 2 || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		return ttiLoad{}, fmt.Errorf("click: %w", err)
	}
	l, err := chromedp.Run(ctx, chromedp.Poll[ttiLoad](`__tti.wasm > 0 && __tti.app > 0 && __tti.shown > 0 && __tti`,
		chromedp.WithPollingTimeout(60*time.Second)))
	if err != nil {
		return ttiLoad{}, fmt.Errorf("the click was not answered: %w", err)
	}
	if cold {
		err = waitWorkerCached(ctx)
	}
	return l, err
}
