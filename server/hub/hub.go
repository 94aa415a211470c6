// Package hub fans projected events out to the WebSocket clients subscribed to a session.
//
// Publishing never blocks: each client has a queue of encoded frames bounded in frames
// and in bytes (a frame may be a page of 4 MiB). A pending
// session.message.updated frame is replaced by a newer one for the same message (latest
// wins), and a client whose queue is still full is disconnected; it re-lists on reconnect
// (docs/API.md, "The WebSocket").
package hub

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"conch/shared"
)

// DefaultQueueSize is the number of frames a client may have pending before it is dropped.
const DefaultQueueSize = 256

// DefaultQueueBytes is how many bytes of frames a client may have pending before it is
// dropped; a single frame larger than that still goes to a client with nothing pending.
const DefaultQueueBytes = 16 << 20

// ErrSlow is why a client was disconnected for falling too far behind.
var ErrSlow = errors.New("client too slow: outgoing queue full")

// ErrClosed is the cause of a client that was closed by its owner.
var ErrClosed = errors.New("client closed")

// ErrShutdown is the cause of every client once the hub is closed.
var ErrShutdown = errors.New("server shutting down")

// ErrRevoked is the cause of a client whose sign-in, token, link or account was revoked
// (Revoked), or whose guest task was deleted.
var ErrRevoked = errors.New("signed out: what let this connection in was revoked")

// Who is what a client's connection was let in by.
type Who struct {
	// Keys name its sign-in, access token, share link and account, each as the server
	// names them; Revoked of any one closes the client.
	Keys []string
	// Task is a share link's guest's one task: the task list's events of any other task
	// do not reach it, and the task's deletion closes it.
	Task string
}

// Config configures a Hub. Zero values choose the defaults.
type Config struct {
	QueueSize  int              // frames per client; DefaultQueueSize when 0
	QueueBytes int              // bytes per client; DefaultQueueBytes when 0
	Now        func() time.Time // envelope timestamps; time.Now when nil
	Logger     *slog.Logger     // slog.Default() when nil
	// Task reads a task as the task list shows it (store.TaskSummary), for the clients
	// watching the list; without it, task changes reach no one.
	Task func(ctx context.Context, id string) (shared.Task, error)
}

// tasksKey subscribes a client to the task list: no session has an empty id.
const tasksKey = ""

// Hub routes events to the clients subscribed to their session.
type Hub struct {
	queueSize  int
	queueBytes int
	now        func() time.Time
	log        *slog.Logger

	mu      sync.RWMutex
	subs    map[string]map[*Client]struct{} // session id (tasksKey: the task list) -> subscribers
	clients map[*Client]struct{}            // every open client
	closed  bool

	task    func(ctx context.Context, id string) (shared.Task, error)
	tasksMu sync.Mutex
	changed map[string]bool // tasks to read and send to the task list's clients
	reading bool            // a goroutine reads them
	gone    map[string]bool // tasks deleted while it reads: a task it read before is not sent
}

// New returns an empty hub.
func New(cfg Config) *Hub {
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = DefaultQueueSize
	}
	if cfg.QueueBytes <= 0 {
		cfg.QueueBytes = DefaultQueueBytes
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Hub{queueSize: cfg.QueueSize, queueBytes: cfg.QueueBytes, now: cfg.Now, log: cfg.Logger, subs: map[string]map[*Client]struct{}{},
		clients: map[*Client]struct{}{}, task: cfg.Task, changed: map[string]bool{}, gone: map[string]bool{}}
}

// SubscribeTasks adds the client to the task list's subscribers.
func (c *Client) SubscribeTasks() { c.Subscribe(tasksKey) }

// TaskChanged sends task.updated with the task as the list shows it to the task list's
// clients. The task is read apart, once for changes that come together (a turn's states),
// so publishing never waits for the store.
func (h *Hub) TaskChanged(id string) {
	if h.task == nil || h.Subscribers(tasksKey) == 0 {
		return
	}
	h.tasksMu.Lock()
	defer h.tasksMu.Unlock()
	h.changed[id] = true
	if !h.reading {
		h.reading = true
		go h.sendTasks()
	}
}

// sendTasks reads and sends the changed tasks until none is left.
func (h *Hub) sendTasks() {
	for {
		h.tasksMu.Lock()
		ids := slices.Collect(maps.Keys(h.changed))
		clear(h.changed)
		if len(ids) == 0 {
			h.reading = false
			clear(h.gone)
			h.tasksMu.Unlock()
			return
		}
		h.tasksMu.Unlock()
		for _, id := range ids {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			t, err := h.task(ctx, id)
			cancel()
			switch {
			case shared.ErrorCode(err) == shared.CodeNotFound: // deleted meanwhile: TaskDeleted tells
			case err != nil:
				h.log.Warn("hub: read a changed task", "task_id", id, "err", err)
			default:
				h.publishTask(id, t)
			}
		}
	}
}

