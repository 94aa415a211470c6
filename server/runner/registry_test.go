package runner

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/yamux"

	"conch/server/acp"
	"conch/server/waittest"
	"conch/shared"
)

// fakeStore holds the live sessions of each runner.
type fakeStore struct {
	mu    sync.Mutex
	loads map[string]int
}

func (f *fakeStore) RunnerLoads(context.Context) (map[string]int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.loads), nil
}

// place counts a session placed on runner, as the runtime records it.
func (f *fakeStore) place(runner string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.loads[runner]++
}

// connect serves a runner of hello on g over a pipe whose other end answers as a runner
// does (yamux's server, which answers pings, and is returned); cancel drops it.
func connect(t *testing.T, g *Registry, hello Hello) (cancel func(), served <-chan error, runner *yamux.Session) {
	t.Helper()
	server, end := net.Pipe()
	mux, err := yamux.Server(end, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx, server, hello) }()
	t.Cleanup(func() { stop(); mux.Close() })
	waittest.Until(t, func() bool { return g.connected(hello.Name) })
	return stop, done, mux
}

func (g *Registry) connected(name string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.runners[name]
	return r != nil && r.connected()
}

// Place takes the runner with every label asked for and room, the fewest sessions first,
// then by name, unless the session's own runner is one of those; without labels it falls
// back to this server, with labels it refuses.
func TestPlace(t *testing.T) {
	st := &fakeStore{loads: map[string]int{}}
	g := New(Config{Store: st})
	connect(t, g, Hello{Name: "b", Labels: []string{"gpu", "os=linux"}, Capacity: 2})
	connect(t, g, Hello{Name: "a", Labels: []string{"gpu"}, Capacity: 1})
	dropC, _, _ := connect(t, g, Hello{Name: "c", Labels: []string{"os=linux"}, Capacity: 5})
	connect(t, g, Hello{Name: "d", Labels: []string{"os=linux"}, Capacity: 5})
	ctx := context.Background()
	for i, step := range []struct {
		labels []string
		was    string // the runner the session ran on
		want   string // the runner, "" for this server, or the error
	}{
		{[]string{"gpu"}, "", "a"},             // a and b have 0: by name
		{[]string{"gpu"}, "a", "b"},            // a is full, though the session ran there
		{[]string{"gpu", "os=linux"}, "", "b"}, // only b has both
		{[]string{"gpu"}, "", "no runner with labels gpu has room"},
		{nil, "", ""},                    // no label required: this server, though c has room
		{[]string{"os=linux"}, "", "c"},  // b is full; c and d have 0: by name
		{[]string{"os=linux"}, "c", "c"}, // its own runner, though d has fewer
		{[]string{"os=linux"}, "a", "d"}, // its own runner has not the label
		{[]string{"os=linux", "gpu"}, "", "no runner with labels os=linux, gpu has room"},
		{[]string{"tpu"}, "b", "no runner with labels tpu has room"},
	} {
		r, release, err := g.Place(ctx, step.labels, step.was)
		got := ""
		switch {
		case err != nil:
			got = err.Error()
			if shared.ErrorCode(err) != shared.CodeConflict {
				t.Errorf("step %d: %v", i, err)
			}
		case r != nil:
			got = r.Name
			st.place(r.Name)
		}
		if err == nil {
			release()
		}
		if got != step.want {
			t.Errorf("step %d, labels %q: got %q, want %q", i, step.labels, got, step.want)
		}
	}
	// Once c is gone, nothing has os=linux and room.
	dropC()
	waittest.Until(t, func() bool { return !g.connected("c") })
	if r, _, err := g.Place(ctx, []string{"os=linux"}, "c"); r == nil || r.Name != "d" {
		t.Errorf("with the session's own runner gone: %v, %v", r, err)
	}
	list, err := g.List(ctx)
	if err != nil || len(list) != 4 || list[0].Name != "a" || list[0].Sessions != 1 || !list[1].Connected || list[2].Connected || list[2].Sessions != 2 || list[3].Sessions != 1 {
		t.Errorf("list %+v, %v", list, err)
	}
}

// A place given counts as taken until it is released, before the store counts the
// session there: placements at the same moment do not all take a runner's last place.
func TestPlaceHeld(t *testing.T) {
	st := &fakeStore{loads: map[string]int{}}
	g := New(Config{Store: st})
	connect(t, g, Hello{Name: "a", Labels: []string{"gpu"}, Capacity: 2})
	ctx := context.Background()
	place := func() (string, func()) {
		r, release, err := g.Place(ctx, []string{"gpu"}, "")
		if err != nil {
			return err.Error(), nil
		}
		return r.Name, release
	}
	first, releaseFirst := place()
	second, releaseSecond := place()
	if third, _ := place(); first != "a" || second != "a" || third != "no runner with labels gpu has room" {
		t.Fatalf("three at once on a runner of two: %q, %q, %q", first, second, third)
	}
	st.place("a") // the first is recorded: released, it still counts once
	releaseFirst()
	releaseFirst()
	if third, _ := place(); third != "no runner with labels gpu has room" {
		t.Fatalf("with one recorded and one held: %q", third)
	}
	releaseSecond() // the second was not to be
	if third, release := place(); third != "a" {
		t.Fatalf("with one recorded and the other given back: %q", third)
	} else {
		release()
	}
}

