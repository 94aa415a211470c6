package replica

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"time"

	"conch/server/acp"
	"conch/server/hub"
	"conch/server/store"
	"conch/shared"
)

// Notice kinds: what changed, named by ids only.
const (
	kindAdded   = "added"   // a message was added
	kindUpdated = "updated" // a message changed
	kindSession = "session" // a session changed
	kindDeleted = "deleted" // a session was deleted with its task
	kindCommand = "command" // commands wait in the inbox of replica To
	kindDone    = "done"    // replica To's command Message ran, failing with Code and Error if set
	kindTask    = "task"    // task Task was created (its other changes ride on the notices above)
	kindGone    = "gone"    // task Task was deleted
	kindRevoked = "revoked" // the sign-in, token, link or account Key was revoked
)

// maxErrorText bounds the error text of a done notice, far below PostgreSQL's 8000 bytes.
const maxErrorText = 1000

// notice is the payload of one notification: ids, never a body.
type notice struct {
	Replica string `json:"replica"` // the sender
	Kind    string `json:"kind"`
	Session string `json:"session,omitempty"`
	Message string `json:"message,omitempty"`
	Task    string `json:"task,omitempty"` // the task whose summary in the task list changed
	To      string `json:"to,omitempty"`
	Code    string `json:"code,omitempty"`
	Error   string `json:"error,omitempty"`
	Key     string `json:"key,omitempty"` // what was revoked (hub.Who's keys)
}

// Bus publishes what this process committed, after the commit: to its own WebSocket
// clients through the hub and, on a shared database, to the other replicas. The manager
// and the API publish through it alone. Notices wait in a queue that coalesces repeats
// (a running command's updates), so publishing never waits for the database; one
// goroutine sends them in batches.
type Bus struct {
	hub   *hub.Hub
	store *store.Store
	id    string
	log   *slog.Logger

	mu      sync.Mutex
	pending []notice
	queued  map[notice]bool
	ready   chan struct{} // capacity 1: "pending is not empty"
}

var _ acp.Events = (*Bus)(nil)

func newBus(st *store.Store, h *hub.Hub, id string, log *slog.Logger) *Bus {
	return &Bus{hub: h, store: st, id: id, log: log, queued: map[notice]bool{}, ready: make(chan struct{}, 1)}
}

// MessageAdded publishes a new message.
func (b *Bus) MessageAdded(m shared.Message) {
	b.hub.MessageAdded(m)
	b.tell(notice{Kind: kindAdded, Session: m.SessionID, Message: m.ID, Task: attention(m)})
}

// MessageUpdated publishes a changed message.
func (b *Bus) MessageUpdated(m shared.Message) {
	b.hub.MessageUpdated(m)
	b.tell(notice{Kind: kindUpdated, Session: m.SessionID, Message: m.ID, Task: attention(m)})
}

// attention is the task of a permission request or question, whose needs_attention it may change.
func attention(m shared.Message) string {
	if m.Type.Asks() {
		return m.TaskID
	}
	return ""
}

// SessionUpdated publishes a changed session (and its task's summary).
func (b *Bus) SessionUpdated(s shared.Session) {
	b.hub.SessionUpdated(s)
	b.tell(notice{Kind: kindSession, Session: s.ID, Task: s.TaskID})
}

// TaskChanged publishes a new task's summary to the task list.
func (b *Bus) TaskChanged(id string) {
	b.hub.TaskChanged(id)
	b.tell(notice{Kind: kindTask, Task: id})
}

// TaskDeleted tells the task list that a task was deleted.
func (b *Bus) TaskDeleted(id string) {
	b.hub.TaskDeleted(id)
	b.tell(notice{Kind: kindGone, Task: id})
}

// SessionDeleted publishes a deleted session; the replica running its agent stops it.
func (b *Bus) SessionDeleted(sessionID string) {
	b.hub.SessionDeleted(sessionID)
	b.tell(notice{Kind: kindDeleted, Session: sessionID})
}

// Revoked closes the connections that key let in, here and on the other replicas.
func (b *Bus) Revoked(key string) {
	b.hub.Revoked(key)
	b.tell(notice{Kind: kindRevoked, Key: key})
}

// wake tells replica to read its inbox.
func (b *Bus) wake(replica string) {
	b.tell(notice{Kind: kindCommand, To: replica})
}

// done tells replica that its command id ran, and how.
func (b *Bus) done(replica, id string, err error) {
	n := notice{Kind: kindDone, To: replica, Message: id}
	if err != nil {
		n.Code, n.Error = shared.ErrorCode(err), shared.ErrorMessage(err)
		if len(n.Error) > maxErrorText {
			n.Error = strings.ToValidUTF8(n.Error[:maxErrorText], "")
		}
	}
	b.tell(n)
}

func (b *Bus) tell(n notice) {
	if !b.store.Shared() {
		return
	}
	n.Replica = b.id
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.queued[n] {
		return // the receiver reads the row as it is then: once is enough
	}
	b.queued[n] = true
	b.pending = append(b.pending, n)
	select {
	case b.ready <- struct{}{}:
	default:
	}
}

// sendWait bounds one batch of notices: a database that does not answer holds up no more.
const sendWait = 10 * time.Second

// run sends the notices as they come until stop is closed, then what is still pending
// (what a clean stop just published).
func (b *Bus) run(stop <-chan struct{}) {
	for {
		select {
		case <-b.ready:
			b.send()
		case <-stop:
			b.send()
			return
		}
	}
}

func (b *Bus) send() {
	ctx, cancel := context.WithTimeout(context.Background(), sendWait)
	defer cancel()
	b.mu.Lock()
	batch := b.pending
	b.pending, b.queued = nil, map[notice]bool{}
	b.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	// Not retried: a replica that misses a notice shows the next change of the row.
	if err := b.store.Notify(ctx, encode(batch)); err != nil {
		b.log.Error("replica: tell the other servers", "notices", len(batch), "err", err)
	}
}

func encode(notices []notice) []string {
	payloads := make([]string, len(notices))
	for i, n := range notices {
		raw, _ := json.Marshal(n) // strings only: always encodes
		payloads[i] = string(raw)
	}
	return payloads
}

// Deleted tells the servers on a shared database that sessions were deleted by a process
// that serves none (conch prune), so that they tell the browsers watching them. On SQLite
// it does nothing: no other process listens.
func Deleted(ctx context.Context, st *store.Store, sessions []string) error {
	if !st.Shared() {
		return nil
	}
	notices := make([]notice, len(sessions))
	for i, id := range sessions {
		notices[i] = notice{Kind: kindDeleted, Session: id}
	}
	return st.Notify(ctx, encode(notices))
}
