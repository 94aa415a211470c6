package push

import (
	"net/url"
	"sync"
	"time"

	webpush "github.com/SherClockHolmes/webpush-go"

	"conch/server/store"
	"conch/shared"
)

// Events is what the agents' runtime publishes to (acp.Events).
type Events interface {
	MessageAdded(shared.Message)
	MessageUpdated(shared.Message)
	SessionUpdated(shared.Session)
}

// Watch returns next with the sender listening in: a pending permission request, and a
// session that leaves running (its turn ended, or its agent failed), are sent to the
// task's watchers. Everything goes on to next as before, first.
func (s *Sender) Watch(next Events) Events {
	return &watch{Events: next, s: s, running: map[string]bool{}}
}

type watch struct {
	Events
	s       *Sender
	mu      sync.Mutex
	running map[string]bool // sessions seen running, until seen otherwise
}

// How long a push service keeps an undelivered notification: a request waits for its
// answer, a finished turn is news for a while.
const (
	askTTL  = 24 * time.Hour
	turnTTL = time.Hour
)

func (w *watch) MessageAdded(m shared.Message) {
	w.Events.MessageAdded(m)
	if !m.Type.Asks() || m.Metadata == nil || m.Metadata.Status != shared.StatusPending {
		return
	}
	ask := "Asks permission: "
	if m.Type == shared.TypeElicitation {
		ask = "Asks a question: "
	}
	w.s.enqueue(event{taskID: m.TaskID, sessionID: m.SessionID, urgency: webpush.UrgencyHigh, ttl: askTTL,
		body: ask + agentText(m.Content)})
}

func (w *watch) SessionUpdated(sess shared.Session) {
	w.Events.SessionUpdated(sess)
	w.mu.Lock()
	was := w.running[sess.ID]
	if sess.State == shared.SessionRunning {
		w.running[sess.ID] = true
	} else {
		delete(w.running, sess.ID)
	}
	w.mu.Unlock()
	if !was || sess.State == shared.SessionRunning {
		return
	}
	body := "The agent's turn ended."
	switch {
	case sess.State == shared.SessionFailed:
		body = "The agent failed."
	case sess.State != shared.SessionReady:
		return // closed: someone ended it
	case sess.LastStopReason != "" && sess.LastStopReason != shared.StopEndTurn:
		body = "The agent's turn ended: " + agentText(string(sess.LastStopReason))
	}
	w.s.enqueue(event{taskID: sess.TaskID, sessionID: sess.ID, urgency: webpush.UrgencyNormal, ttl: turnTTL, body: body})
}

// agentText is an agent's words as a notification carries them: cut, and marked like a
// page marks them (shared.Visible), for a notification is as easy to spoof as a page.
func agentText(s string) string { return shared.Visible(store.CutText(s, bodyBytes)) }

// host is what the log says of an endpoint: its path is the subscription's secret.
func host(endpoint string) string {
	if u, err := url.Parse(endpoint); err == nil {
		return u.Host
	}
	return ""
}
