//go:build !js

package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"conch/shared"
)

// TestMeasure prints the UI figures of the closing note. It seeds thousands of messages,
// so it runs only when asked: CONCH_UI_MEASURE=1 (with CONCH_BIN set).
func TestMeasure(t *testing.T) {
	t.Parallel()
	if os.Getenv("CONCH_UI_MEASURE") == "" {
		t.Skip("set CONCH_UI_MEASURE=1 to measure first render and memory")
	}
	s := startServer(t)

	small := s.session(t, "200 messages")
	seed(t, s, small.ID, 67, func(i int) string { return fmt.Sprintf("echo message %d", i) })
	for _, run := range []string{"cold", "warm (service worker cache)"} {
		b := newBrowser(t)
		instrument(t, b)
		if run != "cold" {
			b.open(t, s.URL+"/sessions/"+small.ID)
			b.waitFor(t, "the cached shell", `(async () => !!(await caches.match("/web/app.wasm")))()`)
		}
		b.do(t, chromedp.Navigate(s.URL+"/sessions/"+small.ID))
		b.waitFor(t, "the first message", `window.__t.message`)
		t.Logf("%s load of a session of 201 messages, ms after navigation start: app.wasm received %.0f, app running %.0f, "+
			"WebSocket open %.0f, frames received (ms:bytes) %v, first message %.0f",
			run, eval[float64](t, b, `performance.getEntriesByType("resource").find(e => e.name.endsWith("/web/app.wasm")).responseEnd`),
			eval[float64](t, b, `__t.app`), eval[float64](t, b, `__t.wsOpen`), eval[[]string](t, b, `__t.wsMsgs`),
			eval[float64](t, b, `__t.message`))
	}

	big := s.session(t, "1000 x 256 KiB")
	seed(t, s, big.ID, 1000, func(int) string { return `head -c 262144 /dev/zero | tr '\0' x` })
	b := ownBrowser(t, chromedp.Flag("enable-precise-memory-info", true), chromedp.Flag("js-flags", "--expose-gc"))
	instrument(t, b)
	b.open(t, s.URL+"/sessions/"+big.ID)
	b.waitFor(t, "the first page", `window.__t.message`)
	start := time.Now()
	for pages := 1; eval[bool](t, b, `!!document.querySelector("button.older")`); pages++ {
		n := eval[int](t, b, `document.querySelectorAll(".messages .msg").length`)
		b.do(t, chromedp.Evaluate[chromedp.Void](`document.querySelector("button.older").click()`))
		b.waitFor(t, "an older page", fmt.Sprintf(`document.querySelectorAll(".messages .msg").length > %d`, n))
		t.Logf("page %d: %d messages after %v", pages, n, time.Since(start).Round(time.Millisecond))
	}
	rows := eval[int](t, b, `document.querySelectorAll(".messages .cmd").length`)
	msgs := eval[int](t, b, `document.querySelectorAll(".messages .msg").length`)
	t.Logf("loaded %d messages (%d command rows) by paging in %v", msgs, rows, time.Since(start).Round(time.Millisecond))

	// A live command in a long session: from the prompt to its finished row on screen.
	sent := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if _, err := s.API.SendMessage(ctx, big.ID, "echo live", "live-1"); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, "the live command", `[...document.querySelectorAll(".cmd-succeeded .cmd-text")].some(e => e.textContent === "echo live")`)
	t.Logf("a live command in a session of %d messages: finished row on screen %v after the prompt", msgs, time.Since(sent).Round(time.Millisecond))

	b.do(t, chromedp.Evaluate[chromedp.Void](`gc()`))
	heap := eval[float64](t, b, `performance.memory.usedJSHeapSize`)
	wasm := eval[float64](t, b, `window.__goWasm.exports.mem.buffer.byteLength`)
	open := eval[int](t, b, `document.querySelectorAll(".transcript").length`)
	t.Logf("all collapsed (%d open): JS heap used %.1f MB, WASM linear memory %.1f MB, %d snapshot requests",
		open, heap/1e6, wasm/1e6, b.total())
}

// TestMeasureOpenDisclosure prints the bytes that a disclosure left open for 30 s on a
// running command with 100 KiB of unchanged output downloads, from the browser's network
// events. Run it against two builds (CONCH_BIN) to compare them: CONCH_UI_MEASURE=1.
func TestMeasureOpenDisclosure(t *testing.T) {
	t.Parallel()
	if os.Getenv("CONCH_UI_MEASURE") == "" {
		t.Skip("set CONCH_UI_MEASURE=1 to measure an open disclosure's downloads")
	}
	const size, open = 100 << 10, 30 * time.Second
	s := startServer(t)
	b, m := s.openRunning(t, fmt.Sprintf(`head -c %d /dev/zero | tr '\0' x; sleep %d`, size, 3*open/time.Second), size)
	time.Sleep(open) // the measure is what an open disclosure costs over this time
	var bytes float64
	var body int64
	statuses := map[int64]int{}
	loads := b.finished(m.ID)
	for _, l := range loads {
		bytes += l.bytes
		body += l.bodyBytes
		statuses[l.status]++
	}
	t.Logf("disclosure open %v on a running command with %d B of unchanged output: %d requests (by status %v), "+
		"%.0f bytes received, %d of them bodies", open, size, len(loads), statuses, bytes, body)
}

