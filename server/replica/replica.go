// Package replica lets several `conch serve` processes share one PostgreSQL database
// (README.md, "Several servers behind a load balancer"). Each process is a replica under a
// lease it renews (store/replica.go). An agent runs on the replica where its session was
// started; requests for it that reach another replica are committed to the owner's inbox
// (store/inbox.go) and woken with a notification. What a replica commits reaches the
// WebSocket clients of every replica through PostgreSQL's LISTEN/NOTIFY (Bus). A replica
// whose lease ran out is taken over by the next sweep of any other: its sessions are
// closed and its running commands cancelled, output kept. On SQLite the one process is
// the only replica and its bus is local.
package replica

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"conch/server/acp"
	"conch/server/hub"
	"conch/server/store"
	"conch/shared"
)

// DefaultLease is how long a replica's lease lasts. It is renewed, and the others sweep,
// every third of it, so a replica that died is taken over within 4/3 of it: 20 s.
const DefaultLease = 15 * time.Second

// retryListen is how long a lost listening connection waits before it connects again.
const retryListen = time.Second

// Config wires a Replica. Store and Hub are required.
type Config struct {
	Store  *store.Store
	Hub    *hub.Hub
	Lease  time.Duration // at least 1s; serve's default is DefaultLease
	Logger *slog.Logger
}

// Replica is this process among the servers of one database. Between Join and Close it
// holds its lease; its methods are the API's Runtime.
type Replica struct {
	lease time.Duration
	id    string
	bus   *Bus
	store *store.Store
	hub   *hub.Hub
	log   *slog.Logger

	local     *acp.Manager
	wake      chan struct{} // capacity 1: "the inbox may hold commands"
	stopBus   chan struct{}
	busDone   chan struct{}
	stopLoops context.CancelFunc
	loops     sync.WaitGroup

	heardMu  sync.Mutex
	heard    time.Time     // when the last notice came, or the listening connection opened
	listened chan struct{} // closed once the listening connection has first opened (connected)
	listen   sync.Once

	waitMu  sync.Mutex
	waiting map[string]chan error // the outcomes of forwarded commands awaited here, by id
}

// CheckLease refuses a lease too short to renew over a network: under a second.
func CheckLease(lease time.Duration) error {
	if lease < time.Second {
		return fmt.Errorf("--lease %s is too short: give 1s or more", lease)
	}
	return nil
}

// New prepares a replica with a new id; Join starts it.
func New(cfg Config) (*Replica, error) {
	if cfg.Store == nil || cfg.Hub == nil {
		return nil, errors.New("replica: Store and Hub are required")
	}
	if err := CheckLease(cfg.Lease); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	id := uuid.Must(uuid.NewV7()).String()
	log := cfg.Logger.With("replica", id)
	return &Replica{lease: cfg.Lease, id: id, bus: newBus(cfg.Store, cfg.Hub, id, log), store: cfg.Store, hub: cfg.Hub, log: log,
		wake: make(chan struct{}, 1), waiting: map[string]chan error{}, listened: make(chan struct{})}, nil
}

// Events is where everything this process commits is published.
func (r *Replica) Events() *Bus { return r.bus }

// Join takes the lease and ends what no live replica runs (on SQLite: everything a
// previous process left live), publishing it.
func (r *Replica) Join(ctx context.Context) error {
	if err := r.store.Join(ctx, r.id, r.lease); err != nil {
		return err
	}
	r.stopBus, r.busDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(r.busDone)
		r.bus.run(r.stopBus)
	}()
	return r.sweep(ctx)
}

// Start runs the lease, the sweeps, the inbox and the listener for the agents of local.
func (r *Replica) Start(local *acp.Manager) {
	r.local = local
	ctx, stop := context.WithCancel(context.Background())
	r.stopLoops = stop
	r.loops.Add(2)
	go func() {
		defer r.loops.Done()
		r.loop(ctx)
	}()
	go func() {
		defer r.loops.Done()
		r.heardNow()
		err := r.store.Listen(ctx, retryListen, r.connected, r.handle, func(err error) {
			if ctx.Err() == nil { // not the end of the connection Close asked for
				r.log.Warn("replica: listening", "err", err)
			}
		})
		if err != nil && !errors.Is(err, context.Canceled) {
			r.log.Error("replica: listening stopped", "err", err)
		}
	}()
}

