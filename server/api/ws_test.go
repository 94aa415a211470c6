package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"conch/server/hub"
	"conch/server/store"
	"conch/server/waittest"
	"conch/shared"

	"github.com/coder/websocket"
)

// wsClient is a test's WebSocket client: requests carry ids, and notifications that
// arrive while waiting for a response are kept for next.
type wsClient struct {
	t       *testing.T
	c       *websocket.Conn
	seq     int
	pending []shared.Envelope
}

func dial(t *testing.T, addr string, header http.Header) (*wsClient, *http.Response, error) {
	return dialWith(t, addr, &websocket.DialOptions{HTTPHeader: header})
}

func dialWith(t *testing.T, addr string, opts *websocket.DialOptions) (*wsClient, *http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Limit(t))
	defer cancel()
	c, resp, err := websocket.Dial(ctx, "ws://"+addr+"/ws", opts)
	if err != nil {
		return nil, resp, err
	}
	c.SetReadLimit(8 << 20)
	t.Cleanup(func() { c.Close(websocket.StatusNormalClosure, "") })
	return &wsClient{t: t, c: c}, resp, nil
}

func mustDial(t *testing.T, addr string) *wsClient {
	t.Helper()
	w, _, err := dial(t, addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *wsClient) read() shared.Envelope {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Limit(w.t))
	defer cancel()
	kind, data, err := w.c.Read(ctx)
	if err != nil {
		w.t.Fatalf("ws read: %v", err)
	}
	if kind != websocket.MessageText {
		w.t.Fatalf("ws frame of kind %v", kind)
	}
	var env shared.Envelope
	if err := json.Unmarshal(data, &env); err != nil {
		w.t.Fatalf("ws frame %s: %v", data, err)
	}
	return env
}

// next returns the next notification.
func (w *wsClient) next() shared.Envelope {
	w.t.Helper()
	if len(w.pending) > 0 {
		env := w.pending[0]
		w.pending = w.pending[1:]
		return env
	}
	return w.read()
}

func (w *wsClient) send(raw string) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Limit(w.t))
	defer cancel()
	if err := w.c.Write(ctx, websocket.MessageText, []byte(raw)); err != nil {
		w.t.Fatalf("ws write: %v", err)
	}
}

// request sends one request and returns its response or error envelope.
func (w *wsClient) request(action string, payload any) shared.Envelope {
	w.t.Helper()
	w.seq++
	id := fmt.Sprint("req-", w.seq)
	raw, err := json.Marshal(payload)
	if err != nil {
		w.t.Fatal(err)
	}
	frame, _ := json.Marshal(shared.Envelope{ID: id, Type: shared.EnvelopeRequest, Action: action, Payload: raw, Timestamp: time.Now()})
	w.send(string(frame))
	return w.reply(id)
}

func (w *wsClient) reply(id string) shared.Envelope {
	w.t.Helper()
	for {
		env := w.read()
		if env.Type == shared.EnvelopeNotification {
			w.pending = append(w.pending, env)
			continue
		}
		if env.ID != id {
			w.t.Fatalf("reply for %q while waiting for %q: %+v", env.ID, id, env)
		}
		return env
	}
}

