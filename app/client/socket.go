//go:build !js

package client

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/coder/websocket"
)

// socket is the WebSocket under a Conn. On the host it is coder/websocket's; in the
// browser socket_js.go wraps the browser's own, which keeps net/http out of app.wasm.
type socket struct{ c *websocket.Conn }

// dial opens the socket. A refused upgrade (a wrong token, say) gives the server's error;
// any other failure wraps ErrUnreachable.
func (c *Client) dial(ctx context.Context, url string) (*socket, error) {
	var opts *websocket.DialOptions
	if c.token != "" {
		opts = &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + c.token}}}
	}
	ws, resp, err := websocket.Dial(ctx, url, opts)
	if err != nil {
		if resp != nil && resp.Body != nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			if e := answerError(resp.StatusCode, body); e != nil {
				return nil, e
			}
		}
		return nil, fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	ws.SetReadLimit(readLimit)
	return &socket{ws}, nil
}

func (s *socket) read() ([]byte, error) {
	_, data, err := s.c.Read(context.Background())
	return data, err
}

func (s *socket) write(ctx context.Context, frame []byte) error {
	return s.c.Write(ctx, websocket.MessageText, frame)
}

// close ends the connection with a normal closure; closeNow drops it.
func (s *socket) close() error { return s.c.Close(websocket.StatusNormalClosure, "") }
func (s *socket) closeNow()    { s.c.CloseNow() }