// TestMeasureSteadyOutput prints the bytes that a disclosure left open for 30 s on a
// command printing a line every 10 ms downloads, against the bytes printed meanwhile.
// Run it against two builds (CONCH_BIN) to compare them: CONCH_UI_MEASURE=1.
func TestMeasureSteadyOutput(t *testing.T) {
	t.Parallel()
	if os.Getenv("CONCH_UI_MEASURE") == "" {
		t.Skip("set CONCH_UI_MEASURE=1 to measure an open disclosure's downloads")
	}
	const open = 30 * time.Second
	s := startServer(t)
	b, m := s.openRunning(t, `i=0; while [ $i -lt 6000 ]; do i=$((i+1)); echo "line $i: compiling package $i of the steady build"; sleep 0.01; done`, 100)
	total := func() int64 {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		snap, err := s.API.ShellOutput(ctx, m.SessionID, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		return snap.End().Stdout // (a build without totals: the kept bytes, all of them within 30 s)
	}
	before, skip := total(), len(b.finished(m.ID))
	time.Sleep(open) // the measure is what an open disclosure costs over this time
	printed := total() - before
	var bytes float64
	var body int64
	loads := b.finished(m.ID)[skip:]
	for _, l := range loads {
		bytes += l.bytes
		body += l.bodyBytes
	}
	t.Logf("disclosure open %v on a command printing a line every 10 ms: %d bytes printed, %d requests, "+
		"%.0f bytes received (%.2f× the output printed), %d of them bodies", open, printed, len(loads), bytes, bytes/float64(printed), body)
}

// seed sends n commands and waits until the last one has finished.
func seed(t *testing.T, s *server, sid string, n int, command func(i int) string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	for i := range n - 1 {
		if _, err := s.API.SendMessage(ctx, sid, command(i), fmt.Sprintf("seed-%s-%d", sid, i)); err != nil {
			t.Fatal(err)
		}
	}
	s.runWithin(t, 20*time.Minute, sid, command(n-1)+" # last", nil)
	p, err := s.API.ListMessages(ctx, shared.ListRequest{SessionID: sid, Limit: new(1), Sort: shared.SortDesc})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("seeded %d commands: %d messages", n, p.Total)
}

// instrument records, in every page the browser loads, when the app started running and
// when the first message appeared, and keeps the Go instance to read its linear memory.
func instrument(t *testing.T, b *browser) {
	t.Helper()
	b.do(t, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: `
			window.__t = {};
			const WS = window.WebSocket;
			window.WebSocket = function (...a) {
				const ws = new WS(...a);
				__t.wsNew = __t.wsNew || performance.now();
				ws.addEventListener("open", () => { __t.wsOpen = __t.wsOpen || performance.now(); });
				ws.addEventListener("message", (e) => {
					__t.wsMsgs = __t.wsMsgs || [];
					if (__t.wsMsgs.length < 3) __t.wsMsgs.push(Math.round(performance.now()) + ":" + e.data.length);
				});
				return ws;
			};
			window.WebSocket.prototype = WS.prototype;
			const orig = WebAssembly.instantiateStreaming;
			WebAssembly.instantiateStreaming = async (...a) => { const r = await orig(...a); window.__goWasm = r.instance; return r; };
			new MutationObserver(() => {
				if (!__t.app && document.querySelector(".live")) __t.app = performance.now();
				if (!__t.message && document.querySelector(".messages .msg")) __t.message = performance.now();
			}).observe(document, {childList: true, subtree: true, characterData: true});`})
		return err
	}))
}

// TestMeasureColouredOutput prints, for a finished command with 256 KiB of coloured
// output (about 6,000 lines), the time from the snapshot's arrival to the first frame
// painted with its lines, and the longest main-thread task meanwhile, at 1280×900 and
// 393×851. Run it when asked: CONCH_UI_MEASURE=1.
func TestMeasureColouredOutput(t *testing.T) {
	t.Parallel()
	if os.Getenv("CONCH_UI_MEASURE") == "" {
		t.Skip("set CONCH_UI_MEASURE=1 to measure rendering a coloured output")
	}
	s := startServer(t)
	sess := s.session(t, "coloured")
	m := s.run(t, sess.ID, `i=0; while [ $i -lt 6000 ]; do i=$((i+1)); `+
		`printf '\033[32mok\033[0m  \tconch/pkg%d\t\033[33m0.%03ds\033[0m <some> more & text on the line\n' $i $((i%1000)); done`, nil)
	for _, size := range []struct {
		name          string
		width, height int64
	}{{"1280x900", 1280, 900}, {"393x851", 393, 851}} {
		b := newBrowser(t)
		b.do(t, chromedp.EmulateViewport(size.width, size.height))
		b.open(t, s.URL+"/sessions/"+sess.ID)
		button := row(m.ID) + " button.disclosure-toggle"
		b.waitFor(t, "the disclosure", fmt.Sprintf(`!!document.querySelector(%q)`, button))
		b.do(t, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`window.__long = 0;
			new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__long = Math.max(window.__long, e.duration); })
				.observe({type: "longtask"});
			new MutationObserver((ms, o) => {
				if (document.querySelector(%q)) { o.disconnect(); requestAnimationFrame(() => { window.__painted = performance.now(); }); }
			}).observe(document.body, {childList: true, subtree: true});`, "#output-"+m.ID+" pre.stdout .ln")))
		b.do(t, chromedp.Click(chromedp.CSS(button)))
		b.waitFor(t, "the painted lines", `!!window.__painted`)
		arrived := eval[float64](t, b, `performance.getEntriesByType("resource").filter(e => e.name.includes("/shell-output")).pop().responseEnd`)
		t.Logf("%s: %d lines painted %.0f ms after the snapshot arrived; longest task %.0f ms", size.name,
			eval[int](t, b, fmt.Sprintf(`document.querySelectorAll(%q).length`, "#output-"+m.ID+" pre.stdout .ln")),
			eval[float64](t, b, `window.__painted`)-arrived, eval[float64](t, b, `window.__long`))
	}
}