// Close stops the agents here (their sessions end closed), gives the lease up and sends
// what is left to tell.
func (r *Replica) Close() {
	if r.stopLoops != nil {
		r.stopLoops()
		r.loops.Wait()
		r.local.Close()
	}
	if r.stopBus != nil {
		if err := r.store.Leave(context.Background()); err != nil {
			r.log.Error("replica: leave", "err", err)
		}
		close(r.stopBus)
		<-r.busDone
	}
}

// loop renews the lease and sweeps every third of the lease, and runs the inbox's
// commands when woken (and at each sweep, in case a wake was missed).
func (r *Replica) loop(ctx context.Context) {
	tick := time.NewTicker(r.lease / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
			r.runCommands(ctx)
		case <-tick.C:
			if r.renew(ctx) {
				if err := r.sweep(ctx); err != nil && ctx.Err() == nil {
					r.log.Error("replica: sweep", "err", err)
				}
			}
			r.runCommands(ctx)
		}
	}
}

// renew renews the lease, and reports whether this replica may sweep now: not when it
// could not reach the database for a lease, the others perhaps neither.
func (r *Replica) renew(ctx context.Context) bool {
	err := r.store.Renew(ctx)
	switch {
	case errors.Is(err, store.ErrLeaseLapsed):
		r.log.Warn("replica: the lease had run out; renewed", "err", err)
	case errors.Is(err, store.ErrLeaseLost):
		// Another replica took this one for dead (a pause longer than the lease) and closed
		// its sessions: their agents must not go on unrecorded.
		r.log.Error("replica: lease lost; stopping the agents here", "err", err)
		for _, id := range r.local.Running() {
			go r.local.Leave(id, store.SweptError) // another replica may resume it
		}
	case err != nil && ctx.Err() == nil:
		r.log.Error("replica: renew the lease", "err", err)
	}
	return err == nil
}

// sweep takes over the replicas that are gone and publishes what it changed.
func (r *Replica) sweep(ctx context.Context) error {
	swept, err := r.store.Sweep(ctx)
	if err != nil {
		return err
	}
	for _, m := range swept.Messages {
		r.bus.MessageUpdated(m)
	}
	for _, m := range swept.Added {
		r.bus.MessageAdded(m)
	}
	for _, s := range swept.Sessions {
		r.bus.SessionUpdated(s)
	}
	return nil
}

func (r *Replica) runCommands(ctx context.Context) {
	cmds, err := r.store.TakeCommands(ctx)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Error("replica: read the inbox", "err", err)
		}
		return
	}
	for _, c := range cmds {
		switch c.Kind {
		case store.CommandPrompt:
			err = r.local.Prompt(c.SessionID, c.MessageID, c.Body)
		case store.CommandCancel:
			err = r.local.Cancel(c.SessionID)
			r.bus.done(c.Sender, c.ID, err)
		case store.CommandPermission:
			r.local.Answered(c.SessionID, c.MessageID, c.Body)
		case store.CommandMode, store.CommandConfig, store.CommandStop, store.CommandStopAgent, store.CommandResume:
			// Apart: the agent's answer must not hold up the lease's renewal.
			go func() {
				ctx, cancel := context.WithTimeout(ctx, answerWait)
				defer cancel()
				var err error
				switch c.Kind {
				case store.CommandMode:
					_, err = r.local.SetMode(ctx, c.SessionID, c.Body)
				case store.CommandConfig:
					var req shared.ConfigRequest
					if err = json.Unmarshal([]byte(c.Body), &req); err == nil {
						_, err = r.local.SetConfig(ctx, c.SessionID, req)
					}
				case store.CommandStopAgent:
					_, err = r.local.StopAgent(ctx, c.SessionID)
				case store.CommandResume:
					_, err = r.local.Resume(ctx, c.SessionID)
				default:
					r.local.Stop(c.SessionID, c.Body)
				}
				r.bus.done(c.Sender, c.ID, err)
			}()
		default:
			err = fmt.Errorf("unknown command %q", c.Kind)
		}
		if err != nil {
			r.log.Warn("replica: command not run", "session", c.SessionID, "kind", c.Kind, "err", err)
		}
	}
}

