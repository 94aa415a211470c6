package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// firstMessageScript records, from the start of navigation, when the newest message of the
// session is on screen: the last message row is in the DOM and inside the viewport, checked
// before each frame is painted. It also records when the WASM app runs (the live indicator
// exists only then).
const firstMessageScript = `(() => {
	const t = window.__first = {message: 0, app: 0};
	const check = () => {
		const now = performance.now();
		if (!t.app && document.querySelector(".live")) t.app = now;
		const rows = document.querySelectorAll(".messages .msg");
		const last = rows[rows.length - 1];
		if (!t.message && last) {
			const r = last.getBoundingClientRect();
			if (r.bottom > 0 && r.top < innerHeight) t.message = now;
		}
		if (!t.app || !t.message) requestAnimationFrame(check);
	};
	requestAnimationFrame(check);
})();`

// firstLoad is one page load's timeline, in ms from the start of navigation.
type firstLoad struct{ html, wasm, app, message float64 }

// firstMessage measures how soon a session's newest message is on screen, cold (a fresh
// browser profile: nothing cached, no service worker) and warm (the same profile once the
// service worker has cached the app), once per run.
func (b *bench) firstMessage(ctx context.Context, origin, sessionID string) error {
	var cold, warm [4]dist
	for run := range b.runs {
		loads, err := coldThenWarm(ctx, origin+"/sessions/"+sessionID, filepath.Join(b.tmp, fmt.Sprintf("first-%d", run)), loadFirst)
		if err != nil {
			return err
		}
		for i, d := range []*[4]dist{&cold, &warm} {
			l := loads[i]
			for j, v := range []float64{l.html, l.wasm, l.app, l.message} {
				d[j] = append(d[j], v)
			}
		}
	}
	b.goals.firstMessage = [2]dist{cold[3], warm[3]}
	b.r.p("First message: headless Chromium opens the 200-message session's page and waits until its newest message "+
		"is on screen (the last message row in the DOM and inside the viewport, checked before each frame). *Cold* is a "+
		"fresh browser profile (nothing cached, no service worker); *warm* is a new tab of the same profile once the "+
		"service worker has cached the app. Times are from the start of navigation; the median of %d runs, and the "+
		"spread. *app.wasm received* is 0 when the page never fetched it.", b.runs)
	var rows [][]string
	for i, d := range [][4]dist{cold, warm} {
		rows = append(rows, []string{[]string{"cold", "warm"}[i], d[0].format(millis), d[1].format(millis), d[2].format(millis), d[3].format(millis)})
	}
	b.r.table([]string{"load", "HTML received", "app.wasm received", "app running", "newest message on screen"}, rows)
	return nil
}

// coldThenWarm starts a browser on a fresh profile in dir, loads url (cold) with load, and
// loads url again in a new tab (warm). load waits, after a cold load, until the service
// worker holds app.wasm (waitWorkerCached).
func coldThenWarm[T any](ctx context.Context, url, dir string, load func(tab context.Context, url string, cold bool) (T, error)) ([2]T, error) {
	var loads [2]T
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.NoSandbox, chromedp.UserDataDir(dir))...)
	defer cancelAlloc()
	browserCtx, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()
	if err := chromedp.Do(browserCtx); err != nil {
		return loads, fmt.Errorf("start chromium: %w", err)
	}
	for i := range loads {
		tab, cancel := chromedp.NewContext(browserCtx)
		l, err := load(tab, url, i == 0)
		cancel()
		if err != nil {
			return loads, fmt.Errorf("%s load: %w", []string{"cold", "warm"}[i], err)
		}
		loads[i] = l
	}
	return loads, nil
}

// loadFirst navigates tab to url and returns its timeline; after a cold load it also waits
// until the service worker controls the page and has cached app.wasm.
func loadFirst(tab context.Context, url string, cold bool) (firstLoad, error) {
	ctx, cancel := context.WithTimeout(tab, 90*time.Second)
	defer cancel()
	err := chromedp.Do(ctx,
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := cdp.Call(ctx, t, page.AddScriptToEvaluateOnNewDocument,
				page.AddScriptToEvaluateOnNewDocumentParams{Source: firstMessageScript})
			return err
		}),
		chromedp.Navigate(url),
	)
	if err != nil {
		return firstLoad{}, err
	}
	times, err := chromedp.Run(ctx, chromedp.Poll[[]float64](`__first.message > 0 && __first.app > 0 && [
		performance.getEntriesByType("navigation")[0].responseEnd,
		(performance.getEntriesByType("resource").find(e => e.name.endsWith("/web/app.wasm")) || {responseEnd: 0}).responseEnd,
		__first.app, __first.message]`, chromedp.WithPollingTimeout(renderWait)))
	if err != nil {
		return firstLoad{}, fmt.Errorf("no newest message on screen within %s: %w", renderWait, err)
	}
	if len(times) != 4 {
		return firstLoad{}, errors.New("no timings from the page")
	}
	if cold {
		if err := waitWorkerCached(ctx); err != nil {
			return firstLoad{}, err
		}
	}
	return firstLoad{html: times[0], wasm: times[1], app: times[2], message: times[3]}, nil
}

// waitWorkerCached waits until the service worker controls the page in ctx and has cached
// app.wasm.
func waitWorkerCached(ctx context.Context) error {
	for {
		cached, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(async () => navigator.serviceWorker.controller !== null &&
			!!(await caches.match("/web/app.wasm")))()`, chromedp.EvalAwaitPromise))
		if err != nil {
			return fmt.Errorf("the service worker did not cache the app: %w", err)
		}
		if cached {
			return nil
		}
		select { // the worker signals nothing the page can wait on: look again shortly
		case <-ctx.Done():
			return fmt.Errorf("the service worker did not cache the app: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
