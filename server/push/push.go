// Package push tells people's browsers, through Web Push with VAPID, when a task they
// watch needs them: a permission request, or a turn that finished (docs/API.md,
// "Notifications"). It sits between the agents' runtime and where it publishes (Watch), so
// only the server that runs a session's agent sends, once per event; it never blocks the
// agent: events wait in a bounded queue for one worker, and the queue drops when full.
package push

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	webpush "github.com/SherClockHolmes/webpush-go"

	"conch/server/store"
	"conch/shared"
)

// Config wires a Sender. Only Store is required.
type Config struct {
	Store *store.Store
	// Contact is whom the push services may write to about this server (VAPID's
	// subject): an e-mail address or an https URL (default conch@localhost).
	Contact string
	Logger  *slog.Logger
	// Endpoints are those sent to: the same rule as when a browser subscribes.
	Endpoints Endpoints
}

// Sender sends notifications from one worker.
type Sender struct {
	cfg                Config
	client             *http.Client // cfg.Endpoints.Client
	private, public    string
	queue              chan event
	stop, done         chan struct{}
	closeOnce, runOnce sync.Once
}

// event is one thing to tell the watchers of a task.
type event struct {
	taskID, sessionID, body string
	urgency                 webpush.Urgency
	ttl                     time.Duration
}

// queueSize bounds the events waiting to be sent: past it an event is dropped and logged
// (the page still shows it), so a slow push service never holds an agent up.
const queueSize = 256

// sendTimeout bounds one request to a push service.
const sendTimeout = 10 * time.Second

// Bounds of what a payload carries of a task and of an agent (the push service sees its
// size, and the notification shows only a few lines).
const (
	titleBytes = 80
	bodyBytes  = 160
)

// New reads the database's VAPID key pair, making it when none exists yet.
func New(ctx context.Context, cfg Config) (*Sender, error) {
	// webpush-go makes every subject that is no https URL a mailto: one.
	cfg.Contact = strings.TrimPrefix(cfg.Contact, "mailto:")
	if cfg.Contact == "" {
		cfg.Contact = "conch@localhost"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	private, public, err := cfg.Store.VAPIDKeys(ctx, webpush.GenerateVAPIDKeys)
	if err != nil {
		return nil, err
	}
	return &Sender{cfg: cfg, client: cfg.Endpoints.Client(sendTimeout), private: private, public: public, queue: make(chan event, queueSize),
		stop: make(chan struct{}), done: make(chan struct{})}, nil
}

// PublicKey is the VAPID public key browsers subscribe with (their applicationServerKey).
func (s *Sender) PublicKey() string { return s.public }

// Start runs the worker until Close.
func (s *Sender) Start() {
	s.runOnce.Do(func() { go s.run() })
}

// Close stops the worker once the notification it is sending is done; what waits is
// dropped.
func (s *Sender) Close() {
	s.closeOnce.Do(func() { close(s.stop) })
	s.runOnce.Do(func() { close(s.done) }) // never started
	<-s.done
}

func (s *Sender) run() {
	defer close(s.done)
	for {
		select {
		case <-s.stop:
			return
		case e := <-s.queue:
			s.send(e)
		}
	}
}

func (s *Sender) enqueue(e event) {
	select {
	case s.queue <- e:
	default:
		s.cfg.Logger.Warn("push: queue full, notification dropped", "session", e.sessionID)
	}
}

// send tells every watcher of the event's task. A subscription the push service no
// longer knows (404, 410) is deleted; a redirect is not followed (Endpoints.Client), and
// counts as a refusal.
func (s *Sender) send(e event) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	task, err := s.cfg.Store.GetTask(ctx, e.taskID)
	if err != nil {
		return // deleted meanwhile: no one to tell
	}
	subs, err := s.cfg.Store.Watchers(ctx, e.taskID)
	if err != nil || len(subs) == 0 {
		if err != nil {
			s.cfg.Logger.Error("push: read watchers", "task", e.taskID, "err", err)
		}
		return
	}
	payload, err := json.Marshal(shared.PushNotification{Title: shared.Visible(store.CutText(task.Title, titleBytes)),
		Body: e.body, Path: "/sessions/" + e.sessionID, Tag: "conch-" + e.sessionID})
	if err != nil {
		return
	}
	opts := &webpush.Options{HTTPClient: s.client, Subscriber: s.cfg.Contact, Topic: topic(e.sessionID),
		TTL: int(e.ttl / time.Second), Urgency: e.urgency, VAPIDPublicKey: s.public, VAPIDPrivateKey: s.private}
	for _, sub := range subs {
		s.sendOne(ctx, payload, sub, opts)
	}
}

func (s *Sender) sendOne(ctx context.Context, payload []byte, sub shared.PushSubscription, opts *webpush.Options) {
	// One stored before Endpoints was may be an http URL; addresses are checked on connecting.
	if _, err := s.cfg.Endpoints.parse(sub.Endpoint); err != nil {
		s.cfg.Logger.Warn("push: endpoint refused", "endpoint", host(sub.Endpoint), "err", err)
		return
	}
	resp, err := webpush.SendNotificationWithContext(ctx, payload, &webpush.Subscription{Endpoint: sub.Endpoint,
		Keys: webpush.Keys{P256dh: sub.Keys.P256dh, Auth: sub.Keys.Auth}}, opts)
	if err != nil {
		s.cfg.Logger.Warn("push: send", "endpoint", host(sub.Endpoint), "err", err)
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		if err := s.cfg.Store.DropPushSubscription(ctx, sub.Endpoint); err != nil {
			s.cfg.Logger.Error("push: drop subscription", "err", err)
		}
	case resp.StatusCode >= 300:
		s.cfg.Logger.Warn("push: refused", "endpoint", host(sub.Endpoint), "status", resp.StatusCode)
	}
}

// topic lets a push service replace a session's notification it still holds with the
// newer one: at most 32 base64url characters (RFC 8030), so a hash of the session's id.
func topic(sessionID string) string {
	sum := sha256.Sum256([]byte(sessionID))
	return base64.RawURLEncoding.EncodeToString(sum[:24])
}
