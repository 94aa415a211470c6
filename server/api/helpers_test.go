package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"conch/server/hub"
	"conch/server/internal/clocktest"
	"conch/server/internal/pgtest"
	"conch/server/store"
	"conch/shared"

	"github.com/gofiber/fiber/v2"
)

// fakeRuntime records what the API asks of the agent runtime.
type fakeRuntime struct {
	store *store.Store
	hub   *hub.Hub

	mu       sync.Mutex
	prompts  []string // "session: content"
	cancels  []string
	stops    []string
	answers  []string // "message: option"
	draining error    // Draining's answer
	// unanswered, when set, plays an agent that never answers a mode switch: SetMode
	// waits until it is closed, then fails as the runtime's timeout does.
	unanswered chan struct{}
	panics     atomic.Bool // Agents and Prompt panic, as a bug would
}

func (f *fakeRuntime) Agents() []shared.Agent {
	if f.panics.Load() {
		panic("runtime bug")
	}
	return []shared.Agent{{Name: "shell", Description: "runs each prompt as a shell command"}}
}

func (f *fakeRuntime) StartSession(ctx context.Context, taskID, agent, cwd string) (shared.Session, error) {
	if agent != "shell" {
		return shared.Session{}, shared.Errorf(shared.CodeInvalid, "unknown agent %q", agent)
	}
	sess, err := f.store.CreateSession(ctx, taskID, agent, cwd)
	if err != nil {
		return shared.Session{}, err
	}
	return f.store.SetSessionState(ctx, sess.ID, shared.SessionReady, "")
}

// Prompt stores and publishes the prompt as the runtime does, and records the turn it
// would queue.
func (f *fakeRuntime) Prompt(ctx context.Context, sessionID, author string, req shared.AddRequest, files ...string) (shared.Message, error) {
	if f.panics.Load() {
		panic("runtime bug")
	}
	if err := f.Draining(); err != nil {
		return shared.Message{}, err
	}
	msg, created, _, err := f.store.AddUserMessage(ctx, sessionID, req.Content, req.ClientMessageID, author, req.Attachments...)
	if err != nil || !created {
		return msg, err
	}
	f.hub.MessageAdded(msg)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.prompts = append(f.prompts, sessionID+": "+req.Content+strings.Join(files, "\nlink: "))
	return msg, nil
}

func (f *fakeRuntime) Cancel(sessionID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancels = append(f.cancels, sessionID)
	return nil
}

func (f *fakeRuntime) Stop(sessionID, reason string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stops = append(f.stops, sessionID)
}

// StopAgent records the stop in the store and publishes it, as the runtime does once
// the agent is gone.
func (f *fakeRuntime) StopAgent(ctx context.Context, sessionID string) (shared.Session, error) {
	sess, status, err := f.store.StopSession(ctx, sessionID, "The agent was stopped.", false)
	if err != nil {
		return sess, err
	}
	if status == nil {
		return shared.Session{}, shared.Errorf(shared.CodeConflict, "session is %s", sess.State)
	}
	f.hub.MessageAdded(*status)
	f.hub.SessionUpdated(sess)
	return sess, nil
}

// ListAgentSessions lists one session "agent-1" of the agent, in cwd.
func (f *fakeRuntime) ListAgentSessions(ctx context.Context, taskID, agent, cwd, cursor string) (shared.AgentSessionPage, error) {
	return shared.AgentSessionPage{Agent: agent, Cwd: cwd, Sessions: []shared.AgentSession{{ID: "agent-1", Title: "earlier"}}}, nil
}

// ImportAgentSessions imports each of ids as the runtime does, to be resumed by session/resume.
func (f *fakeRuntime) ImportAgentSessions(ctx context.Context, taskID, agent, cwd string, ids []string) ([]shared.Session, error) {
	var out []shared.Session
	for _, id := range ids {
		sess, note, err := f.store.ImportAgentSession(ctx, taskID, agent, cwd, id, store.ResumeBy, "Imported "+id)
		if err != nil {
			return out, err
		}
		f.hub.MessageAdded(note)
		f.hub.SessionUpdated(sess)
		out = append(out, sess)
	}
	return out, nil
}

// Draining is draining: nil, or the error a stopping server answers.
func (f *fakeRuntime) Draining() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.draining
}

// Fork is refused as by an agent that cannot fork: the service summarizes instead.
func (f *fakeRuntime) Fork(context.Context, string) (shared.Fork, error) {
	return shared.Fork{}, shared.Errorf(shared.CodeConflict, "the agent cannot fork this session here")
}

