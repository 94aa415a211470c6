//go:build !js

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"conch/app/client"
	"conch/server/servetest"
	"conch/server/waittest"
	"conch/shared"
)

// deadline bounds every wait: until half a minute before the test binary's own deadline
// (TestMain sets it, waittest.Limit), so that a loaded machine makes a test slower, never
// failing it. Nothing here waits on a fixed sleep except the dwell that proves no request
// follows.
var deadline time.Duration

// server is one running `conch serve` on a port of its own.
type server struct {
	URL     string
	API     *client.Client
	cmd     *exec.Cmd
	done    chan error
	stopped sync.Once
}

// startServer runs $CONCH_BIN serve on 127.0.0.1:0 with a fresh database and waits for
// its "listening on" line.
func startServer(t *testing.T) *server {
	t.Helper()
	return startServerAt(t, "127.0.0.1:0", filepath.Join(t.TempDir(), "conch.db"))
}

// startServerAt runs the server on addr with the database db (a restart reuses both);
// extra goes on its command line.
func startServerAt(t *testing.T, addr, db string, extra ...string) *server {
	t.Helper()
	// An agent's start is bounded by the test, not by serve's default: a large agent (Gemini
	// CLI) starts in seconds alone, and in more than 30 s on 2 cores shared with other tests.
	cmd := exec.Command(servetest.Bin(t), append([]string{"serve", "--addr", addr, "--db", db, "--agent-start", waittest.Limit(t).String()}, extra...)...)
	cmd.Dir = t.TempDir()
	cmd.Stderr = &logWriter{t: t, prefix: "server: "}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // agents and commands die with it
	s := &server{cmd: cmd, done: make(chan error, 1)}
	s.URL = servetest.Start(t, cmd, deadline, nil) // its stderr is in the test's log
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(s.stop)
	s.API = client.New(s.URL)
	return s
}

// stop ends the server and everything it started; a second call does nothing.
func (s *server) stop() {
	s.stopped.Do(func() {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-s.done
		}
	})
}

type logWriter struct {
	t      *testing.T
	prefix string
	mu     sync.Mutex
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		if strings.Contains(line, "level=ERROR") || strings.Contains(line, "level=WARN") {
			w.t.Log(w.prefix + line)
		}
	}
	return len(p), nil
}

// session creates a task and a shell session in a fresh directory.
func (s *server) session(t *testing.T, title string) shared.Session {
	t.Helper()
	return s.sessionOf(t, title, "shell")
}

// sessionOf creates a task and a session of agent in a fresh directory.
func (s *server) sessionOf(t *testing.T, title, agent string) shared.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	task, err := s.API.CreateTask(ctx, title, "created by the browser tests")
	if err != nil {
		t.Fatal(err)
	}
	sess, err := s.API.StartSession(ctx, task.ID, agent, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if sess.State != shared.SessionReady {
		t.Fatalf("session %s is %s (%s), want ready", sess.ID, sess.State, sess.Error)
	}
	return sess
}

// run sends one shell command and waits, through the WebSocket, until its message
// satisfies done (nil: a terminal status).
func (s *server) run(t *testing.T, sid, command string, done func(shared.Message) bool) shared.Message {
	t.Helper()
	return s.runWithin(t, deadline, sid, command, done)
}