// A runner that stops answering the heartbeat is gone within a heartbeat or two, while
// one that answers stays through many.
func TestHeartbeat(t *testing.T) {
	st := &fakeStore{loads: map[string]int{}}
	g := New(Config{Store: st, Heartbeat: 20 * time.Millisecond})
	_, answering, _ := connect(t, g, Hello{Name: "alive", Capacity: 1})

	server, silent := net.Pipe() // nothing reads the runner's end
	defer silent.Close()
	done := make(chan error, 1)
	go func() { done <- g.Serve(context.Background(), server, Hello{Name: "silent", Capacity: 1}) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "missed its heartbeat") {
			t.Fatalf("silent runner: %v", err)
		}
	case <-time.After(waittest.Limit(t)):
		t.Fatal("a silent runner is still connected")
	}
	if g.connected("silent") {
		t.Error("the silent runner is listed connected")
	}
	list, _ := g.List(context.Background())
	if b, _ := json.Marshal(list[0]); !strings.Contains(string(b), `"labels":[]`) {
		t.Errorf("a runner without labels is listed as %s", b)
	}
	before := list[0].LastSeen
	waittest.Until(t, func() bool { l, _ := g.List(context.Background()); return l[0].LastSeen.After(before) })
	select {
	case err := <-answering:
		t.Fatalf("the answering runner was dropped: %v", err)
	default:
	}
}

// A profile's runner_labels are checked when the agents file is read.
func TestProfileLabels(t *testing.T) {
	for body, problem := range map[string]string{
		`[{"name":"x","command":"c","runner_labels":["gpu","os=linux"]}]`: "",
		`[{"name":"x","command":"c","runner_labels":["GPU"]}]`:            `profile "x": runner_labels: label "GPU"`,
		`[{"name":"x","command":"c","runner_labels":["a","a"]}]`:          `"a" is given twice`,
	} {
		path := t.TempDir() + "/agents.json"
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		ps, err := acp.LoadProfiles(path)
		switch {
		case problem == "" && (err != nil || len(ps) != 2 || len(ps[1].Labels) != 2):
			t.Errorf("%s: %+v, %v", body, ps, err)
		case problem != "" && (err == nil || !strings.Contains(err.Error(), problem)):
			t.Errorf("%s: %v, want %q", body, err, problem)
		}
	}
}

// A runner connecting under the name of a connected one takes its place: the same machine
// back after a cut the server had not noticed yet.
func TestSameNameTakesThePlace(t *testing.T) {
	st := &fakeStore{loads: map[string]int{}}
	g := New(Config{Store: st})
	_, first, _ := connect(t, g, Hello{Name: "r", Labels: []string{"old"}, Capacity: 1})
	connect(t, g, Hello{Name: "r", Labels: []string{"new"}, Capacity: 2})
	select {
	case err := <-first:
		if err == nil || !strings.Contains(err.Error(), "disconnected") {
			t.Fatalf("the first connection ended with %v", err)
		}
	case <-time.After(waittest.Limit(t)):
		t.Fatal("the first connection still runs")
	}
	if l, err := g.List(context.Background()); err != nil || len(l) != 1 || !l[0].Connected || l[0].Labels[0] != "new" || l[0].Capacity != 2 {
		t.Fatalf("list %+v, %v", l, err)
	}
}

// A stream a runner opens of its own is reset, unread, and the runner stays connected:
// it can only answer the streams the server opens for the sessions placed on it. Each
// runner that joins tells Joined (the sessions waiting for one move).
func TestRunnerOpensNoStream(t *testing.T) {
	joined := make(chan struct{}, 1)
	g := New(Config{Store: &fakeStore{loads: map[string]int{}}, Joined: func() { joined <- struct{}{} }})
	_, _, mux := connect(t, g, Hello{Name: "r", Labels: []string{"gpu"}, Capacity: 1})
	select {
	case <-joined:
	case <-time.After(waittest.Limit(t)):
		t.Fatal("Joined was not called")
	}
	s, err := mux.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write([]byte(`{"session":"another runner's","text":"hostile"}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.SetReadDeadline(time.Now().Add(waittest.Limit(t))); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Read(make([]byte, 1)); n != 0 || err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the runner's own stream read %d bytes, %v: not closed by the server", n, err)
	}
	if !g.connected("r") {
		t.Error("the runner was dropped")
	}
}
