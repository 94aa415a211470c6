package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"time"

	"conch/server/hub"
	"conch/shared"

	"github.com/gofiber/contrib/websocket"
)

const (
	writeWait  = 10 * time.Second
	pongWait   = 60 * time.Second
	pingPeriod = pongWait * 9 / 10
	// maxApart bounds the requests of one connection that wait for an agent at once.
	maxApart = 4
)

// Frames are compressed (permessage-deflate, RFC 7692) when the client offers it, as
// browsers do: a page of messages is JSON that repeats its keys, and shrinks about tenfold.
// The library compresses without context takeover, so a connection keeps no compression
// window between frames: it borrows one pooled compressor while its writer writes a frame
// and one pooled decompressor while a frame is read, and what a frame decompresses to is
// bounded by the body limit like an uncompressed one (readFrame).

// The /ws protocol (docs/API.md, "The WebSocket"): an error payload's code is one of shared's codes,
// the same a REST answer to the same failure carries (invalid, not_found, conflict,
// unknown_action, internal, ...; invalid was called bad_request before); requests may
// omit "type". The server closes with 1008 when the client fell too far behind
// (reconnect and re-list), 1001 when it shuts down, 1009 for a frame over the body
// limit and 4401 when its sign-in, token, link or account ends (shared.CloseSignedOut).

// handleWS serves one /ws connection. The read loop runs here; one writer goroutine owns
// every write (responses and notifications alike, through the hub client's queue) and the
// pings. contrib/websocket pools the Conn once this returns, so it waits for the writer.
// registering runs as a WebSocket's client is about to be registered in the hub: a test
// revokes there, between the upgrade's check and the registration.
var registering = func() {}

func (s *server) handleWS(conn *websocket.Conn) {
	p, _ := conn.Locals(passKey).(pass)
	registering()
	client := s.hub.Connect(p.who)
	acc, _ := conn.Locals(accountKey).(shared.Account)
	ctx, cancel := context.WithCancel(withAccount(context.Background(), acc))
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		s.writeLoop(conn, client, p.until)
	}()
	s.letInAgain(ctx, conn, client)
	defer func() {
		// A panic is recovered here rather than by contrib/websocket, whose handler would
		// write to the connection the writer goroutine owns.
		if r := recover(); r != nil {
			s.log.Error("ws: panic", "panic", r, "stack", string(debug.Stack()))
		}
		cancel()
		client.Close()
		<-writerDone
	}()
	s.readLoop(ctx, conn, client, p.until)
}

// letInAgain ends a socket's client when what let the socket in no longer does: it was
// revoked between the upgrade's check and the client's registration in the hub.
func (s *server) letInAgain(ctx context.Context, conn *websocket.Conn, client *hub.Client) {
	if cr, ok := conn.Locals(credentialsKey).(credentials); ok {
		if err := s.stillLetIn(ctx, cr); err != nil {
			client.End(err)
		}
	}
}

var errSignInExpired = errors.New("signed out: the sign-in expired")

// ended reports whether the connection may no longer send or be sent anything: it was
// closed (a revocation among others), or its sign-in expired, which ends it here.
func (s *server) ended(client *hub.Client, until time.Time) bool {
	if !until.IsZero() && !s.now().Before(until) {
		client.End(errSignInExpired)
	}
	return client.Err() != nil
}

// readLoop answers requests in order, except those that wait for an agent (a mode
// switch, bounded by the runtime's request timeout): they are answered apart, so the
// connection goes on answering everything else meanwhile.
func (s *server) readLoop(ctx context.Context, conn *websocket.Conn, client *hub.Client, until time.Time) {
	apart := make(chan struct{}, maxApart)
	conn.SetReadLimit(int64(s.limit))
	extend := func(string) error { return conn.SetReadDeadline(time.Now().Add(pongWait)) }
	_ = extend("")
	conn.SetPongHandler(extend)
	for {
		kind, data, err := s.readFrame(conn)
		if err != nil {
			if websocket.IsUnexpectedCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway, websocket.CloseNoStatusReceived) {
				s.log.Debug("ws: read ended", "err", err)
			}
			return
		}
		_ = extend("")
		if s.ended(client, until) {
			return
		}
		var reply []byte
		req, err := s.decodeRequest(kind, data)
		switch {
		case err != nil:
			reply = s.wsError(req, err)
		case req.Action != shared.ActionSetMode && req.Action != shared.ActionSetConfig && req.Action != shared.ActionStop && req.Action != shared.ActionResume:
			reply = s.dispatch(ctx, client, req)
		default:
			select {
			case apart <- struct{}{}:
				go func() {
					defer func() { <-apart }()
					client.Send(s.dispatchApart(ctx, client, req))
				}()
				continue
			default:
				reply = s.wsError(req, shared.Errorf(shared.CodeTooManyRequests, "%d requests of this connection already wait for agents", maxApart))
			}
		}
		if !client.Send(reply) {
			return
		}
	}
}

