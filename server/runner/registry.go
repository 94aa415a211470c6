// Package runner is what the server knows of runners, the `conch runner` processes that
// run sessions' agents on other machines (issue 38): the registry of those connected to
// this server, each one yamux session over its WebSocket in which the server opens a
// stream per operation, the heartbeat that marks a silent one gone, and the placement of
// a session on one by labels and room. The runner's own side, which dials out, is run.go.
package runner

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/yamux"

	"conch/server/acp"
	"conch/server/worktree"
	"conch/shared"
)

// DefaultHeartbeat is how often the server pings a runner, and how long it waits for the
// answer: a runner silent for two of them is gone.
const DefaultHeartbeat = 10 * time.Second

// maxRunners bounds the runners the registry remembers, connected or not.
const maxRunners = 1024

// Store is what the registry reads and records (*store.Store).
type Store interface {
	// RunnerLoads counts the live sessions placed on each runner.
	RunnerLoads(ctx context.Context) (map[string]int, error)
}

// Config configures a Registry. Zero values choose the defaults.
type Config struct {
	Store     Store
	Heartbeat time.Duration    // DefaultHeartbeat when 0
	Now       func() time.Time // time.Now when nil
	Logger    *slog.Logger     // slog.Default() when nil
	// Joined is called once a runner has joined (acp.Manager.RunnerJoined: the sessions
	// that wait for a runner move to it); nil when nothing waits.
	Joined func()
}

// Registry holds the runners connected to this server, and those that were since it
// started (listed as not connected).
type Registry struct {
	cfg     Config
	mu      sync.Mutex
	runners map[string]*Runner // by name
	held    map[string]int     // by runner's name: places Place gave that are not released yet
}

// New returns an empty registry.
func New(cfg Config) *Registry {
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Registry{cfg: cfg, runners: map[string]*Runner{}, held: map[string]int{}}
}

// Hello is what a runner announces when it connects (shared.CheckRunner).
type Hello struct {
	Name     string
	Labels   []string
	Capacity int
}

// Runner is one connection of a runner.
type Runner struct {
	Hello
	mux      *yamux.Session
	lastSeen atomic.Int64 // unix nanoseconds of its last heartbeat answer
}

// Open opens a stream to the runner, for one operation.
func (r *Runner) Open(ctx context.Context) (net.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s, err := r.mux.OpenStream()
	if err != nil {
		return nil, fmt.Errorf("runner %s: %w", r.Name, err)
	}
	return s, nil
}

// Gone is closed once the runner's connection has ended.
func (r *Runner) Gone() <-chan struct{} { return r.mux.CloseChan() }

func (r *Runner) connected() bool { return !r.mux.IsClosed() }

// Serve runs conn, a runner's connection announced by hello, until it ends, ctx is done
// (its token was revoked, the server stops) or the runner misses a heartbeat. The server
// is yamux's client: it opens the streams, the runner accepts them. A runner connecting
// under the name of one still connected takes its place (the same machine back after a
// network cut the server has not noticed yet).
func (g *Registry) Serve(ctx context.Context, conn net.Conn, hello Hello) error {
	if err := shared.CheckRunner(hello.Name, hello.Labels, hello.Capacity); err != nil {
		conn.Close()
		return err
	}
	cfg := yamux.DefaultConfig()
	cfg.EnableKeepAlive = false // the heartbeat below pings, and records the answer
	cfg.ConnectionWriteTimeout = g.cfg.Heartbeat
	cfg.AcceptBacklog = 1 // the runner opens no streams of its own: refuseStreams resets any
	cfg.LogOutput = nil
	cfg.Logger = slog.NewLogLogger(g.cfg.Logger.Handler(), slog.LevelWarn)
	mux, err := yamux.Client(conn, cfg)
	if err != nil {
		conn.Close()
		return err
	}
	defer mux.Close()
	r := &Runner{Hello: hello, mux: mux}
	r.lastSeen.Store(g.cfg.Now().UnixNano())
	if err := g.add(r); err != nil {
		return err
	}
	g.cfg.Logger.Info("runner connected", "runner", hello.Name, "labels", hello.Labels, "capacity", hello.Capacity)
	go refuseStreams(mux, hello.Name, g.cfg.Logger)
	if g.cfg.Joined != nil {
		g.cfg.Joined()
	}
	tick := time.NewTicker(g.cfg.Heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-mux.CloseChan():
			return fmt.Errorf("runner %s disconnected", hello.Name)
		case <-tick.C:
			if _, err := mux.Ping(); err != nil {
				return fmt.Errorf("runner %s missed its heartbeat: %w", hello.Name, err)
			}
			r.lastSeen.Store(g.cfg.Now().UnixNano())
		}
	}
}

// refuseStreams resets every stream a runner opens, until its connection ends: the server
// opens the streams of the sessions it placed there, and a runner has nothing to say
// outside of them (nor any way to name another runner's session).
func refuseStreams(mux *yamux.Session, name string, log *slog.Logger) {
	for {
		s, err := mux.AcceptStream()
		if err != nil {
			return
		}
		log.Warn("a runner opened a stream of its own: refused", "runner", name)
		s.Close()
	}
}