func errorOf(t *testing.T, env shared.Envelope) shared.Error {
	t.Helper()
	if env.Type != shared.EnvelopeError {
		t.Fatalf("want an error envelope, got %s %s", env.Type, env.Payload)
	}
	var p shared.Error
	if err := json.Unmarshal(env.Payload, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestWSRequests(t *testing.T) {
	e := newEnv(t)
	s := e.session()
	e.shell(s.ID, "ls", shared.StatusCompleted, &shared.ShellOutput{Stdout: "a\nb\n", ExitCode: intp(0)})
	w := mustDial(t, e.listen())

	if env := w.request(shared.ActionSubscribe, shared.SessionRef{SessionID: s.ID}); env.Type != shared.EnvelopeResponse ||
		env.Action != shared.ActionSubscribe || env.ID != "req-1" || string(env.Payload) != `{"session_id":"`+s.ID+`"}` {
		t.Errorf("subscribe answered %+v %s", env, env.Payload)
	}

	// message.list answers exactly the REST body.
	env := w.request(shared.ActionMessageList, map[string]any{"session_id": s.ID, "limit": 10, "sort": "desc"})
	rest := e.expect(http.StatusOK, "GET", "/api/v1/task-sessions/"+s.ID+"/messages?limit=10&sort=desc", "", nil)
	if env.Type != shared.EnvelopeResponse || string(env.Payload) != rest {
		t.Errorf("message.list %s %s\nREST %s", env.Type, env.Payload, rest)
	}

	// message.add: the response is the stored message, then the subscriber sees it added.
	env = w.request(shared.ActionMessageAdd, shared.AddRequest{SessionID: s.ID, Content: "pwd", ClientMessageID: "c-9"})
	var added shared.Message
	if err := json.Unmarshal(env.Payload, &added); err != nil || env.Type != shared.EnvelopeResponse || added.Content != "pwd" {
		t.Fatalf("message.add answered %s %s", env.Type, env.Payload)
	}
	note := w.next()
	if note.Action != shared.ActionMessageAdded || string(note.Payload) != string(env.Payload) {
		t.Errorf("notification %s %s, want added %s", note.Action, note.Payload, env.Payload)
	}
	if again := w.request(shared.ActionMessageAdd, shared.AddRequest{SessionID: s.ID, Content: "pwd", ClientMessageID: "c-9"}); string(again.Payload) != string(env.Payload) {
		t.Errorf("repeated client_message_id answered %s", again.Payload)
	}
	if prompts, _ := e.rt.recorded(); len(prompts) != 1 {
		t.Errorf("prompts %q, want one", prompts)
	}

	if env := w.request(shared.ActionUnsubscribe, shared.SessionRef{SessionID: s.ID}); env.Type != shared.EnvelopeResponse || string(env.Payload) != `{"session_id":"`+s.ID+`"}` {
		t.Errorf("unsubscribe answered %+v", env)
	}
}

func TestWSErrors(t *testing.T) {
	e := newEnv(t)
	s, failed := e.session(), e.session()
	if _, err := e.store.SetSessionState(context.Background(), failed.ID, shared.SessionClosed, ""); err != nil {
		t.Fatal(err)
	}
	w := mustDial(t, e.listen())

	for _, c := range []struct {
		name    string
		action  string
		payload any
		code    string
		message string
	}{
		{"unknown action", "session.delete", shared.SessionRef{SessionID: s.ID}, shared.CodeUnknownAction, `unknown action "session.delete"`},
		{"unknown session", shared.ActionSubscribe, shared.SessionRef{SessionID: "nope"}, shared.CodeNotFound, "session not found"},
		{"no session id", shared.ActionSubscribe, map[string]string{}, shared.CodeInvalid, "session_id is required"},
		{"null payload", shared.ActionMessageList, nil, shared.CodeInvalid, "session_id is required"},
		{"limit not a number", shared.ActionMessageList, map[string]any{"session_id": s.ID, "limit": "ten"}, shared.CodeInvalid, "limit must be a positive integer"},
		{"limit too large to read", shared.ActionMessageList, map[string]any{"session_id": s.ID, "limit": 1e30}, shared.CodeInvalid, "limit must be a positive integer"},
		{"payload type", shared.ActionMessageList, map[string]any{"session_id": s.ID, "sort": 1}, shared.CodeInvalid, `field "sort" must be a string`},
		{"unknown field", shared.ActionMessageList, map[string]any{"session_id": s.ID, "page": 2}, shared.CodeInvalid, `unknown field "page"`},
		{"zero limit", shared.ActionMessageList, map[string]any{"session_id": s.ID, "limit": 0}, shared.CodeInvalid, "limit must be a positive integer"},
		{"both cursors", shared.ActionMessageList, map[string]any{"session_id": s.ID, "before": "a", "after": "b"}, shared.CodeInvalid, "give before or after, not both"},
		{"list unknown session", shared.ActionMessageList, map[string]any{"session_id": "nope"}, shared.CodeNotFound, "session not found"},
		{"empty content", shared.ActionMessageAdd, shared.AddRequest{SessionID: s.ID}, shared.CodeInvalid, "content is required"},
		{"closed session", shared.ActionMessageAdd, shared.AddRequest{SessionID: failed.ID, Content: "ls"}, shared.CodeConflict, "session is closed"},
	} {
		env := w.request(c.action, c.payload)
		p := errorOf(t, env)
		if p.Code != c.code || p.Message != c.message || env.ID != fmt.Sprint("req-", w.seq) || env.Action != c.action {
			t.Errorf("%s: %+v %+v", c.name, env, p)
		}
	}

	for _, c := range []struct{ frame, message string }{
		{`{"id":"x","type":"request","action":`, "bad envelope: malformed JSON: unexpected end of body"},
		{`{"id":"x","type":"request","action":"message.list"}`, "payload is required"},
		{`{"id":"x","type":"notification","action":"message.list","payload":{}}`, `type must be "request"`},
		{`{"id":"x","action":"message.list","payload":{},"extra":1}`, `bad envelope: unknown field "extra"`},
		{"{\"id\":\"x\",\"action\":\"message.add\",\"payload\":{\"session_id\":\"" + s.ID + "\",\"content\":\"\xff\"}}", "bad envelope: request body is not valid UTF-8"},
	} {
		w.send(c.frame)
		p := errorOf(t, w.read())
		if p.Code != shared.CodeInvalid || p.Message != c.message {
			t.Errorf("frame %q: %+v", c.frame, p)
		}
	}
	if total := e.expect(http.StatusOK, "GET", "/api/v1/task-sessions/"+s.ID+"/messages", "", nil); !strings.Contains(total, `"total":0`) {
		t.Errorf("bad requests stored messages: %s", total)
	}
	// The connection survives bad requests.
	if env := w.request(shared.ActionSubscribe, shared.SessionRef{SessionID: s.ID}); env.Type != shared.EnvelopeResponse {
		t.Errorf("after errors: %+v", env)
	}
}

// TestWSNotificationsGoOnlyToSubscribers relies on each client's frames keeping the
// order of publication: a marker published later arriving first proves nothing came.
func TestWSNotificationsGoOnlyToSubscribers(t *testing.T) {
	e := newEnv(t)
	s1, s2 := e.session(), e.session()
	addr := e.listen()
	a, b := mustDial(t, addr), mustDial(t, addr)
	a.request(shared.ActionSubscribe, shared.SessionRef{SessionID: s1.ID})
	b.request(shared.ActionSubscribe, shared.SessionRef{SessionID: s2.ID})

	m1 := e.text(s1.ID, "for s1")
	e.hub.MessageAdded(m1)
	m1.Content = "edited"
	e.hub.MessageUpdated(m1)
	marker := e.text(s2.ID, "marker for s2")
	e.hub.MessageAdded(marker)

	if n := a.next(); n.Action != shared.ActionMessageAdded || !strings.Contains(string(n.Payload), `"for s1"`) {
		t.Errorf("a got %s %s", n.Action, n.Payload)
	}
	if n := a.next(); n.Action != shared.ActionMessageUpdated || !strings.Contains(string(n.Payload), `"edited"`) {
		t.Errorf("a got %s %s", n.Action, n.Payload)
	}
	if n := b.next(); !strings.Contains(string(n.Payload), "marker for s2") {
		t.Errorf("b got %s %s before its own session's marker", n.Action, n.Payload)
	}

	a.request(shared.ActionUnsubscribe, shared.SessionRef{SessionID: s1.ID})
	a.request(shared.ActionSubscribe, shared.SessionRef{SessionID: s2.ID})
	e.hub.MessageAdded(e.text(s1.ID, "after unsubscribe"))
	e.hub.SessionUpdated(s2)
	if n := a.next(); n.Action != shared.ActionSessionUpdated || !strings.Contains(string(n.Payload), s2.ID) {
		t.Errorf("a got %s %s after unsubscribing s1", n.Action, n.Payload)
	}
}

func TestWSOriginAndToken(t *testing.T) {
	e := newEnv(t, withToken)
	addr := e.listen()
	bearer := http.Header{"Authorization": {"Bearer " + token}}

	for name, header := range map[string]http.Header{
		"no token":    nil,
		"wrong token": {"Authorization": {"Bearer nope"}},
	} {
		if _, resp, err := dial(t, addr, header); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: err %v, resp %v", name, err, resp)
		}
		e.clock.Advance(maxDelay) // past the throttle's wait
	}
	cross := http.Header{"Authorization": {"Bearer " + token}, "Origin": {"http://evil.example"}}
	if _, resp, err := dial(t, addr, cross); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross origin: err %v, resp %v", err, resp)
	}
	for name, header := range map[string]http.Header{
		"bearer, no origin":   bearer,
		"cookie, same origin": {"Cookie": {e.signIn()}, "Origin": {"http://" + addr}},
	} {
		w, _, err := dial(t, addr, header)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if env := w.request(shared.ActionSubscribe, shared.SessionRef{SessionID: "nope"}); errorOf(t, env).Code != shared.CodeNotFound {
			t.Errorf("%s: %+v", name, env)
		}
	}
	if resp, _ := e.do("GET", "/ws", "", "Authorization", "Bearer "+token); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("plain GET /ws: %d", resp.StatusCode)
	}
}