// readFrame reads one whole frame. The read limit counts the bytes on the wire; a
// compressed frame could decompress to a thousand times as many, so what it decompresses
// to is bounded too, and a frame past the limit closes the connection with 1009 either way.
func (s *server) readFrame(conn *websocket.Conn) (int, []byte, error) {
	kind, r, err := conn.NextReader()
	if err != nil {
		return kind, nil, err
	}
	data, err := io.ReadAll(io.LimitReader(r, int64(s.limit)+1))
	if err == nil && len(data) > s.limit {
		_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseMessageTooBig, ""), time.Now().Add(writeWait))
		err = websocket.ErrReadLimit
	}
	return kind, data, err
}

// socketTimers are a socket writer's ping ticker and when its sign-in expires (until;
// never when zero), which ends the connection then, even an idle one. stop stops both.
func (s *server) socketTimers(until time.Time) (ping <-chan time.Time, expiry <-chan time.Time, stop func()) {
	ticker := time.NewTicker(pingPeriod)
	if until.IsZero() {
		return ticker.C, nil, ticker.Stop
	}
	t := time.NewTimer(until.Sub(s.now()))
	return ticker.C, t.C, func() { ticker.Stop(); t.Stop() }
}

func (s *server) writeLoop(conn *websocket.Conn, client *hub.Client, until time.Time) {
	ping, expiry, stop := s.socketTimers(until)
	defer stop()
	// Closing the network connection also ends the read loop, whichever side quit first.
	defer closeNetwork(conn)
	for {
		select {
		case <-expiry:
			s.ended(client, until)
		case <-client.Ready():
			if s.ended(client, until) {
				continue // Done says why
			}
			for _, frame := range client.Take() {
				_ = conn.SetWriteDeadline(time.Now().Add(writeWait))
				if err := conn.WriteMessage(websocket.TextMessage, frame); err != nil {
					client.Close()
					return
				}
			}
		case <-ping:
			if err := conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait)); err != nil {
				client.Close()
				return
			}
		case <-client.Done():
			code, reason := closeFor(client.Err())
			_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(writeWait))
			return
		}
	}
}

// closeFor is the close code and reason of a socket whose hub client ended for cause.
func closeFor(cause error) (int, string) {
	switch {
	case errors.Is(cause, hub.ErrSlow):
		// The client missed events; it must re-list after reconnecting (docs/API.md, "The WebSocket").
		return websocket.ClosePolicyViolation, "too slow: reconnect and re-list"
	case errors.Is(cause, hub.ErrShutdown):
		return websocket.CloseGoingAway, cause.Error()
	case errors.Is(cause, hub.ErrRevoked), errors.Is(cause, errSignInExpired):
		return shared.CloseSignedOut, cause.Error()
	}
	return websocket.CloseNormalClosure, ""
}

// closeNetwork closes the TCP connection itself. fasthttp's hijacked connection ignores
// Close until the handler returns, which would leave the read loop blocked until its
// deadline.
func closeNetwork(conn *websocket.Conn) {
	nc := conn.NetConn()
	if h, ok := nc.(interface{ UnsafeConn() net.Conn }); ok {
		nc = h.UnsafeConn()
	}
	_ = nc.Close()
}

// decodeRequest reads one frame as a request envelope.
func (s *server) decodeRequest(kind int, data []byte) (shared.Envelope, error) {
	var req shared.Envelope
	if kind != websocket.TextMessage {
		return req, shared.Errorf(shared.CodeInvalid, "only text frames are accepted")
	}
	if err := decodeBody(data, &req); err != nil {
		return req, shared.Errorf(shared.CodeInvalid, "bad envelope: %s", shared.ErrorMessage(err))
	}
	if req.Type != "" && req.Type != shared.EnvelopeRequest {
		return req, shared.Errorf(shared.CodeInvalid, `type must be "request"`)
	}
	return req, nil
}

// dispatchApart is dispatch off the read loop: a panic there is answered and logged
// here, as handleWS does for the loop's own.
func (s *server) dispatchApart(ctx context.Context, client *hub.Client, req shared.Envelope) (reply []byte) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("ws: panic", "panic", r, "stack", string(debug.Stack()))
			reply = s.wsError(req, fmt.Errorf("panic: %v", r))
		}
	}()
	return s.dispatch(ctx, client, req)
}