// runWithin is run with its own time limit (for a command queued behind many others).
func (s *server) runWithin(t *testing.T, limit time.Duration, sid, command string, done func(shared.Message) bool) shared.Message {
	t.Helper()
	if done == nil {
		done = func(m shared.Message) bool { return m.Metadata.Status.IsTerminal() }
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	conn := s.subscribe(t, ctx, sid)
	defer conn.Close()
	user, err := s.API.SendMessage(ctx, sid, command, fmt.Sprint(time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case env, ok := <-conn.Notifications():
			if !ok {
				t.Fatalf("websocket closed while waiting for %q: %v", command, conn.Err())
			}
			if env.Action != shared.ActionMessageAdded && env.Action != shared.ActionMessageUpdated {
				continue
			}
			m, err := decode(env)
			if err != nil {
				t.Fatal(err)
			}
			if sh := shared.ShellOf(m); sh != nil && m.CreatedAt.After(user.CreatedAt.Add(-time.Nanosecond)) &&
				sh.Command == command && done(m) {
				return m
			}
		case <-ctx.Done():
			t.Fatalf("command %q did not finish: %v", command, ctx.Err())
		}
	}
}

// subscribe opens a WebSocket subscribed to the session's notifications; the caller
// closes it.
func (s *server) subscribe(t *testing.T, ctx context.Context, sid string) *client.Conn {
	t.Helper()
	conn, err := s.API.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Subscribe(ctx, sid); err != nil {
		conn.Close()
		t.Fatal(err)
	}
	return conn
}

// openRunning runs command in a new session until it is running and its summary counts
// stdoutBytes of output, opens the session in a new browser, opens the command's output
// disclosure and waits for the first snapshot to load. The page's requests bypass the
// service worker (bypassWorker).
func (s *server) openRunning(t *testing.T, command string, stdoutBytes int) (*browser, shared.Message) {
	t.Helper()
	sess := s.session(t, "running command")
	m := s.run(t, sess.ID, command, func(m shared.Message) bool {
		return m.Metadata.Status == shared.StatusRunning && shared.ShellOf(m).Output.StdoutBytes >= stdoutBytes
	})
	b := newBrowser(t)
	b.open(t, s.URL+"/sessions/"+sess.ID)
	b.bypassWorker(t)
	button := row(m.ID) + " button.disclosure-toggle"
	b.waitFor(t, "the disclosure", fmt.Sprintf(`!!document.querySelector(%q)`, button))
	b.do(t, chromedp.Click(chromedp.CSS(button)))
	b.waitLoads(t, m.ID, 1)
	return b, m
}

// bypassWorker sends the page's later requests straight to the network, so its network
// events count the bytes on the wire: an answer the service worker hands the page reports none.
func (b *browser) bypassWorker(t *testing.T) {
	t.Helper()
	send(t, b, network.SetBypassServiceWorker, network.SetBypassServiceWorkerParams{Bypass: true})
}

// browser is one headless Chromium with a fresh profile, and the output snapshot
// requests it has sent, as its network saw them.
type browser struct {
	ctx context.Context

	mu       sync.Mutex
	requests map[string]int                      // sent, per message id
	pending  map[network.RequestID]*snapshotLoad // sent, not finished yet
	peak     int                                 // the most of them in flight at once
	loads    []snapshotLoad                      // finished, in order
	loaded   chan struct{}                       // signalled on each finished load
}

// snapshotLoad is one output snapshot request that finished loading.
type snapshotLoad struct {
	message     string
	ifNoneMatch string // the version the page said it held
	offsets     bool   // asked only for what came after the page's snapshot
	status      int64
	etag        string
	bytes       float64 // received in all: headers and body, as on the wire
	bodyBytes   int64   // of those, the body's
}

// newBrowser is a fresh browser for one test: a browser context of its own (cookies,
// storage, caches and service workers of its own) in a window of the package's one
// Chromium, so tests run side by side.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	b := blankBrowser()
	ctx, cancel := chromedp.NewContext(chromium.start(t), chromedp.WithNewBrowserContext(), chromedp.WithListener(b.observe))
	return b.started(t, ctx, cancel)
}

// ownBrowser is a Chromium of the test's own, for what a browser context cannot have:
// flags (extra), or the push service (a browser context other than the default is
// incognito, with no push).
func ownBrowser(t *testing.T, extra ...chromedp.ExecAllocatorOption) *browser {
	t.Helper()
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromiumFlags(chromiumPath(t), t.TempDir(), extra...)...)
	t.Cleanup(cancelAlloc)
	b := blankBrowser()
	ctx, cancel := chromedp.NewContext(alloc, chromedp.WithListener(b.observe))
	return b.started(t, ctx, cancel)
}