func (r *Replica) heardNow() {
	r.heardMu.Lock()
	r.heard = time.Now()
	r.heardMu.Unlock()
}

// reread is how far before the last notice heard a replica re-reads after its listening
// connection was lost: room for the clocks of the servers to differ.
const reread = time.Minute

// connected runs on every (re)connection of the listener: what was notified while it was
// not listening is read again, for the sessions watched here; agents of sessions deleted
// meanwhile are stopped; commands may wait.
func (r *Replica) connected(ctx context.Context) error {
	r.heardMu.Lock()
	since := r.heard.Add(-reread)
	r.heardMu.Unlock()
	r.heardNow()
	var errs []error
	for _, id := range r.hub.Sessions() {
		sess, err := r.store.GetSession(ctx, id)
		if shared.ErrorCode(err) == shared.CodeNotFound {
			r.hub.SessionDeleted(id)
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		r.hub.SessionUpdated(sess)
		msgs, err := r.store.ChangedSince(ctx, id, since)
		errs = append(errs, err)
		for _, m := range msgs {
			r.hub.MessageUpdated(m)
		}
	}
	for _, id := range r.local.Running() {
		if _, err := r.store.GetSession(ctx, id); shared.ErrorCode(err) == shared.CodeNotFound {
			go r.local.Stop(id, "its task was deleted")
		}
	}
	r.signal()
	r.listen.Do(func() { close(r.listened) })
	return errors.Join(errs...)
}

// Listened is closed once this replica has first heard the other replicas' notices, and
// read again what changed before, for the sessions watched here (PostgreSQL: a server
// of SQLite is alone, and hears none).
func (r *Replica) Listened() <-chan struct{} { return r.listened }

func (r *Replica) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// handle takes one notice of another replica: it publishes the row it names to the
// clients here that watch its session, stops the agent of a deleted session, or reads
// the inbox.
func (r *Replica) handle(ctx context.Context, payload string) error {
	r.heardNow()
	var n notice
	if err := json.Unmarshal([]byte(payload), &n); err != nil {
		return fmt.Errorf("notice %q: %w", payload, err)
	}
	if n.Replica == r.id {
		return nil
	}
	if n.Task != "" && n.Kind != kindGone {
		r.hub.TaskChanged(n.Task)
	}
	switch n.Kind {
	case kindTask:
		return nil
	case kindGone:
		r.hub.TaskDeleted(n.Task)
		return nil
	case kindRevoked:
		r.hub.Revoked(n.Key)
		return nil
	case kindCommand:
		if n.To == r.id {
			r.signal()
		}
		return nil
	case kindDeleted:
		r.hub.SessionDeleted(n.Session)
		go r.local.Stop(n.Session, "its task was deleted")
		return nil
	case kindDone:
		if n.To == r.id {
			r.finished(n)
		}
		return nil
	}
	if r.hub.Subscribers(n.Session) == 0 {
		return nil // no one here watches it
	}
	switch n.Kind {
	case kindSession:
		sess, err := r.store.GetSession(ctx, n.Session)
		if err != nil {
			return ignoreGone(err)
		}
		r.hub.SessionUpdated(sess)
	case kindAdded, kindUpdated:
		m, err := r.store.GetMessage(ctx, n.Message)
		if err != nil {
			return ignoreGone(err)
		}
		if n.Kind == kindAdded {
			r.hub.MessageAdded(m)
		} else {
			r.hub.MessageUpdated(m)
		}
	}
	return nil
}

// ignoreGone drops the error of a row deleted since its notice: its deletion is told too.
func ignoreGone(err error) error {
	if shared.ErrorCode(err) == shared.CodeNotFound {
		return nil
	}
	return err
}