func unknownAction(action string) error {
	return shared.Errorf(shared.CodeUnknownAction, "unknown action %q", action)
}

// dispatch answers one request with a response or an error envelope.
func (s *server) dispatch(ctx context.Context, client *hub.Client, req shared.Envelope) []byte {
	write, err := s.wsAllowed(ctx, req)
	if err != nil {
		return s.wsError(req, err)
	}
	var result any
	switch req.Action {
	case shared.ActionTasksSubscribe:
		client.SubscribeTasks()
		result = struct{}{}
	case shared.ActionSubscribe:
		result, err = s.wsSubscribe(ctx, client, req.Payload)
	case shared.ActionUnsubscribe:
		var ref shared.SessionRef
		if err = decodePayload(req.Payload, &ref, &ref.SessionID); err == nil {
			client.Unsubscribe(ref.SessionID)
			result = ref
		}
	case shared.ActionMessageList:
		// The limit is read as REST reads it, so a bad one gets the same answer both ways.
		var p struct {
			shared.ListRequest
			Limit json.RawMessage `json:"limit"`
		}
		if err = decodePayload(req.Payload, &p, &p.SessionID); err == nil {
			if raw := string(p.Limit); raw != "" && raw != "null" {
				p.ListRequest.Limit, err = shared.ParseLimit(raw)
			}
			if err == nil {
				result, err = s.store.ListMessages(ctx, p.ListRequest)
			}
		}
	case shared.ActionMessageAdd:
		var p shared.AddRequest
		if err = decodePayload(req.Payload, &p, &p.SessionID); err == nil {
			result, err = s.tasks.Prompt(ctx, accountFrom(ctx), p.SessionID, p)
		}
	case shared.ActionPermissionAnswer:
		var p shared.PermissionAnswer
		if err = decodePayload(req.Payload, &p, &p.SessionID); err == nil {
			result, err = s.tasks.AnswerPermission(ctx, accountFrom(ctx), p)
		}
	case shared.ActionElicitationAnswer:
		var p shared.ElicitationAnswer
		if err = decodePayload(req.Payload, &p, &p.SessionID); err == nil {
			result, err = s.tasks.AnswerElicitation(ctx, accountFrom(ctx), p)
		}
	case shared.ActionSetMode:
		var p shared.ModeRequest
		if err = decodePayload(req.Payload, &p, &p.SessionID); err == nil {
			result, err = s.tasks.SetMode(ctx, p)
		}
	case shared.ActionSetConfig:
		var p shared.ConfigRequest
		if err = decodePayload(req.Payload, &p, &p.SessionID); err == nil {
			result, err = s.tasks.SetConfig(ctx, p)
		}
	case shared.ActionStop:
		var ref shared.SessionRef
		if err = decodePayload(req.Payload, &ref, &ref.SessionID); err == nil {
			result, err = s.rt.StopAgent(ctx, ref.SessionID)
		}
	case shared.ActionResume:
		var ref shared.SessionRef
		if err = decodePayload(req.Payload, &ref, &ref.SessionID); err == nil {
			result, err = s.rt.Resume(ctx, ref.SessionID)
		}
	default:
		err = unknownAction(req.Action)
	}
	if err != nil {
		return s.wsError(req, err)
	}
	if write != nil {
		s.tasks.Audit(ctx, *write)
	}
	frame, err := s.hub.Encode(shared.EnvelopeResponse, req.Action, req.ID, result)
	if err != nil {
		return s.wsError(req, fmt.Errorf("encode response: %w", err))
	}
	return frame
}

func (s *server) wsSubscribe(ctx context.Context, client *hub.Client, payload json.RawMessage) (any, error) {
	var ref shared.SessionRef
	if err := decodePayload(payload, &ref, &ref.SessionID); err != nil {
		return nil, err
	}
	if _, err := s.store.GetSession(ctx, ref.SessionID); err != nil {
		return nil, err
	}
	client.Subscribe(ref.SessionID)
	return ref, nil
}

// decodePayload is decodeBody for a request's payload. Every payload names a session:
// sessionID points into v at that field.
func decodePayload(raw json.RawMessage, v any, sessionID *string) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return shared.Errorf(shared.CodeInvalid, "payload is required")
	}
	if err := decodeBody(raw, v); err != nil {
		return err
	}
	if *sessionID == "" {
		return shared.Errorf(shared.CodeInvalid, "session_id is required")
	}
	return nil
}

// wsError answers a failed request with the code and message a REST answer would carry.
func (s *server) wsError(req shared.Envelope, err error) []byte {
	frame, _ := s.hub.Encode(shared.EnvelopeError, req.Action, req.ID, s.report(err, "action", req.Action)) // two strings always encode
	return frame
}