func TestWSHubCloseSaysGoingAway(t *testing.T) {
	e := newEnv(t)
	w := mustDial(t, e.listen())
	w.request(shared.ActionSubscribe, shared.SessionRef{SessionID: e.session().ID})
	e.hub.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Limit(t))
	defer cancel()
	_, _, err := w.c.Read(ctx)
	if status := websocket.CloseStatus(err); status != websocket.StatusGoingAway {
		t.Errorf("read after hub close: %v (status %v)", err, status)
	}
}

func TestWSPanicEndsOnlyThatConnection(t *testing.T) {
	e := newEnv(t)
	s := e.session()
	addr := e.listen()
	w := mustDial(t, addr)
	e.rt.panics.Store(true)
	w.send(`{"id":"1","type":"request","action":"message.add","payload":{"session_id":"` + s.ID + `","content":"ls"}}`)
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Limit(t))
	defer cancel()
	if _, _, err := w.c.Read(ctx); err == nil {
		t.Error("connection still open after a panic")
	}
	e.rt.panics.Store(false)
	if env := mustDial(t, addr).request(shared.ActionSubscribe, shared.SessionRef{SessionID: s.ID}); env.Type != shared.EnvelopeResponse {
		t.Errorf("after a panic: %+v", env)
	}
	if !strings.Contains(e.logs.String(), "ws: panic") {
		t.Errorf("panic not logged:\n%s", e.logs)
	}
}

