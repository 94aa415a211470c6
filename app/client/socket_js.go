package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall/js"

	"conch/shared"
)

// socket wraps the browser's WebSocket. coder/websocket's browser build imports net/http,
// whose package initialisers alone (crypto/tls and the curves under it) add about 600 KB
// of brotli to app.wasm; the browser API needs none of that.
type socket struct {
	ws     js.Value
	frames chan []byte   // received, not yet read
	closed chan struct{} // closed when the browser reports the close; err says why

	mu    sync.Mutex
	err   error
	funcs []js.Func
}

// dial opens the socket. Browsers tell a page nothing about a refused upgrade, so every
// failure wraps ErrUnreachable (the sign-in cookie goes with the dial; no header can).
func (c *Client) dial(ctx context.Context, url string) (*socket, error) {
	s := &socket{ws: js.Global().Get("WebSocket").New(url),
		frames: make(chan []byte, notificationBuffer), closed: make(chan struct{})}
	opened := make(chan struct{})
	s.on("open", func(js.Value) { close(opened) })
	s.on("message", func(e js.Value) {
		data := e.Get("data")
		if data.Type() != js.TypeString {
			s.fail(errors.New("a binary frame"))
			return
		}
		select {
		case s.frames <- []byte(data.String()):
		default:
			s.fail(errors.New("frames not read fast enough"))
		}
	})
	// The browser fires close after error, and after every close: the last event.
	s.on("close", func(e js.Value) {
		code := e.Get("code").Int()
		if code == shared.CloseSignedOut {
			signedOut()
		}
		s.setErr(fmt.Errorf("closed, code %d", code))
		close(s.closed)
		for _, f := range s.funcs {
			f.Release()
		}
	})
	select {
	case <-opened:
		return s, nil
	case <-s.closed:
		return nil, fmt.Errorf("%w: %v", ErrUnreachable, s.err)
	case <-ctx.Done():
		s.closeNow()
		return nil, ctx.Err()
	}
}

func (s *socket) on(event string, handle func(js.Value)) {
	f := js.FuncOf(func(_ js.Value, args []js.Value) any {
		handle(args[0])
		return nil
	})
	s.funcs = append(s.funcs, f)
	s.ws.Call("addEventListener", event, f)
}

// setErr keeps the first reason the socket ended.
func (s *socket) setErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
}

func (s *socket) fail(err error) {
	s.setErr(err)
	s.closeNow()
}

// read returns the frames received before the close, then why it closed.
func (s *socket) read() ([]byte, error) {
	select {
	case f := <-s.frames:
		return f, nil
	case <-s.closed:
		select {
		case f := <-s.frames:
			return f, nil
		default:
			return nil, s.err
		}
	}
}

// write queues frame; the browser sends it without blocking the caller.
func (s *socket) write(_ context.Context, frame []byte) error {
	if s.ws.Get("readyState").Int() != 1 { // OPEN
		return errors.New("the socket is closing or closed")
	}
	s.ws.Call("send", string(frame))
	return nil
}

// close ends the connection with a normal closure; closeNow with none.
func (s *socket) close() error {
	s.ws.Call("close", 1000)
	return nil
}

func (s *socket) closeNow() { s.ws.Call("close") }