// Resume starts the stopped session's agent again, as the runtime does once the agent has
// resumed; a session whose agent cannot resume is refused with the reason.
func (f *fakeRuntime) Resume(ctx context.Context, sessionID string) (shared.Session, error) {
	sess, err := f.store.GetSession(ctx, sessionID)
	if err != nil {
		return sess, err
	}
	if !sess.Resumable {
		return shared.Session{}, shared.Errorf(shared.CodeConflict, "%s", shared.NoResume)
	}
	if sess, err = f.store.SetSessionState(ctx, sessionID, shared.SessionReady, ""); err == nil {
		f.hub.SessionUpdated(sess)
	}
	return sess, err
}

// AnswerPermission settles the request in the store and publishes it, as the runtime
// does for a live agent, and records the answer the agent would get.
func (f *fakeRuntime) AnswerPermission(ctx context.Context, sessionID, messageID, optionID string) (shared.Message, error) {
	m, _, err := f.store.AnswerPermission(ctx, sessionID, messageID, optionID)
	if err != nil {
		return m, err
	}
	f.hub.MessageUpdated(m)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers = append(f.answers, messageID+": "+optionID)
	return m, nil
}

// AnswerElicitation settles the question as AnswerPermission does a request.
func (f *fakeRuntime) AnswerElicitation(ctx context.Context, sessionID, messageID string, a shared.ElicitationAnswer) (shared.Message, error) {
	m, _, err := f.store.AnswerElicitation(ctx, sessionID, messageID, a)
	if err != nil {
		return m, err
	}
	f.hub.MessageUpdated(m)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers = append(f.answers, messageID+": "+m.Metadata.Elicitation.Answered())
	return m, nil
}

// SetMode switches to a mode the stored session offers, as the runtime does once the
// agent agreed.
func (f *fakeRuntime) SetMode(ctx context.Context, sessionID, modeID string) (shared.Session, error) {
	if f.unanswered != nil {
		<-f.unanswered
		return shared.Session{}, shared.Errorf(shared.CodeTimeout, "the agent did not answer session/set_mode within 10s")
	}
	sess, err := f.store.GetSession(ctx, sessionID)
	switch {
	case err != nil:
		return shared.Session{}, err
	case sess.Modes == nil:
		return shared.Session{}, shared.Errorf(shared.CodeConflict, "the agent offers no modes")
	case !sess.Modes.Offers(modeID):
		return shared.Session{}, shared.Errorf(shared.CodeInvalid, "mode %q is not offered by the agent", modeID)
	}
	m := *sess.Modes
	m.Current = modeID
	return f.store.SetSessionModes(ctx, sessionID, m)
}

// SetConfig sets an option the stored session offers, as the runtime does once the agent
// agreed.
func (f *fakeRuntime) SetConfig(ctx context.Context, sessionID string, req shared.ConfigRequest) (shared.Session, error) {
	sess, err := f.store.GetSession(ctx, sessionID)
	if err != nil {
		return shared.Session{}, err
	}
	for i, o := range sess.ConfigOptions {
		if o.ID == req.ConfigID {
			switch v := req.Value.(type) {
			case string:
				o.Current = v
			case bool:
				o.On = v
			}
			sess.ConfigOptions[i] = o
			return f.store.SetSessionConfig(ctx, sessionID, sess.ConfigOptions)
		}
	}
	return shared.Session{}, shared.Errorf(shared.CodeInvalid, "config option %q is not offered by the agent", req.ConfigID)
}

func (f *fakeRuntime) recorded() (prompts, cancels []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.prompts...), append([]string(nil), f.cancels...)
}

// placeholderUI stands in for go-app's handler: a page that names its path and, for a
// page the server handed data, the session and the messages' text it got.
func placeholderUI(boot func(string) (shared.Boot, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><title>Conch</title><main>page %s", r.URL.Path)
		if key := r.URL.Query().Get(shared.BootParam); key != "" {
			b, err := boot(key)
			fmt.Fprintf(w, " boot %s %v", b.Session.ID, err)
			for _, m := range b.Messages.Messages {
				fmt.Fprintf(w, " %q", m.Content)
			}
		}
		fmt.Fprint(w, "</main>")
	})
}