// publishTask sends a task read before its deletion only if the deletion has not been
// sent meanwhile: after task.deleted, a task.updated would bring it back to the list.
func (h *Hub) publishTask(id string, t shared.Task) {
	h.tasksMu.Lock()
	defer h.tasksMu.Unlock()
	if !h.gone[id] {
		h.publishTo(tasksKey, id, shared.ActionTaskUpdated, "task:"+id, t)
	}
}

// TaskDeleted sends task.deleted to the task list's clients, and drops the task's
// pending or in-flight task.updated.
func (h *Hub) TaskDeleted(id string) {
	h.tasksMu.Lock()
	defer h.tasksMu.Unlock()
	delete(h.changed, id)
	if h.reading {
		h.gone[id] = true
	}
	h.publishTo(tasksKey, id, shared.ActionTaskDeleted, "", shared.TaskRef{TaskID: id})
	h.end(func(c *Client) bool { return c.who.Task == id })
}

// Revoked closes, with ErrRevoked, every client let in by key (Who.Keys): an ended
// sign-in, a revoked token or share link, a deleted account. Its connection ends at once,
// and no event reaches it any more.
func (h *Hub) Revoked(key string) {
	h.end(func(c *Client) bool { return slices.Contains(c.who.Keys, key) })
}

// end closes with ErrRevoked the clients that match.
func (h *Hub) end(match func(*Client) bool) {
	h.mu.RLock()
	var ended []*Client
	for c := range h.clients {
		if match(c) {
			ended = append(ended, c)
		}
	}
	h.mu.RUnlock()
	for _, c := range ended {
		c.End(ErrRevoked)
	}
}

// MessageAdded sends session.message.added to the message's session subscribers.
// m must already be projected (as every store result is).
func (h *Hub) MessageAdded(m shared.Message) {
	h.publish(m.SessionID, shared.ActionMessageAdded, "", m)
	if m.Type.Asks() { // the task's needs_attention
		h.TaskChanged(m.TaskID)
	}
}

// MessageUpdated sends session.message.updated; a pending update of the same message
// in a client's queue is replaced rather than queued twice.
func (h *Hub) MessageUpdated(m shared.Message) {
	h.publish(m.SessionID, shared.ActionMessageUpdated, m.ID, m)
	if m.Type.Asks() {
		h.TaskChanged(m.TaskID)
	}
}

// SessionUpdated sends session.updated (an extension) to the session's subscribers.
func (h *Hub) SessionUpdated(s shared.Session) {
	h.publish(s.ID, shared.ActionSessionUpdated, "", s)
	h.TaskChanged(s.TaskID)
}

// SessionDeleted sends session.deleted (an extension) to the session's subscribers and
// ends their subscriptions: nothing more will come of that session.
func (h *Hub) SessionDeleted(sessionID string) {
	for _, c := range h.publish(sessionID, shared.ActionSessionDeleted, "", shared.SessionRef{SessionID: sessionID}) {
		c.Unsubscribe(sessionID)
	}
}

// Subscribers reports how many clients are subscribed to a session.
func (h *Hub) Subscribers(sessionID string) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.subs[sessionID])
}

// Sessions lists the sessions that have subscribers.
func (h *Hub) Sessions() []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	ids := slices.Collect(maps.Keys(h.subs))
	return slices.DeleteFunc(ids, func(id string) bool { return id == tasksKey })
}

// publish encodes the notification once and offers it to every subscriber, which it
// returns.
func (h *Hub) publish(sessionID, action, coalesceKey string, payload any) []*Client {
	return h.publishTo(sessionID, "", action, coalesceKey, payload)
}

// publishTo is publish of an event of task taskID ("" for one of no task): it skips the
// guests of other tasks (Who.Task).
func (h *Hub) publishTo(sessionID, taskID, action, coalesceKey string, payload any) []*Client {
	frame, err := h.Encode(shared.EnvelopeNotification, action, "", payload)
	if err != nil {
		h.log.Error("hub: encode notification", "action", action, "session_id", sessionID, "err", err)
		return nil
	}
	h.mu.RLock()
	targets := make([]*Client, 0, len(h.subs[sessionID]))
	for c := range h.subs[sessionID] {
		if taskID == "" || c.who.Task == "" || c.who.Task == taskID {
			targets = append(targets, c)
		}
	}
	h.mu.RUnlock()
	// Offered outside the hub lock: a client that overflows unsubscribes itself, which
	// takes the hub lock for writing.
	for _, c := range targets {
		c.offer(coalesceKey, frame)
	}
	return targets
}

// Encode builds one envelope frame stamped with the hub's clock.
func (h *Hub) Encode(typ, action, id string, payload any) ([]byte, error) {
	raw, err := json.Marshal(payload)
	if err != nil {
		return nil, err
	}
	return json.Marshal(shared.Envelope{ID: id, Type: typ, Action: action, Payload: raw, Timestamp: h.now().UTC()})
}

