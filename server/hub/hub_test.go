package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"conch/server/waittest"
	"conch/shared"
)

var t0 = time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)

func newHub(queue int) *Hub {
	return New(Config{QueueSize: queue, Now: func() time.Time { return t0 }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

func msg(session, id, content string) shared.Message {
	return shared.Message{ID: id, SessionID: session, TaskID: "t", AuthorType: shared.AuthorAgent, Type: shared.TypeMessage, Content: content, CreatedAt: t0, UpdatedAt: t0}
}

// decoded is a frame as a client would read it.
type decoded struct {
	Action  string
	Type    string
	Content string
	ID      string
}

func drain(t *testing.T, c *Client) []decoded {
	t.Helper()
	var out []decoded
	for _, raw := range c.Take() {
		var env shared.Envelope
		if err := json.Unmarshal(raw, &env); err != nil {
			t.Fatalf("frame %s: %v", raw, err)
		}
		if !env.Timestamp.Equal(t0) {
			t.Errorf("timestamp %v, want the hub clock %v", env.Timestamp, t0)
		}
		var m shared.Message
		if err := json.Unmarshal(env.Payload, &m); err != nil {
			t.Fatalf("payload %s: %v", env.Payload, err)
		}
		out = append(out, decoded{Action: env.Action, Type: env.Type, Content: m.Content, ID: m.ID})
	}
	return out
}

func TestOnlySubscribersOfTheSessionReceive(t *testing.T) {
	h := newHub(8)
	a, b, none := h.Connect(Who{}), h.Connect(Who{}), h.Connect(Who{})
	defer a.Close()
	defer b.Close()
	defer none.Close()
	a.Subscribe("s1")
	b.Subscribe("s2")

	h.MessageAdded(msg("s1", "m1", "for s1"))
	h.MessageUpdated(msg("s2", "m2", "for s2"))
	h.SessionUpdated(shared.Session{ID: "s1", State: shared.SessionRunning})

	gotA := drain(t, a)
	if len(gotA) != 2 || gotA[0] != (decoded{shared.ActionMessageAdded, shared.EnvelopeNotification, "for s1", "m1"}) ||
		gotA[1].Action != shared.ActionSessionUpdated || gotA[1].ID != "s1" {
		t.Errorf("subscriber of s1 got %+v", gotA)
	}
	if gotB := drain(t, b); len(gotB) != 1 || gotB[0] != (decoded{shared.ActionMessageUpdated, shared.EnvelopeNotification, "for s2", "m2"}) {
		t.Errorf("subscriber of s2 got %+v", gotB)
	}
	if got := drain(t, none); len(got) != 0 {
		t.Errorf("unsubscribed client got %+v", got)
	}
}

func TestUnsubscribeStopsDelivery(t *testing.T) {
	h := newHub(8)
	c := h.Connect(Who{})
	defer c.Close()
	c.Subscribe("s1")
	c.Subscribe("s2")
	c.Unsubscribe("s1")
	h.MessageAdded(msg("s1", "m1", "gone"))
	h.MessageAdded(msg("s2", "m2", "kept"))
	if got := drain(t, c); len(got) != 1 || got[0].ID != "m2" {
		t.Errorf("got %+v, want only m2", got)
	}
	if n := h.Subscribers("s1"); n != 0 {
		t.Errorf("s1 has %d subscribers after unsubscribe", n)
	}
}

// A deleted session's subscribers are told once, and then hear nothing more of it.
func TestSessionDeletedTellsAndUnsubscribes(t *testing.T) {
	h := newHub(8)
	c, other := h.Connect(Who{}), h.Connect(Who{})
	defer c.Close()
	defer other.Close()
	c.Subscribe("s1")
	c.Subscribe("s2")
	other.Subscribe("s2")
	h.SessionDeleted("s1")
	h.MessageAdded(msg("s1", "m1", "after the delete"))
	h.MessageAdded(msg("s2", "m2", "kept"))
	got := drain(t, c)
	if len(got) != 2 || got[0].Action != shared.ActionSessionDeleted || got[1].ID != "m2" {
		t.Errorf("got %+v, want session.deleted then only m2", got)
	}
	if n := h.Subscribers("s1"); n != 0 {
		t.Errorf("s1 has %d subscribers after its delete", n)
	}
	if got := drain(t, other); len(got) != 1 || got[0].ID != "m2" {
		t.Errorf("a subscriber of another session got %+v", got)
	}
}

func TestPendingUpdatesCoalesceLatestWins(t *testing.T) {
	h := newHub(8)
	slow := h.Connect(Who{})
	defer slow.Close()
	slow.Subscribe("s1")

	h.MessageAdded(msg("s1", "m1", "added"))
	for i := range 100 {
		h.MessageUpdated(msg("s1", "m1", fmt.Sprintf("update %d", i)))
		h.MessageUpdated(msg("s1", "m2", fmt.Sprintf("other %d", i)))
	}
	h.MessageAdded(msg("s1", "m3", "later"))

	select {
	case <-slow.Done():
		t.Fatal("a client whose updates coalesce must not be dropped")
	default:
	}
	got := drain(t, slow)
	want := []decoded{
		{shared.ActionMessageAdded, shared.EnvelopeNotification, "added", "m1"},
		{shared.ActionMessageUpdated, shared.EnvelopeNotification, "update 99", "m1"},
		{shared.ActionMessageUpdated, shared.EnvelopeNotification, "other 99", "m2"},
		{shared.ActionMessageAdded, shared.EnvelopeNotification, "later", "m3"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}

	// Once taken, an update is new again rather than merged into a frame already written.
	h.MessageUpdated(msg("s1", "m1", "after take"))
	if got := drain(t, slow); len(got) != 1 || got[0].Content != "after take" {
		t.Errorf("after take got %+v", got)
	}
}

func TestFullQueueDisconnectsOnlyTheSlowClient(t *testing.T) {
	h := newHub(4)
	slow, fast := h.Connect(Who{}), h.Connect(Who{})
	defer fast.Close()
	slow.Subscribe("s1")
	fast.Subscribe("s1")

	for i := range 5 { // one more distinct message than the queue holds
		h.MessageAdded(msg("s1", fmt.Sprintf("m%d", i), "x"))
		if got := drain(t, fast); len(got) != 1 {
			t.Fatalf("fast client got %d frames for message %d", len(got), i)
		}
	}
	select {
	case <-slow.Done():
	default:
		t.Fatal("slow client not disconnected after its queue overflowed")
	}
	if !errors.Is(slow.Err(), ErrSlow) {
		t.Errorf("cause %v, want ErrSlow", slow.Err())
	}
	if n := h.Subscribers("s1"); n != 1 {
		t.Errorf("s1 has %d subscribers, want only the fast one", n)
	}
	if slow.Send([]byte(`{}`)) {
		t.Error("Send succeeded on a dropped client")
	}
	slow.Subscribe("s1") // a dropped client stays out
	if n := h.Subscribers("s1"); n != 1 {
		t.Errorf("resubscribing a dropped client added it back (%d subscribers)", n)
	}
	slow.Close() // harmless after a drop
	if !errors.Is(slow.Err(), ErrSlow) {
		t.Errorf("Close replaced the cause: %v", slow.Err())
	}

	h.MessageAdded(msg("s1", "m9", "still flowing"))
	if got := drain(t, fast); len(got) != 1 || got[0].ID != "m9" {
		t.Errorf("fast client after the drop got %+v", got)
	}
}

// A client is also dropped when its pending frames pass the byte bound, though it has
// fewer frames than the frame bound; a single large frame still reaches an idle client.
func TestQueueBoundedInBytes(t *testing.T) {
	h := New(Config{QueueSize: 100, QueueBytes: 10 << 10, Now: func() time.Time { return t0 }, Logger: slog.New(slog.DiscardHandler)})
	slow, fast := h.Connect(Who{}), h.Connect(Who{})
	defer fast.Close()
	slow.Subscribe("s1")
	fast.Subscribe("s1")
	big := strings.Repeat("x", 4<<10)
	for i := range 3 { // 12 KiB of frames in all
		h.MessageAdded(msg("s1", fmt.Sprintf("m%d", i), big))
		if got := drain(t, fast); len(got) != 1 {
			t.Fatalf("fast client got %d frames for message %d", len(got), i)
		}
	}
	if !errors.Is(slow.Err(), ErrSlow) {
		t.Fatalf("slow client with 12 KiB pending: %v, want ErrSlow", slow.Err())
	}
	h.MessageAdded(msg("s1", "huge", strings.Repeat("y", 20<<10)))
	if got := drain(t, fast); len(got) != 1 || got[0].ID != "huge" {
		t.Errorf("an idle client did not get a frame over the bound: %+v", got)
	}
}

func TestResponsesAreNeverCoalesced(t *testing.T) {
	h := newHub(2)
	c := h.Connect(Who{})
	defer c.Close()
	if !c.Send([]byte(`1`)) || !c.Send([]byte(`1`)) {
		t.Fatal("Send refused below the bound")
	}
	select {
	case <-c.Ready():
	default:
		t.Fatal("Ready not signalled after Send")
	}
	if c.Send([]byte(`3`)) {
		t.Fatal("Send accepted past the bound")
	}
	if !errors.Is(c.Err(), ErrSlow) {
		t.Errorf("cause %v, want ErrSlow", c.Err())
	}
}

func TestCloseUnsubscribesEverywhere(t *testing.T) {
	h := newHub(8)
	c := h.Connect(Who{})
	c.Subscribe("s1")
	c.Subscribe("s2")
	c.Close()
	if !errors.Is(c.Err(), ErrClosed) {
		t.Errorf("cause %v, want ErrClosed", c.Err())
	}
	if h.Subscribers("s1")+h.Subscribers("s2") != 0 {
		t.Error("closed client still subscribed")
	}
	h.MessageAdded(msg("s1", "m1", "x")) // must not panic or block
	if got := c.Take(); len(got) != 0 {
		t.Errorf("closed client received %d frames", len(got))
	}
}

// TestPublishUnderConcurrency is for the race detector: publishers, a subscriber churning,
// and a writer draining all at once.
func TestPublishUnderConcurrency(t *testing.T) {
	h := newHub(16)
	c := h.Connect(Who{})
	c.Subscribe("s1")
	stop := make(chan struct{})
	drained := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-c.Ready():
				n += len(c.Take())
			case <-stop:
				drained <- n + len(c.Take())
				return
			}
		}
	}()
	done := make(chan struct{})
	for p := range 4 {
		go func() {
			for i := range 200 {
				h.MessageUpdated(msg("s1", fmt.Sprintf("m%d", i%8), fmt.Sprint(p)))
			}
			done <- struct{}{}
		}()
	}
	for range 50 {
		c.Unsubscribe("s1")
		c.Subscribe("s1")
	}
	for range 4 {
		<-done
	}
	close(stop)
	if n := <-drained; n == 0 {
		t.Error("writer drained nothing")
	}
	c.Close()
}

func TestCloseDisconnectsEveryClient(t *testing.T) {
	h := newHub(8)
	subscribed, idle := h.Connect(Who{}), h.Connect(Who{})
	subscribed.Subscribe("s1")
	h.Close()
	for _, c := range []*Client{subscribed, idle, h.Connect(Who{})} {
		select {
		case <-c.Done():
		default:
			t.Fatal("client still open after the hub closed")
		}
		if !errors.Is(c.Err(), ErrShutdown) {
			t.Errorf("cause %v, want ErrShutdown", c.Err())
		}
	}
	if h.Subscribers("s1") != 0 {
		t.Error("subscriptions survive Close")
	}
	h.MessageAdded(msg("s1", "m1", "x")) // reaches no one, blocks nothing
}

// BenchmarkPublish200Subscribers: one message.updated fanned out to 200 clients of a
// session (encoded once), each drained by its writer.
func BenchmarkPublish200Subscribers(b *testing.B) {
	h := newHub(DefaultQueueSize)
	clients := make([]*Client, 200)
	for i := range clients {
		clients[i] = h.Connect(Who{})
		clients[i].Subscribe("s1")
	}
	m := msg("s1", "m1", "a command finished")
	b.ReportAllocs()
	for b.Loop() {
		h.MessageUpdated(m)
		for _, c := range clients {
			c.Take()
		}
	}
}

// A task read for task.updated just before its deletion is not sent after its task.deleted:
// the list would show the deleted task again.
func TestTaskDeletedWhileRead(t *testing.T) {
	reading, release := make(chan string), make(chan struct{})
	h := New(Config{QueueSize: 8, Now: func() time.Time { return t0 }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Task: func(_ context.Context, id string) (shared.Task, error) {
			reading <- id
			<-release
			return shared.Task{ID: id, Title: id}, nil
		}})
	c := h.Connect(Who{})
	defer c.Close()
	c.SubscribeTasks()
	deadline := time.After(waittest.Limit(t))
	read := func(want string) {
		select {
		case id := <-reading:
			if id != want {
				t.Fatalf("read %s, want %s", id, want)
			}
		case <-deadline:
			t.Fatalf("%s never read", want)
		}
	}
	h.TaskChanged("t1")
	read("t1") // t1 is read, as it was before its deletion
	h.TaskDeleted("t1")
	h.TaskChanged("t2")
	close(release)
	read("t2")
	var got []string
	for !slices.Contains(got, shared.ActionTaskUpdated+" t2") {
		select {
		case <-c.Ready():
		case <-deadline:
			t.Fatalf("t2's update never came: %v", got)
		}
		for _, raw := range c.Take() {
			var env shared.Envelope
			var ref struct {
				ID     string `json:"id"`
				TaskID string `json:"task_id"`
			}
			if json.Unmarshal(raw, &env) != nil || json.Unmarshal(env.Payload, &ref) != nil {
				t.Fatalf("frame %s", raw)
			}
			got = append(got, env.Action+" "+ref.ID+ref.TaskID)
		}
	}
	if want := []string{shared.ActionTaskDeleted + " t1", shared.ActionTaskUpdated + " t2"}; !slices.Equal(got, want) {
		t.Errorf("frames %v, want %v", got, want)
	}
}