type env struct {
	t      testing.TB
	app    *fiber.App
	store  *store.Store
	hub    *hub.Hub
	rt     *fakeRuntime
	logs   *lockedWriter
	clock  *clocktest.Clock // the server's Now: moves only when a test moves it
	stored *clocktest.Clock // the store's Now
}

type option func(*Config)

func newEnv(t testing.TB, opts ...option) *env {
	t.Helper()
	clk := clocktest.New(time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC), time.Millisecond) // creation order is total
	st, err := store.Open(pgtest.DSN(t), clk.Now)                                         // SQLite, or PostgreSQL with CONCH_TEST_DB=postgres
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	logs := &lockedWriter{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := hub.New(hub.Config{Now: clk.Now, Logger: logger, Task: st.TaskSummary})
	rt := &fakeRuntime{store: st}
	wall := clocktest.New(time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC), 0)
	cfg := Config{Store: st, Hub: h, Runtime: rt, UI: placeholderUI, Web: testWeb, Logger: logger, Now: wall.Now}
	for _, o := range opts {
		o(&cfg)
	}
	rt.hub = cfg.Hub
	return &env{t: t, app: New(cfg), store: st, hub: cfg.Hub, rt: rt, logs: logs, clock: wall, stored: clk}
}

// lockedWriter collects the server's log; handlers write while tests read.
type lockedWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// do sends one request through fiber's in-memory transport, from a loopback host.
func (e *env) do(method, target, body string, header ...string) (*http.Response, string) {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, rd)
	req.Host = "127.0.0.1:8080"
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	sent := req.Header.Clone()
	resp, err := e.app.Test(req, -1)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	checkOpenAPI(e.t, method, target, body, sent, resp, string(raw))
	return resp, string(raw)
}

// expect checks the status of a request and decodes its JSON body into out (if not nil).
func (e *env) expect(status int, method, target, body string, out any, header ...string) string {
	e.t.Helper()
	resp, raw := e.do(method, target, body, header...)
	if resp.StatusCode != status {
		e.t.Fatalf("%s %s: status %d, want %d; body %s", method, target, resp.StatusCode, status, raw)
	}
	if out != nil {
		if err := json.Unmarshal([]byte(raw), out); err != nil {
			e.t.Fatalf("%s %s: decode %s: %v", method, target, raw, err)
		}
	}
	return raw
}

// session creates a task and a ready session through the store.
func (e *env) session() shared.Session {
	e.t.Helper()
	ctx := context.Background()
	task, err := e.store.CreateTask(ctx, "task", "")
	if err != nil {
		e.t.Fatal(err)
	}
	sess, err := e.rt.StartSession(ctx, task.ID, "shell", "/tmp")
	if err != nil {
		e.t.Fatal(err)
	}
	return sess
}

// shell stores a shell command with the given output (nil: none yet).
func (e *env) shell(sessionID, command string, status shared.ToolStatus, out *shared.ShellOutput) shared.Message {
	e.t.Helper()
	m, err := e.store.CreateMessage(context.Background(), store.NewMessage{
		SessionID: sessionID, AuthorType: shared.AuthorAgent, Type: shared.TypeToolExecute, Content: command,
		Metadata: &shared.Metadata{ToolCallID: "call-" + command, Title: command, Status: status, Kind: "execute",
			Normalized: &shared.Normalized{Kind: shared.NormalizedShellExec, ShellExec: &shared.ShellExec{Command: command, WorkDir: "/repo"}}},
		Output: out,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}

func (e *env) text(sessionID, content string) shared.Message {
	e.t.Helper()
	m, err := e.store.CreateMessage(context.Background(), store.NewMessage{
		SessionID: sessionID, AuthorType: shared.AuthorAgent, Type: shared.TypeMessage, Content: content})
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}

func intp(n int) *int { return &n }

// testWeb is a /web/ tree with a fake UI binary and its compressed copies.
var testWeb fs.FS = fstest.MapFS{
	"app.wasm":    {Data: []byte("RAW-WASM")},
	"app.wasm.br": {Data: []byte("BR")},
	"app.wasm.gz": {Data: []byte("GZ!")},
	"icon.svg":    {Data: []byte("<svg/>")},
	"css/app.css": {Data: []byte("body{}")},
}

// listen serves the app on a real loopback port for WebSocket tests.
func (e *env) listen() string {
	e.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		e.t.Fatal(err)
	}
	go func() { _ = e.app.Listener(ln) }()
	e.t.Cleanup(func() { _ = e.app.ShutdownWithTimeout(5 * time.Second) })
	return ln.Addr().String()
}