// blankBrowser is a browser with no requests seen, before its context.
func blankBrowser() *browser {
	return &browser{requests: map[string]int{}, pending: map[network.RequestID]*snapshotLoad{}, loaded: make(chan struct{}, 1)}
}

// started opens the browser's window in ctx, ended by cancel with the test. The window
// acts as the focused one, as a person's is, though others of the same Chromium take turns.
func (b *browser) started(t *testing.T, ctx context.Context, cancel context.CancelFunc) *browser {
	t.Helper()
	b.ctx = ctx
	t.Cleanup(cancel)
	// The first run opens the window, and on b.ctx itself: the window lasts as long as the
	// context of that run.
	focused := chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true})
		return err
	})
	if err := chromedp.Do(b.ctx, focused); err != nil {
		t.Fatal(err)
	}
	return b
}

// contextID is the browser's browser context, for the Browser domain's commands.
func (b *browser) contextID() cdp.BrowserContextID {
	return chromedp.FromContext(b.ctx).BrowserContextID
}

// chromium is the package's one headless Chromium, started by the first test that needs
// it and stopped by TestMain.
var chromium sharedChromium

type sharedChromium struct {
	once sync.Once
	ctx  context.Context
	err  error
	dir  string
	stop func() // stops it, if it started, and removes its profile
}

// start starts Chromium once, and returns its first context, the parent of every test's.
func (c *sharedChromium) start(t *testing.T) context.Context {
	t.Helper()
	exe := chromiumPath(t) // fails the test here, never inside once
	c.once.Do(func() {
		if c.dir, c.err = os.MkdirTemp("", "conch-e2e-chromium-"); c.err != nil {
			return
		}
		alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromiumFlags(exe, c.dir)...)
		ctx, cancel := chromedp.NewContext(alloc)
		c.ctx, c.stop = ctx, func() { cancel(); cancelAlloc(); _ = os.RemoveAll(c.dir) }
		c.err = chromedp.Do(ctx)
	})
	if c.err != nil {
		t.Fatal(c.err)
	}
	return c.ctx
}

// chromiumPath is the Chromium to run: $CHROMIUM, or Debian's.
func chromiumPath(t *testing.T) string {
	t.Helper()
	exe := os.Getenv("CHROMIUM")
	if exe == "" {
		exe = "/usr/bin/chromium"
	}
	if _, err := os.Stat(exe); err != nil {
		// Fail, never skip: a run without a browser must not pass as a full one.
		t.Fatalf("no Chromium at %s: install Debian's chromium package (apt-get install chromium), or set CHROMIUM: %v", exe, err)
	}
	return exe
}

// chromiumFlags start a headless Chromium exe with the profile dir that reaches no
// network of its own; extra flags follow.
func chromiumFlags(exe, dir string, extra ...chromedp.ExecAllocatorOption) []chromedp.ExecAllocatorOption {
	return append([]chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(dir),
		chromedp.WindowSize(1280, 900),
	}, extra...)
}

