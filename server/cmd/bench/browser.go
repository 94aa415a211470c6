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

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/heapprofiler"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// browserSessions are the sessions opened in the browser, all shell commands. The 64 KiB
// one is there because its inline first page (6.4 MiB) is small enough to render at all.
var browserSessions = []seedSpec{
	{Messages: 200, StdoutBytes: 256 << 10, AllShell: true},
	{Messages: 1000, StdoutBytes: 256 << 10, AllShell: true},
	{Messages: 200, StdoutBytes: 64 << 10, AllShell: true},
}

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
	// Keep the Go WASM instance's memory in sight, to read its size.
	for (const name of ["instantiateStreaming", "instantiate"]) {
		const orig = WebAssembly[name];
		WebAssembly[name] = async (...args) => {
			const res = await orig.apply(WebAssembly, args);
			const inst = res.instance || res;
			if (inst.exports && inst.exports.mem) window.__wasmMemory = inst.exports.mem;
			return res;
		};
	}
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
	srv, sessions, err := b.serveSeeded(ctx, "browser", browserSessions...)
	if err != nil {
		return err
	}
	defer srv.stop()
	if err := b.firstMessage(ctx, srv.URL, sessions[0].SessionID); err != nil {
		return fmt.Errorf("first message: %w", err)
	}
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

	b.r.p("Headless Chromium opens `/sessions/{id}` of a seeded session whose messages are all shell commands. "+
		"*Projected* is Conch as it is; *inline* goes through a proxy inside the benchmark that "+
		"puts every command's output bodies back into the messages the page receives (the UI parses and drops "+
		"them). Each origin is loaded once first, so app.wasm comes from the browser's cache and the figures are "+
		"about the messages. Times are from the start of navigation (`performance.now()`) to the first `.msg` "+
		"element and to the first page (%d messages) in the DOM. Memory is read after a forced garbage collection: "+
		"the JS heap in use (`Runtime.getHeapUsage`) and the size of the Go WASM instance's linear memory (it never "+
		"shrinks, so it shows the Go heap's peak). The page's HTML carries the newest page of messages, prerendered, "+
		"so in both modes the first messages come from the HTML; the proxy changes only the WebSocket frames the app "+
		"receives once it runs. "+
		"Each figure is over %d page loads, one tab at a time.", uiPageSize, b.runs)
	modes := []struct{ name, origin string }{{"projected", srv.URL}, {"inline", "http://" + ln.Addr().String()}}
	var rows [][]string
	base := map[int][2]dist{}
	for _, m := range modes {
		// Warm the cache with the session's page (app.wasm and the worker come with it).
		if _, err := b.openSession(browserCtx, m.origin, sessions[0], 1); err != nil {
			return fmt.Errorf("%s warm-up: %w", m.name, err)
		}
		for i, s := range sessions {
			var first, full, heap, wasm dist
			missed := 0
			for range b.runs {
				spec := browserSessions[i]
				r, err := b.openSession(browserCtx, m.origin, s, min(uiPageSize, spec.Messages))
				if err != nil {
					return fmt.Errorf("%s, %d messages: %w", m.name, spec.Messages, err)
				}
				if r.rendered {
					first, full = append(first, r.first), append(full, r.page)
				} else {
					missed++
				}
				heap, wasm = append(heap, r.heap), append(wasm, r.wasm)
			}
			if m.name == "projected" {
				base[i] = [2]dist{first, full}
			}
			firstCell, fullCell := first.format(millis), full.format(millis)
			if missed > 0 {
				note := fmt.Sprintf(" (%d of %d loads showed nothing in %s)", missed, b.runs, renderWait)
				firstCell, fullCell = firstCell+note, fullCell+note
			}
			rows = append(rows, []string{m.name, fmt.Sprint(browserSessions[i].Messages), bytesIEC(float64(browserSessions[i].StdoutBytes)), firstCell, ratio(first, base[i][0]),
				fullCell, ratio(full, base[i][1]), heap.format(bytesIEC), wasm.format(bytesIEC)})
		}
	}
	b.r.table([]string{"mode", "shell messages", "stdout each", "first message", "vs projected", "first page", "vs projected",
		"JS heap", "WASM memory"}, rows)
	b.r.p("The largest WebSocket frame the inline proxy relayed was %s; the UI's client refuses frames over 16 MiB "+
		"(`SetReadLimit` in app/client/ws.go), so an inline first page larger than that never renders. Memory is "+
		"then read when the wait ends.", bytesIEC(float64(proxy.largestFrame())))
	return nil
}

func millis(v float64) string { return fmt.Sprintf("%.0f ms", v) }

type pageLoad struct {
	rendered    bool // the first page was in the DOM before the deadline
	first, page float64
	heap, wasm  float64
}

// renderWait is how long a page load may take to show its first page of messages.
const renderWait = 10 * time.Second

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
		chromedp.WithPollingTimeout(renderWait)))
	switch {
	case err == nil && len(times) == 2:
		r.rendered, r.first, r.page = true, times[0], times[1]
	case err == nil:
		return r, errors.New("no timings from the page")
	case ctx.Err() != nil:
		return r, err
	default:
		// Not rendered in time: the memory it holds by then is still a figure.
		progress("   %s: no %d messages after %s; the page logged:\n%s", origin, want, renderWait, logged)
	}
	err = chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		if _, err := cdp.Call(ctx, t, heapprofiler.CollectGarbage, cdp.Empty{}); err != nil {
			return err
		}
		use, err := cdp.Call(ctx, t, runtime.GetHeapUsage, cdp.Empty{})
		r.heap = use.UsedSize
		return err
	}))
	if err != nil {
		return r, err
	}
	r.wasm, err = chromedp.Run(ctx, chromedp.Evaluate[float64](`window.__wasmMemory ? window.__wasmMemory.buffer.byteLength : 0`))
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