// Connect registers a new client of who with no subscriptions. Its owner must call Close.
// After Close of the hub, the client returned is already done.
func (h *Hub) Connect(who Who) *Client {
	c := &Client{hub: h, who: who, ready: make(chan struct{}, 1), done: make(chan struct{}), sessions: map[string]struct{}{}}
	h.mu.Lock()
	closed := h.closed
	if !closed {
		h.clients[c] = struct{}{}
	}
	h.mu.Unlock()
	if closed {
		c.End(ErrShutdown)
	}
	return c
}

// Close disconnects every client with ErrShutdown, so that their connections end with a
// "going away" before the server stops. Publishing afterwards reaches no one.
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true
	clients := make([]*Client, 0, len(h.clients))
	for c := range h.clients {
		clients = append(clients, c)
	}
	h.mu.Unlock()
	for _, c := range clients {
		c.End(ErrShutdown)
	}
}

func (h *Hub) subscribe(c *Client, sessionID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	set := h.subs[sessionID]
	if set == nil {
		set = map[*Client]struct{}{}
		h.subs[sessionID] = set
	}
	set[c] = struct{}{}
}

func (h *Hub) unsubscribe(c *Client, sessionIDs ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.unsubscribeLocked(c, sessionIDs)
}

func (h *Hub) unsubscribeLocked(c *Client, sessionIDs []string) {
	for _, id := range sessionIDs {
		delete(h.subs[id], c)
		if len(h.subs[id]) == 0 {
			delete(h.subs, id)
		}
	}
}

// frame is one encoded envelope waiting to be written.
type frame struct {
	key  string // message id of a coalescable update, else ""
	data []byte
}

// Client is one connection's outgoing queue. Publishers fill it; one writer drains it
// with Take after each signal on Ready, and stops when Done is closed.
type Client struct {
	hub   *Hub
	who   Who
	ready chan struct{} // capacity 1: "the queue is not empty"
	done  chan struct{}

	mu       sync.Mutex
	queue    []frame
	queued   int // bytes in queue
	sessions map[string]struct{}
	cause    error // why done was closed
}

// Subscribe adds the client to a session's subscribers. It is a no-op once closed.
func (c *Client) Subscribe(sessionID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cause != nil {
		return
	}
	c.sessions[sessionID] = struct{}{}
	c.hub.subscribe(c, sessionID)
}

// Unsubscribe removes the client from a session's subscribers.
func (c *Client) Unsubscribe(sessionID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.sessions, sessionID)
	c.hub.unsubscribe(c, sessionID)
}

// Send queues a frame that must not be coalesced (a response to the client's request).
// It reports false when the client is closed, or is closed now because its queue is full.
func (c *Client) Send(data []byte) bool {
	return c.offer("", data)
}

// Ready is signalled when frames may be waiting for Take.
func (c *Client) Ready() <-chan struct{} { return c.ready }

// Done is closed when the client is closed or dropped; Err says why.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err is ErrSlow, ErrClosed, ErrShutdown, ErrRevoked or End's cause once Done is closed,
// else nil.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cause
}

// Take removes and returns every pending frame, oldest first.
func (c *Client) Take() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([][]byte, len(c.queue))
	for i, f := range c.queue {
		out[i] = f.data
	}
	c.queue, c.queued = c.queue[:0], 0
	return out
}

// Close unsubscribes the client and closes Done. Closing twice is harmless.
func (c *Client) Close() { c.End(ErrClosed) }

// End is Close for cause, which Err then reports (the first cause wins).
func (c *Client) End(cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closeLocked(cause)
}

func (c *Client) offer(key string, data []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cause != nil {
		return false
	}
	if key != "" {
		for i := range c.queue {
			if c.queue[i].key == key {
				c.queued += len(data) - len(c.queue[i].data)
				c.queue[i].data = data
				return true
			}
		}
	}
	if len(c.queue) >= c.hub.queueSize || len(c.queue) > 0 && c.queued+len(data) > c.hub.queueBytes {
		c.hub.log.Warn("hub: dropped slow client", "queued", len(c.queue), "bytes", c.queued)
		c.closeLocked(ErrSlow)
		return false
	}
	c.queue = append(c.queue, frame{key: key, data: data})
	c.queued += len(data)
	select {
	case c.ready <- struct{}{}:
	default: // already signalled; the writer has not taken yet
	}
	return true
}

func (c *Client) closeLocked(cause error) {
	if c.cause != nil {
		return
	}
	c.cause = cause
	ids := make([]string, 0, len(c.sessions))
	for id := range c.sessions {
		ids = append(ids, id)
	}
	c.hub.mu.Lock()
	c.hub.unsubscribeLocked(c, ids)
	delete(c.hub.clients, c)
	c.hub.mu.Unlock()
	c.queue, c.queued = nil, 0
	close(c.done)
}