// observe follows the output snapshot (and tool content, error detail) requests through the browser's
// network events.
func (b *browser) observe(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch e := ev.(type) {
	case *network.EventRequestWillBeSent:
		u, err := url.Parse(e.Request.URL)
		var id string
		switch {
		case err != nil:
			return
		case strings.HasSuffix(u.Path, "/shell-output") || strings.HasSuffix(u.Path, "/tool-content") || strings.HasSuffix(u.Path, "/error-detail"):
			parts := strings.Split(u.Path, "/")
			id = parts[len(parts)-2]
		case strings.HasSuffix(u.Path, "/changes/diff"): // a task's file, counted as "diff:PATH"
			id = "diff:" + u.Query().Get("path")
		default:
			return
		}
		b.requests[id]++
		b.pending[e.RequestID] = &snapshotLoad{message: id, ifNoneMatch: header(e.Request.Headers, "If-None-Match"),
			offsets: u.Query().Has("stdout_offset")}
		b.peak = max(b.peak, len(b.pending))
	case *network.EventResponseReceived:
		if l := b.pending[e.RequestID]; l != nil {
			l.status, l.etag = e.Response.Status, header(e.Response.Headers, "ETag")
		}
	case *network.EventDataReceived: // a piece of the body
		if l := b.pending[e.RequestID]; l != nil {
			l.bodyBytes += e.EncodedDataLength
		}
	case *network.EventLoadingFinished:
		if l := b.pending[e.RequestID]; l != nil {
			l.bytes = e.EncodedDataLength
			b.loads = append(b.loads, *l)
			delete(b.pending, e.RequestID)
			select {
			case b.loaded <- struct{}{}:
			default: // a signal is already waiting
			}
		}
	case *network.EventLoadingFailed: // aborted
		delete(b.pending, e.RequestID)
	}
}

// header returns the value of the header name, whatever its case on the wire.
func header(h network.Headers, name string) string {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			s, _ := v.(string)
			return s
		}
	}
	return ""
}

// finished returns the snapshot requests of message id that finished loading, in order.
func (b *browser) finished(id string) []snapshotLoad {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []snapshotLoad
	for _, l := range b.loads {
		if l.message == id {
			out = append(out, l)
		}
	}
	return out
}

// waitLoads waits until n snapshot requests of message id have finished loading.
func (b *browser) waitLoads(t *testing.T, id string, n int) []snapshotLoad {
	t.Helper()
	timeout := time.After(deadline)
	for {
		if got := b.finished(id); len(got) >= n {
			return got
		}
		select {
		case <-b.loaded:
		case <-timeout:
			t.Fatalf("%d of %d snapshot requests finished loading within %v", len(b.finished(id)), n, deadline)
		}
	}
}

// snapshots returns how many output snapshots of message id the page has requested.
func (b *browser) snapshots(id string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.requests[id]
}

// total returns how many output snapshots the page has requested in all.
func (b *browser) total() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, c := range b.requests {
		n += c
	}
	return n
}

func (b *browser) do(t *testing.T, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, deadline)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

// eval evaluates js in the page; a promise is awaited.
func eval[T any](t *testing.T, b *browser, js string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, deadline)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