// add registers r, in place of a runner of the same name.
func (g *Registry) add(r *Runner) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if old := g.runners[r.Name]; old != nil {
		old.mux.Close()
		delete(g.runners, r.Name)
	}
	if len(g.runners) >= maxRunners { // forget the runner gone longest
		var oldest *Runner
		for _, o := range g.runners {
			if !o.connected() && (oldest == nil || o.lastSeen.Load() < oldest.lastSeen.Load()) {
				oldest = o
			}
		}
		if oldest == nil {
			return shared.Errorf(shared.CodeConflict, "%d runners are connected, the most a server takes", maxRunners)
		}
		delete(g.runners, oldest.Name)
	}
	g.runners[r.Name] = r
	return nil
}

// List is every runner the registry knows, by name, with its live sessions.
func (g *Registry) List(ctx context.Context) ([]shared.Runner, error) {
	loads, err := g.cfg.Store.RunnerLoads(ctx)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]shared.Runner, 0, len(g.runners))
	for _, r := range g.runners {
		out = append(out, shared.Runner{Name: r.Name, Labels: append([]string{}, r.Labels...), Capacity: r.Capacity, Sessions: loads[r.Name],
			Connected: r.connected(), LastSeen: time.Unix(0, r.lastSeen.Load()).UTC()})
	}
	slices.SortFunc(out, func(a, b shared.Runner) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Place chooses where a session runs (the runtime records it): a session whose profile
// requires no label runs on this server (nil), where the task's worktree and directories
// are; one that requires labels stays on was, the runner it ran on, while that one is
// connected with the labels and room (its directory and its agent's memory are there),
// else runs on the connected runner that has every label and room, with the fewest
// sessions (then by name), and is refused when none has. The place it gives counts as
// taken until release is called, once the store counts the session there (or it is not
// to be): the store's count alone would let placements at the same moment all take a
// runner's last place. release may be called more than once.
func (g *Registry) Place(ctx context.Context, labels []string, was string) (r *Runner, release func(), err error) {
	if len(labels) == 0 {
		return nil, func() {}, nil
	}
	loads, err := g.cfg.Store.RunnerLoads(ctx)
	if err != nil {
		return nil, nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for name, n := range g.held {
		loads[name] += n
	}
	if r = g.runners[was]; r == nil || !fits(r, labels, loads) {
		r = pick(g.runners, labels, loads)
	}
	if r == nil {
		return nil, nil, shared.Errorf(shared.CodeConflict, "no runner with labels %s has room", strings.Join(labels, ", "))
	}
	g.held[r.Name]++
	return r, sync.OnceFunc(func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.held[r.Name]--; g.held[r.Name] == 0 {
			delete(g.held, r.Name)
		}
	}), nil
}

// Machine is acp.Config.Place: the machine of a session of p, a runner's (named) or, when
// none is chosen, this server's (nil, ""); was is the runner the session ran on. The place
// is held until release (Place).
func (g *Registry) Machine(p acp.Profile, was string) (m acp.Machine, name string, release func(), err error) {
	ctx, cancel := context.WithTimeout(context.Background(), placeWait)
	defer cancel()
	r, release, err := g.Place(ctx, p.Labels, was)
	if err != nil || r == nil {
		return nil, "", release, err
	}
	return acp.Remote(r.Open, r.Gone()), r.Name, release, nil
}

// Workspace runs op on the worktree a task on a repo_url has on the runner named
// (task.Workspaces), which must be connected to this server.
func (g *Registry) Workspace(ctx context.Context, name string, op worktree.Op) (worktree.Result, error) {
	m := g.Runner(name)
	if m == nil {
		return worktree.Result{}, shared.Errorf(shared.CodeConflict, "the task's worktree is on runner %s, which is not connected to this server", name)
	}
	return m.Workspace(ctx, op)
}

// Runner is acp.Config.Runner: the machine of the runner named while it is connected to
// this server, else nil.
func (g *Registry) Runner(name string) acp.Machine {
	g.mu.Lock()
	r := g.runners[name]
	g.mu.Unlock()
	if r == nil || !r.connected() {
		return nil
	}
	return acp.Remote(r.Open, r.Gone())
}

// placeWait bounds a placement's read of the store.
const placeWait = 10 * time.Second

// pick is Place's choice among runners: nil when none fits.
func pick(runners map[string]*Runner, labels []string, loads map[string]int) *Runner {
	var best *Runner
	for _, r := range runners {
		if !fits(r, labels, loads) {
			continue
		}
		if best == nil || cmp.Or(cmp.Compare(loads[r.Name], loads[best.Name]), strings.Compare(r.Name, best.Name)) < 0 {
			best = r
		}
	}
	return best
}

// fits reports whether r is connected, with every label and room.
func fits(r *Runner, labels []string, loads map[string]int) bool {
	return r.connected() && loads[r.Name] < r.Capacity && hasAll(r.Labels, labels)
}

func hasAll(have, want []string) bool {
	for _, l := range want {
		if !slices.Contains(have, l) {
			return false
		}
	}
	return true
}
