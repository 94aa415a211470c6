package api

import (
	"context"
	"encoding/json"
	"runtime/debug"
	"strings"
	"time"

	"github.com/gofiber/contrib/websocket"
	"github.com/gofiber/fiber/v2"

	"conch/server/hub"
	"conch/server/task"
	"conch/shared"
)

// The terminal's socket, /ws/terminal?session_id=ID (docs/API.md, "The terminal"), is a
// socket of its own rather than actions of /ws: a terminal is a stream of bytes each way,
// a flood included, which must neither pass through the hub's JSON envelopes nor push a
// page's socket off for being slow. Binary frames carry the bytes (keys in, output out),
// text frames shared.TerminalRequest in and shared.TerminalEvent out.

const (
	terminalKey = "conch.terminal" // Fiber's local: what admitTerminal decided
	// terminalInputLimit bounds one frame from the client: keys, or a paste.
	terminalInputLimit = 256 << 10
)

// terminalPass is who opens a terminal socket and what they may do there.
type terminalPass struct {
	sessionID string
	login     string
	mayEdit   bool
}

// admitTerminal checks, before the upgrade, that the account may watch the session's
// terminal (a viewer's role, a guest of its task), and whether it may type in it (an
// editor of the task, the rule of every write).
func (s *server) admitTerminal(c *fiber.Ctx) error {
	if s.console == nil {
		return s.fail(c, errNoRoute)
	}
	ctx, acc := c.UserContext(), accountFrom(c.UserContext())
	id := strings.Clone(c.Query("session_id"))
	if id == "" {
		return s.fail(c, shared.Errorf(shared.CodeInvalid, "session_id is required"))
	}
	event := shared.AuditEvent{Login: acc.Login, Action: "GET /ws/terminal", SessionID: id}
	if err := s.tasks.InScope(ctx, acc, event); err != nil {
		return s.fail(c, err)
	}
	if err := task.Permits(acc, shared.RoleViewer); err != nil {
		return s.fail(c, err)
	}
	if _, err := s.store.GetSession(ctx, id); err != nil {
		return s.fail(c, err)
	}
	mayEdit := task.Permits(acc, shared.RoleMember) == nil && s.tasks.CheckEdit(ctx, acc, &event) == nil
	c.Locals(terminalKey, terminalPass{sessionID: id, login: acc.Login, mayEdit: mayEdit})
	return c.Next()
}

// handleTerminal serves one watcher of a session's terminal until either side ends it.
func (s *server) handleTerminal(conn *websocket.Conn) {
	tp, _ := conn.Locals(terminalKey).(terminalPass)
	p, _ := conn.Locals(passKey).(pass)
	// A hub client without subscriptions: it is how a revoked sign-in, token or link
	// reaches this socket, as it reaches /ws.
	client := s.hub.Connect(p.who)
	defer client.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.letInAgain(ctx, conn, client)
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("terminal: panic", "panic", r, "stack", string(debug.Stack()))
		}
	}()
	view, err := s.console(tp.sessionID, tp.login, tp.mayEdit)
	if err != nil {
		msg, _ := json.Marshal(shared.TerminalEvent{Type: shared.TerminalEnd, Reason: s.report(err, "action", "terminal").Message})
		_ = conn.SetWriteDeadline(time.Now().Add(writeWait))
		_ = conn.WriteMessage(websocket.TextMessage, msg)
		_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(writeWait))
		return
	}
	defer view.Close()
	refusals := make(chan string, 4)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		defer closeNetwork(conn)
		s.terminalWrites(conn, view, client, p.until, refusals)
	}()
	s.terminalReads(conn, view, refusals)
	client.Close()
	<-writerDone
}

// terminalReads takes the client's keys and requests until the socket ends.
func (s *server) terminalReads(conn *websocket.Conn, view task.ConsoleView, refusals chan<- string) {
	conn.SetReadLimit(terminalInputLimit)
	extend := func(string) error { return conn.SetReadDeadline(time.Now().Add(pongWait)) }
	_ = extend("")
	conn.SetPongHandler(extend)
	for {
		kind, data, err := conn.ReadMessage()
		if err != nil {
			return
		}
		_ = extend("")
		switch kind {
		case websocket.BinaryMessage:
			err = view.Input(data)
		case websocket.TextMessage:
			var req shared.TerminalRequest
			if err = decodeBody(data, &req); err != nil {
				break
			}
			switch req.Type {
			case shared.TerminalResize:
				err = view.Resize(req.Cols, req.Rows)
			case shared.TerminalTake:
				err = view.TakeOver()
			default:
				err = shared.Errorf(shared.CodeInvalid, "type must be %q or %q", shared.TerminalResize, shared.TerminalTake)
			}
		}
		if err != nil {
			select {
			case refusals <- s.report(err, "action", "terminal").Message:
			default: // the client is told of the first few
			}
		}
	}
}

// terminalWrites sends the view's output and events, the refusals of the client's
// requests and pings, until the view or the sign-in ends.
func (s *server) terminalWrites(conn *websocket.Conn, view task.ConsoleView, client *hub.Client, until time.Time, refusals <-chan string) {
	ping, expiry, stop := s.socketTimers(until)
	defer stop()
	write := func(kind int, data []byte) bool {
		_ = conn.SetWriteDeadline(time.Now().Add(writeWait))
		return conn.WriteMessage(kind, data) == nil
	}
	event := func(e shared.TerminalEvent) bool {
		data, _ := json.Marshal(e) // strings and ints always encode
		return write(websocket.TextMessage, data)
	}
	for {
		select {
		case <-view.Ready():
			for _, e := range view.Take() {
				ok := true
				if e.Type == shared.TerminalOutput {
					ok = write(websocket.BinaryMessage, e.Output)
				} else {
					ok = event(e)
				}
				if !ok {
					return
				}
				if e.Type == shared.TerminalEnd {
					_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(writeWait))
					return
				}
			}
		case reason := <-refusals:
			if !event(shared.TerminalEvent{Type: shared.TerminalError, Reason: reason}) {
				return
			}
		case <-ping:
			if conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait)) != nil {
				return
			}
		case <-expiry:
			client.End(errSignInExpired)
		case <-client.Done():
			code, reason := closeFor(client.Err())
			_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(writeWait))
			return
		}
	}
}