// TestWSSlowClientIsDropped stops reading until the server's writes block and the
// client's queue overflows; the client then gets what was sent and a policy close.
func TestWSSlowClientIsDropped(t *testing.T) {
	// A short queue: the drop comes a few frames after the server's writes block, long
	// before their write deadline could end the connection another way.
	e := newEnv(t, func(c *Config) { c.Hub = hub.New(hub.Config{QueueSize: 8, Logger: c.Logger}) })
	s := e.session()
	addr := e.listen()
	slow, fast := mustDial(t, addr), mustDial(t, addr)
	slow.request(shared.ActionSubscribe, shared.SessionRef{SessionID: s.ID})
	fast.request(shared.ActionSubscribe, shared.SessionRef{SessionID: s.ID})

	big := e.text(s.ID, strings.Repeat("x", 64<<10))
	const bound = 100_000 // frames; far beyond any socket buffer
	sent := 0
	for ; e.hub.Subscribers(s.ID) == 2; sent++ {
		if sent == bound {
			t.Fatal("slow client never dropped")
		}
		e.hub.MessageAdded(big)
		fast.next() // the fast client keeps up
	}
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Limit(t))
	defer cancel()
	received := 0
	for {
		_, _, err := slow.c.Read(ctx)
		if err != nil {
			if websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
				t.Fatalf("after %d frames: %v, want a policy-violation close", received, err)
			}
			break
		}
		received++
	}
	t.Logf("sent %d frames of 64 KiB, the slow client received %d before the close", sent, received)
	if received >= sent {
		t.Errorf("slow client received %d of %d frames: nothing was dropped", received, sent)
	}
	if env := fast.request(shared.ActionSubscribe, shared.SessionRef{SessionID: s.ID}); env.Type != shared.EnvelopeResponse {
		t.Errorf("fast client after the drop: %+v", env)
	}
}

func TestWSBinaryAndOversizedFrames(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.BodyLimit = 4096 })
	w := mustDial(t, e.listen())
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Limit(t))
	defer cancel()
	if err := w.c.Write(ctx, websocket.MessageBinary, []byte(`{"action":"message.list"}`)); err != nil {
		t.Fatal(err)
	}
	if p := errorOf(t, w.read()); p.Code != shared.CodeInvalid || p.Message != "only text frames are accepted" {
		t.Errorf("binary frame: %+v", p)
	}
	w.send(`{"action":"message.add","payload":{"content":"` + strings.Repeat("x", 5000) + `"}}`)
	_, _, err := w.c.Read(ctx)
	if status := websocket.CloseStatus(err); status != websocket.StatusMessageTooBig {
		t.Errorf("oversized frame: %v (status %v)", err, status)
	}
}

