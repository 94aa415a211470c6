package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"conch/server/store"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/heapprofiler"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// browserSessions are the session sizes (shell commands, 256 KiB of stdout each) opened in
// the browser.
var browserSessions = []int{200, 1000}

// firstRenderScript records, from the start of navigation, when the first message is in the
// DOM and when the first page of messages is.
const firstRenderScript = `(() => {
	const t = window.__bench = {first: 0, page: 0};
	const check = () => {
		const n = document.querySelectorAll('.msg').length;
		if (n > 0 && !t.first) t.first = performance.now();
		if (n >= %d && !t.page) t.page = performance.now();
	};
	new MutationObserver(check).observe(document, {childList: true, subtree: true});
})();`

func (b *bench) browserBench(ctx context.Context) error {
	b.r.h(2, "Browser")
	if err := b.wasmSizes(); err != nil {
		return err
	}
	if !b.browser {
		b.r.p("The headless Chromium part was skipped (`-browser=false`).")
		return nil
	}
	sessions := make([]seeded, len(browserSessions))
	db, err := b.seedDB(ctx, "browser", func(st *store.Store, taskID string) error {
		for i, n := range browserSessions {
			var err error
			if sessions[i], err = seedSession(ctx, st, taskID, seedSpec{Messages: n, StdoutBytes: 256 << 10, AllShell: true}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	srv, err := startConch(ctx, b.conchBin, db)
	if err != nil {
		return err
	}
	defer srv.stop()
	proxy, err := newInlineProxy(srv)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: proxy}
	go hs.Serve(ln)
	defer hs.Close()

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.NoSandbox, chromedp.UserDataDir(filepath.Join(b.tmp, "chromium")))...)
	defer cancelAlloc()
	browserCtx, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()
	if err := chromedp.Do(browserCtx); err != nil {
		return fmt.Errorf("start chromium: %w", err)
	}

	b.r.p("Headless Chromium opens `/sessions/{id}` of a seeded session whose messages are all shell commands with "+
		"256 KiB of stdout. *Projected* is Conch as it is; *inline* goes through a proxy inside the benchmark that "+
		"puts every command's output bodies back into the messages the page receives (the UI parses and drops "+
		"them). Each origin is loaded once first, so app.wasm comes from the browser's cache and the figures are "+
		"about the messages. Times are from the start of navigation (`performance.now()`) to the first `.msg` "+
		"element and to the first page (%d messages) in the DOM. Memory is read after a forced garbage collection "+
		"(`Runtime.getHeapUsage`): the JS heap, and the array-buffer backing store, which holds the Go WASM memory. "+
		"Each figure is over %d page loads, one tab at a time.", uiPageSize, b.runs)
	modes := []struct{ name, origin string }{{"projected", srv.URL}, {"inline", "http://" + ln.Addr().String()}}
	var rows [][]string
	base := map[int][2]dist{}
	for _, m := range modes {
		if _, err := b.openSession(browserCtx, m.origin, sessions[0], 1); err != nil { // warm the cache
			return fmt.Errorf("%s warm-up: %w", m.name, err)
		}
		for i, s := range sessions {
			var first, full, heap, wasm dist
			for range b.runs {
				r, err := b.openSession(browserCtx, m.origin, s, min(uiPageSize, browserSessions[i]))
				if err != nil {
					return fmt.Errorf("%s, %d messages: %w", m.name, browserSessions[i], err)
				}
				first, full = append(first, r.first), append(full, r.page)
				heap, wasm = append(heap, r.heap), append(wasm, r.backing)
			}
			if m.name == "projected" {
				base[i] = [2]dist{first, full}
			}
			rows = append(rows, []string{m.name, fmt.Sprint(browserSessions[i]), first.format(millis), ratio(first, base[i][0]),
				full.format(millis), ratio(full, base[i][1]), heap.format(bytesIEC), wasm.format(bytesIEC)})
		}
	}
	b.r.table([]string{"mode", "shell messages", "first message", "vs projected", "first page", "vs projected",
		"JS heap", "array buffers (WASM memory)"}, rows)
	return nil
}

func millis(v float64) string { return fmt.Sprintf("%.0f ms", v) }

type pageLoad struct{ first, page, heap, backing float64 }

// openSession loads a session page in a new tab and waits for want messages.
func (b *bench) openSession(browserCtx context.Context, origin string, s seeded, want int) (pageLoad, error) {
	tab, cancel := chromedp.NewContext(browserCtx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(tab, 90*time.Second)
	defer cancelTimeout()
	// What the page logs explains a page that never shows its messages (a WASM panic, say).
	logged := &tailBuffer{max: 2 << 10}
	console := chromedp.Console(ctx)
	go func() {
		for m, err := range console {
			if err != nil {
				return
			}
			fmt.Fprintln(logged, m.String())
		}
	}()
	var r pageLoad
	err := chromedp.Do(ctx,
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := cdp.Call(ctx, t, page.AddScriptToEvaluateOnNewDocument,
				page.AddScriptToEvaluateOnNewDocumentParams{Source: fmt.Sprintf(firstRenderScript, want)})
			return err
		}),
		chromedp.Navigate(origin+"/sessions/"+s.SessionID),
	)
	if err != nil {
		return r, err
	}
	times, err := chromedp.Run(ctx, chromedp.Poll[[]float64](`window.__bench && window.__bench.page > 0 && [window.__bench.first, window.__bench.page]`,
		chromedp.WithPollingTimeout(60*time.Second)))
	if err != nil {
		return r, fmt.Errorf("waiting for %d messages: %w; the page logged:\n%s", want, err, logged)
	}
	if len(times) != 2 {
		return r, errors.New("no timings from the page")
	}
	r.first, r.page = times[0], times[1]
	err = chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		if _, err := cdp.Call(ctx, t, heapprofiler.CollectGarbage, cdp.Empty{}); err != nil {
			return err
		}
		use, err := cdp.Call(ctx, t, runtime.GetHeapUsage, cdp.Empty{})
		r.heap, r.backing = use.UsedSize, use.BackingStorageSize
		return err
	}))
	return r, err
}

// wasmSizes reports the size of the UI's WASM binary as built and as served compressed.
func (b *bench) wasmSizes() error {
	var cells []string
	for _, name := range []string{"app.wasm", "app.wasm.gz", "app.wasm.br"} {
		fi, err := os.Stat(filepath.Join(b.web, name))
		if err != nil {
			return err
		}
		cells = append(cells, fmt.Sprintf("%.2f MB (%d bytes)", float64(fi.Size())/1e6, fi.Size()))
		if name == "app.wasm.br" {
			b.goals.wasmBrotli = fi.Size()
		}
	}
	b.r.p("`app.wasm` as `make build` leaves it in `%s/` (MB = 10^6 bytes; the target is at most 2.0 MB brotli):", b.web)
	b.r.table([]string{"raw", "gzip", "brotli"}, [][]string{cells})
	return nil
}
