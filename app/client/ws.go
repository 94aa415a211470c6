package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"conch/shared"
)

// notificationBuffer bounds the notifications not yet taken by the reader. A reader that
// falls this far behind loses the connection and re-lists, like a slow client on the server.
const notificationBuffer = 1024

// readLimit bounds one frame on the host. A message list holds at most 500 summaries; no
// body ever travels here. (Browsers set their own limit.)
const readLimit = 16 << 20

// Conn is one WebSocket connection: requests with responses matched by id, and the
// notifications of the subscribed sessions.
type Conn struct {
	ws            *socket
	notifications chan shared.Envelope
	done          chan struct{}

	mu      sync.Mutex
	nextID  int
	pending map[string]chan shared.Envelope
	err     error // why the connection ended
}

// Dial opens the WebSocket. The connection lives until Close or a failure, not until ctx ends.
func (c *Client) Dial(ctx context.Context) (*Conn, error) {
	u := strings.Replace(c.wsBase(), "http", "ws", 1) + "/ws"
	ws, err := c.dial(ctx, u)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("dial %s: %w", u, err)
	}
	conn := &Conn{
		ws:            ws,
		notifications: make(chan shared.Envelope, notificationBuffer),
		done:          make(chan struct{}),
		pending:       map[string]chan shared.Envelope{},
	}
	go conn.read()
	return conn, nil
}

// Notifications delivers session.message.added / updated and session.updated envelopes;
// it is closed when the connection ends (then Err says why).
func (c *Conn) Notifications() <-chan shared.Envelope { return c.notifications }

// Err returns why the connection ended, or nil while it is open.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close ends the connection.
func (c *Conn) Close() error {
	return c.ws.close()
}

// Subscribe asks for the session's notifications.
func (c *Conn) Subscribe(ctx context.Context, sessionID string) error {
	return c.request(ctx, shared.ActionSubscribe, shared.SessionRef{SessionID: sessionID}, nil)
}

// SubscribeTasks asks for the task list's changes: task.updated and task.deleted.
func (c *Conn) SubscribeTasks(ctx context.Context) error {
	return c.request(ctx, shared.ActionTasksSubscribe, struct{}{}, nil)
}

// Unsubscribe stops the session's notifications.
func (c *Conn) Unsubscribe(ctx context.Context, sessionID string) error {
	return c.request(ctx, shared.ActionUnsubscribe, shared.SessionRef{SessionID: sessionID}, nil)
}

// List returns a page of messages, as the REST list does.
func (c *Conn) List(ctx context.Context, q shared.ListRequest) (shared.MessagePage, error) {
	var p shared.MessagePage
	return p, c.request(ctx, shared.ActionMessageList, q, &p)
}

// Add posts a prompt, as SendMessage does.
func (c *Conn) Add(ctx context.Context, r shared.AddRequest) (shared.Message, error) {
	var m shared.Message
	return m, c.request(ctx, shared.ActionMessageAdd, r, &m)
}

func (c *Conn) request(ctx context.Context, action string, in, out any) error {
	payload, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("%s: %w", action, err)
	}
	reply := make(chan shared.Envelope, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return c.err
	}
	c.nextID++
	id := strconv.Itoa(c.nextID)
	c.pending[id] = reply
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()

	frame, err := json.Marshal(shared.Envelope{ID: id, Type: shared.EnvelopeRequest, Action: action, Payload: payload, Timestamp: time.Now().UTC()})
	if err != nil {
		return fmt.Errorf("%s: %w", action, err)
	}
	if err := c.ws.write(ctx, frame); err != nil {
		return fmt.Errorf("%s: %w: %v", action, ErrUnreachable, err)
	}
	select {
	case env := <-reply:
		if env.Type == shared.EnvelopeError {
			var e shared.Error
			_ = env.Decode(&e)
			return fmt.Errorf("%s: %w", action, &e)
		}
		if out == nil {
			return nil
		}
		return env.Decode(out)
	case <-c.done:
		return c.Err()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// read routes responses to their requests and queues notifications until the connection ends.
func (c *Conn) read() {
	err := c.readLoop()
	c.mu.Lock()
	c.err = fmt.Errorf("websocket: %w: %v", ErrUnreachable, err)
	c.mu.Unlock()
	close(c.done)
	close(c.notifications)
	c.ws.closeNow()
}

func (c *Conn) readLoop() error {
	for {
		data, err := c.ws.read()
		if err != nil {
			return err
		}
		var env shared.Envelope
		if err := json.Unmarshal(data, &env); err != nil {
			return fmt.Errorf("bad frame: %w", err)
		}
		if env.Type == shared.EnvelopeNotification {
			select {
			case c.notifications <- env:
			default:
				return errors.New("notifications not read fast enough")
			}
			continue
		}
		c.mu.Lock()
		reply := c.pending[env.ID]
		c.mu.Unlock()
		if reply != nil {
			select {
			case reply <- env:
			default: // a second answer to one id: the first one counts
			}
		}
	}
}