// A client that offers permessage-deflate, as browsers do, gets it: a list frame travels
// compressed (its bytes on the wire a fraction of the frame's) and decodes to the REST
// body. A compressed frame is held to the body limit by what it decompresses to, not by
// its few bytes on the wire: past it the connection closes with 1009.
func TestWSCompressed(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.BodyLimit = 4096 })
	s := e.session()
	for i := range 20 {
		e.text(s.ID, fmt.Sprintf("prompt %d: run the tests of the store again", i))
		e.shell(s.ID, "go test ./server/store/...", shared.StatusCompleted, &shared.ShellOutput{Stdout: "ok", ExitCode: intp(0)})
	}
	var read atomic.Int64 // bytes the client read from the network
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		return countedConn{c, &read}, err
	}}
	w, resp, err := dialWith(t, e.listen(), &websocket.DialOptions{HTTPClient: &http.Client{Transport: tr},
		CompressionMode: websocket.CompressionNoContextTakeover})
	if err != nil {
		t.Fatal(err)
	}
	if ext := resp.Header.Get("Sec-WebSocket-Extensions"); !strings.HasPrefix(ext, "permessage-deflate") {
		t.Fatalf("permessage-deflate not negotiated: %q", ext)
	}
	before := read.Load()
	env := w.request(shared.ActionMessageList, map[string]any{"session_id": s.ID, "limit": 40})
	onWire := read.Load() - before
	rest := e.expect(http.StatusOK, "GET", "/api/v1/task-sessions/"+s.ID+"/messages?limit=40", "", nil)
	if env.Type != shared.EnvelopeResponse || string(env.Payload) != rest {
		t.Fatalf("message.list %s %s\nREST %s", env.Type, env.Payload, rest)
	}
	if onWire <= 0 || onWire*4 > int64(len(rest)) {
		t.Errorf("a %d B list took %d B on the wire, want under a quarter", len(rest), onWire)
	}

	w.send(`{"action":"message.add","payload":{"content":"` + strings.Repeat("x", 64<<10) + `"}}`)
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Limit(t))
	defer cancel()
	_, _, err = w.c.Read(ctx)
	if status := websocket.CloseStatus(err); status != websocket.StatusMessageTooBig {
		t.Errorf("a frame of 64 KiB compressed to a few hundred bytes: %v (status %v)", err, status)
	}
}

// countedConn counts the bytes read from a connection.
type countedConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// The task list's clients get each change of a task as the list shows it: created, a
// session's state, needs_attention, deleted.
func TestWSTaskList(t *testing.T) {
	e := newEnv(t)
	w := mustDial(t, e.listen())
	if env := w.request(shared.ActionTasksSubscribe, struct{}{}); env.Type != shared.EnvelopeResponse {
		t.Fatalf("tasks.subscribe answered %+v", env)
	}
	nextTask := func(ok func(shared.Task) bool) {
		t.Helper()
		for {
			env := w.next()
			var task shared.Task
			if env.Action == shared.ActionTaskUpdated && env.Decode(&task) == nil && ok(task) {
				return
			}
		}
	}
	var created shared.Task
	e.expect(http.StatusCreated, "POST", "/api/v1/tasks", `{"title":"from the CLI"}`, &created)
	nextTask(func(task shared.Task) bool { return task.ID == created.ID && task.Title == "from the CLI" })

	sess, err := e.rt.StartSession(context.Background(), created.ID, "shell", "/tmp")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.rt.StopAgent(context.Background(), sess.ID); err != nil { // a change of the session's state, published
		t.Fatal(err)
	}
	nextTask(func(task shared.Task) bool {
		return task.ID == created.ID && len(task.Sessions) == 1 && task.Sessions[0].Stopped
	})

	ask, err := e.store.CreateMessage(context.Background(), store.NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent,
		Type: shared.TypePermissionRequest, Content: "rm -rf build", Metadata: &shared.Metadata{ToolCallID: "c1", Title: "rm -rf build",
			Status: shared.StatusPending, Options: []shared.PermissionOption{{OptionID: "allow", Name: "Allow", Kind: "allow_once"}}}})
	if err != nil {
		t.Fatal(err)
	}
	e.hub.MessageAdded(ask)
	nextTask(func(task shared.Task) bool { return task.ID == created.ID && task.NeedsAttention })

	e.expect(http.StatusNoContent, "DELETE", "/api/v1/tasks/"+created.ID, "", nil)
	for {
		var ref shared.TaskRef
		if env := w.next(); env.Action == shared.ActionTaskDeleted && env.Decode(&ref) == nil && ref.TaskID == created.ID {
			break
		}
	}
}