// waitFor polls a JavaScript predicate until it is true. A poll runs in one document:
// when the page's document is replaced under it (a navigation still committing when the
// step before returned, as on a loaded machine), it polls again in the new one.
func (b *browser) waitFor(t *testing.T, what, js string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, deadline)
	defer cancel()
	for {
		_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(deadline), chromedp.WithPollingInterval(50*time.Millisecond)))
		if err == nil {
			return
		}
		if !documentReplaced(err) || ctx.Err() != nil {
			t.Fatalf("waiting for %s: %v\npage text:\n%s", what, err, eval[string](t, b, `document.body ? document.body.innerText : ""`))
		}
		select { // until chromedp has heard of the new document's context
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// documentReplaced reports whether err is one of Chromium's answers to an evaluation in a
// document that went away meanwhile.
func documentReplaced(err error) bool {
	var e *cdproto.Error
	return errors.As(err, &e) && (e.Message == "Cannot find context with specified id" ||
		e.Message == "Inspected target navigated or closed" || strings.HasPrefix(e.Message, "Execution context was destroyed"))
}

// waitThrough polls js like waitFor, but across a navigation the page makes itself (an
// evaluation cut short by the navigation is tried again).
func (b *browser) waitThrough(t *testing.T, what, js string) {
	t.Helper()
	end := time.Now().Add(deadline)
	for time.Now().Before(end) {
		ctx, cancel := context.WithTimeout(b.ctx, time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
		cancel()
		if err == nil && ok {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("waiting for %s: not within %s", what, deadline)
}

// open loads a session page and waits until the WASM app runs it (prerendered buttons
// do nothing before that; the live indicator exists only once the app runs).
func (b *browser) open(t *testing.T, url string) {
	t.Helper()
	b.do(t, chromedp.Navigate(url))
	b.waitApp(t)
}

func (b *browser) waitApp(t *testing.T) {
	t.Helper()
	b.waitFor(t, "the WASM app", `!document.getElementById("app-wasm-loader") && !!document.querySelector(".live")`)
}

// waitLive waits until the live indicator says state ("Live", "Reconnecting…").
func (b *browser) waitLive(t *testing.T, state string) {
	t.Helper()
	b.waitFor(t, "the live indicator to say "+state, fmt.Sprintf(`(document.querySelector(".live") || {innerText: ""}).innerText === %q`, state))
}

// row is the CSS selector of a message's row.
func row(id string) string { return fmt.Sprintf(`[data-message-id=%q]`, id) }

func (b *browser) text(t *testing.T, sel string) string {
	t.Helper()
	// textContent, not innerText: rows use content-visibility: auto, and the text of a
	// row not laid out yet would read as empty.
	return eval[string](t, b, fmt.Sprintf(`(document.querySelector(%q) || {textContent: ""}).textContent`, sel))
}

// screenshot saves what the viewport shows as a PNG under artifacts/ at the module root.
// Not a full-page capture: rows use content-visibility: auto, and Chromium's full-page
// capture paints them blank.
// screenshots saves what a person sees at 1280×900 and 393×851, in light and dark, as
// name-desktop-light.png and so on; sel, when not "", is scrolled into the middle first.
// The page is left as the last picture shows it (393×851, dark).
func (b *browser) screenshots(t *testing.T, name, sel string) {
	t.Helper()
	for _, size := range []struct {
		name          string
		width, height int64
		scale         float64
		mobile        bool
	}{{"desktop", 1280, 900, 1, false}, {"mobile", 393, 851, 2.75, true}} {
		opts := []chromedp.EmulateViewportOption{chromedp.EmulateScale(size.scale)}
		if size.mobile {
			opts = append(opts, chromedp.EmulateMobile)
		}
		b.do(t, chromedp.EmulateViewport(size.width, size.height, opts...))
		for _, scheme := range []string{"light", "dark"} {
			b.scheme(t, scheme)
			if sel != "" {
				b.do(t, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector(%q).scrollIntoView({block: "center"})`, sel)))
			}
			b.screenshot(t, fmt.Sprintf("%s-%s-%s.png", name, size.name, scheme))
		}
	}
}

// scheme makes the page see prefers-color-scheme: scheme ("" ends the emulation).
func (b *browser) scheme(t *testing.T, scheme string) {
	t.Helper()
	var features []*emulation.MediaFeature
	if scheme != "" {
		features = []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}
	}
	send(t, b, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: features})
	if scheme != "" {
		b.waitFor(t, scheme+" colours", fmt.Sprintf(`matchMedia("(prefers-color-scheme: %s)").matches`, scheme))
	}
}

// send sends one DevTools command whose answer is not needed.
func send[P, R any](t *testing.T, b *browser, cmd cdp.Command[P, R], params P) {
	t.Helper()
	b.do(t, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, cmd, params)
		return err
	}))
}

func (b *browser) screenshot(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, deadline)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("..", "..", "artifacts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

func decode(env shared.Envelope) (shared.Message, error) {
	var m shared.Message
	err := json.Unmarshal(env.Payload, &m)
	return m, err
}

// TestWaitForSurvivesANewDocument: a page that replaces its document while waitFor polls
// (here by itself, as a navigation still committing does) is polled again in the new one.
func TestWaitForSurvivesANewDocument(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	b := newBrowser(t)
	b.do(t, chromedp.Navigate(s.URL+"/search"))
	b.do(t, chromedp.Evaluate[chromedp.Void](`setTimeout(() => location.assign("/search?q=again"), 300)`))
	b.waitFor(t, "the new document", `location.search === "?q=again" && document.readyState === "complete"`)
}
