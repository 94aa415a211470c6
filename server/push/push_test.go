package push

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"conch/server/push/pushtest"
	"conch/server/store"
	"conch/server/waittest"
	"conch/shared"
)

// pushService is a push service on 127.0.0.1 that records what it is sent and answers
// each path's status (201 by default).
type pushService struct {
	*httptest.Server
	mu       sync.Mutex
	got      []*http.Request
	bodies   map[string][]byte
	status   map[string]int
	location string // of a redirect's answer
	received chan struct{}
}

func newPushService(t *testing.T) *pushService {
	p := &pushService{bodies: map[string][]byte{}, status: map[string]int{}, received: make(chan struct{}, 16)}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		p.mu.Lock()
		p.got = append(p.got, r)
		p.bodies[r.URL.Path] = body
		status := p.status[r.URL.Path]
		p.mu.Unlock()
		if status == 0 {
			status = http.StatusCreated
		}
		if p.location != "" {
			w.Header().Set("Location", p.location)
		}
		w.WriteHeader(status)
		p.received <- struct{}{}
	}))
	t.Cleanup(p.Close)
	return p
}

// wait returns once a request arrived, or fails the test.
func (p *pushService) wait(t *testing.T) {
	t.Helper()
	select {
	case <-p.received:
	case <-time.After(waittest.Limit(t)):
		t.Fatal("no push request")
	}
}

func (p *pushService) paths() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, r := range p.got {
		out = append(out, r.URL.Path)
	}
	return out
}

func decrypt(t *testing.T, b *pushtest.Browser, body []byte) []byte {
	t.Helper()
	plain, err := b.Decrypt(body)
	if err != nil {
		t.Fatal(err)
	}
	return plain
}

type fixture struct {
	logs    *strings.Builder // the sender's: read after Close, or after a send of the test's own
	st      *store.Store
	push    *pushService
	sender  *Sender
	watch   Events
	next    *recorder
	task    shared.Task
	session shared.Session
}

// recorder is the runtime's own publisher, which must still get everything.
type recorder struct {
	mu    sync.Mutex
	added []shared.Message
	sess  []shared.Session
}

func (r *recorder) MessageAdded(m shared.Message) {
	r.mu.Lock()
	r.added = append(r.added, m)
	r.mu.Unlock()
}
func (r *recorder) MessageUpdated(shared.Message) {}
func (r *recorder) SessionUpdated(s shared.Session) {
	r.mu.Lock()
	r.sess = append(r.sess, s)
	r.mu.Unlock()
}

func newFixture(t *testing.T, owner shared.Account, title string) *fixture {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(filepath.Join(t.TempDir(), "conch.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &fixture{logs: &strings.Builder{}, st: st, push: newPushService(t), next: &recorder{}}
	// The push service is on 127.0.0.1.
	if f.sender, err = New(ctx, Config{Store: st, Contact: "mailto:ops@example.com", Logger: slog.New(slog.NewTextHandler(f.logs, nil)),
		Endpoints: Endpoints{AllowPrivate: true}}); err != nil {
		t.Fatal(err)
	}
	f.watch = f.sender.Watch(f.next)
	if owner.Login != "" {
		if owner, err = st.CreateAccount(ctx, owner.Login, owner.Role, ""); err != nil {
			t.Fatal(err)
		}
	}
	if f.task, err = st.CreateTaskOn(ctx, title, "", "", "", "", owner); err != nil {
		t.Fatal(err)
	}
	if f.session, err = st.CreateSession(ctx, f.task.ID, "shell", t.TempDir()); err != nil {
		t.Fatal(err)
	}
	return f
}

// subscribe stores a browser of a new account (login "" for the server's token).
func (f *fixture) subscribe(t *testing.T, login, role, path string, everyTask bool) *pushtest.Browser {
	t.Helper()
	return f.subscribeTo(t, login, role, f.push.URL+path, everyTask)
}

// subscribeTo stores, as subscribe does, a browser whose endpoint is any URL: no check
// is made, as if the subscription were older than the checks.
func (f *fixture) subscribeTo(t *testing.T, login, role, endpoint string, everyTask bool) *pushtest.Browser {
	t.Helper()
	ctx := context.Background()
	b, err := pushtest.NewBrowser(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	var acc shared.Account
	if login != "" {
		if acc, _, err = f.st.AccountByLogin(ctx, login); store.IsNoSuchLogin(err) {
			acc, err = f.st.CreateAccount(ctx, login, role, "")
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.st.Subscribe(ctx, acc.ID, "", b.Subscription(everyTask)); err != nil {
		t.Fatal(err)
	}
	return b
}

// A permission request reaches the task's owner and a viewer who asked for every task,
// encrypted to each browser, signed with the database's VAPID key; a member who neither
// owns nor edits the task is not told.
func TestPermissionRequestReachesWatchers(t *testing.T) {
	f := newFixture(t, shared.Account{Login: "ann", Role: shared.RoleMember}, "Fix the \u202egnp.login page")
	ann := f.subscribe(t, "ann", "", "/ann", false)
	f.subscribe(t, "vic", shared.RoleViewer, "/vic", true)
	f.subscribe(t, "bob", shared.RoleMember, "/bob", false)
	f.sender.Start()
	long := strings.Repeat("rm -rf ", 100)
	f.watch.MessageAdded(shared.Message{ID: "m1", SessionID: f.session.ID, TaskID: f.task.ID, Type: shared.TypePermissionRequest,
		Content: long, Metadata: &shared.Metadata{Status: shared.StatusPending}})
	f.push.wait(t)
	f.sender.Close() // after the event under way: every watcher has been sent to

	if len(f.next.added) != 1 {
		t.Errorf("the runtime's publisher got %d messages, want 1", len(f.next.added))
	}
	if got := strings.Join(f.push.paths(), " "); got != "/ann /vic" {
		t.Fatalf("sent to %q, want the owner and the viewer of every task: \"/ann /vic\"", got)
	}
	r := f.push.got[0]
	for header, want := range map[string]string{"TTL": "86400", "Urgency": "high", "Content-Encoding": "aes128gcm"} {
		if got := r.Header.Get(header); got != want {
			t.Errorf("%s: %q, want %q", header, got, want)
		}
	}
	if topic := r.Header.Get("Topic"); len(topic) == 0 || len(topic) > 32 {
		t.Errorf("Topic %q: want 1 to 32 base64url characters", topic)
	}
	checkVAPID(t, f, r.Header.Get("Authorization"))

	var n shared.PushNotification
	if err := json.Unmarshal(decrypt(t, ann, f.push.bodies["/ann"]), &n); err != nil {
		t.Fatal(err)
	}
	want := shared.PushNotification{Title: "Fix the ⟨U+202E⟩gnp.login page", Body: "Asks permission: " + long[:bodyBytes],
		Path: "/sessions/" + f.session.ID, Tag: "conch-" + f.session.ID}
	if n != want {
		t.Errorf("payload\n%+v\nwant\n%+v", n, want)
	}
}

// An agent's question reaches the task's owner as a permission request does, in its own
// words.
func TestQuestionReachesWatchers(t *testing.T) {
	f := newFixture(t, shared.Account{Login: "ann", Role: shared.RoleMember}, "Pick a name")
	ann := f.subscribe(t, "ann", "", "/ann", false)
	f.sender.Start()
	f.watch.MessageAdded(shared.Message{ID: "m1", SessionID: f.session.ID, TaskID: f.task.ID, Type: shared.TypeElicitation,
		Content: "Which name?", Metadata: &shared.Metadata{Status: shared.StatusPending}})
	f.push.wait(t)
	f.sender.Close()
	var n shared.PushNotification
	if err := json.Unmarshal(decrypt(t, ann, f.push.bodies["/ann"]), &n); err != nil {
		t.Fatal(err)
	}
	if n.Body != "Asks a question: Which name?" || n.Path != "/sessions/"+f.session.ID {
		t.Errorf("payload %+v", n)
	}
}

// checkVAPID checks the Authorization header: a JWT for the push service's origin signed
// by the key it names, which is the database's.
func checkVAPID(t *testing.T, f *fixture, header string) {
	t.Helper()
	tok, k, ok := strings.Cut(strings.TrimPrefix(header, "vapid t="), ", k=")
	if !ok || !strings.HasPrefix(header, "vapid t=") {
		t.Fatalf("Authorization %q: want vapid t=…, k=…", header)
	}
	_, public, err := f.st.VAPIDKeys(context.Background(), func() (string, string, error) { panic("the keys were made") })
	if err != nil {
		t.Fatal(err)
	}
	if k != public || k != f.sender.PublicKey() {
		t.Errorf("k=%s, want the database's public key %s", k, public)
	}
	raw, err := base64.RawURLEncoding.DecodeString(k)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), raw)
	if err != nil {
		t.Fatal(err)
	}
	claims := jwt.MapClaims{}
	if _, err := jwt.ParseWithClaims(tok, claims, func(*jwt.Token) (any, error) { return pub, nil },
		jwt.WithValidMethods([]string{"ES256"}), jwt.WithAudience(f.push.URL), jwt.WithExpirationRequired()); err != nil {
		t.Fatalf("VAPID JWT: %v", err)
	}
	if claims["sub"] != "mailto:ops@example.com" {
		t.Errorf("sub %v", claims["sub"])
	}
}

// A turn that ends is sent to the token's browser for the token's task, with a shorter
// life; a push service that answers 410 Gone loses the subscription.
func TestTurnEndAndGoneSubscription(t *testing.T) {
	f := newFixture(t, shared.Account{}, "Tidy")
	tok := f.subscribe(t, "", "", "/token", false)
	f.push.status["/token"] = http.StatusGone
	f.sender.Start()
	sess := f.session
	sess.State = shared.SessionReady
	f.watch.SessionUpdated(sess) // ready at start: no turn ended
	sess.State = shared.SessionRunning
	f.watch.SessionUpdated(sess)
	sess.State, sess.LastStopReason = shared.SessionReady, shared.StopMaxTokens
	f.watch.SessionUpdated(sess)
	f.push.wait(t)
	f.sender.Close()

	if got := strings.Join(f.push.paths(), " "); got != "/token" {
		t.Fatalf("sent to %q, want one notice to /token", got)
	}
	if ttl := f.push.got[0].Header.Get("TTL"); ttl != "3600" {
		t.Errorf("TTL %s, want 3600", ttl)
	}
	var n shared.PushNotification
	if err := json.Unmarshal(decrypt(t, tok, f.push.bodies["/token"]), &n); err != nil {
		t.Fatal(err)
	}
	if n.Body != "The agent's turn ended: max_tokens" || n.Title != "Tidy" {
		t.Errorf("payload %+v", n)
	}
	subs, err := f.st.Watchers(context.Background(), f.task.ID)
	if err != nil || len(subs) != 0 {
		t.Errorf("after 410 the watchers are %v (%v), want none", subs, err)
	}
}

// Publishing never waits for the push services: past the queue's bound, events are
// dropped, and the runtime's publisher still gets each.
func TestFullQueueDrops(t *testing.T) {
	f := newFixture(t, shared.Account{}, "Busy") // not started: nothing takes from the queue
	m := shared.Message{SessionID: f.session.ID, TaskID: f.task.ID, Type: shared.TypePermissionRequest,
		Metadata: &shared.Metadata{Status: shared.StatusPending}}
	for range queueSize + 10 {
		f.watch.MessageAdded(m)
	}
	if len(f.sender.queue) != queueSize || len(f.next.added) != queueSize+10 {
		t.Errorf("queue %d (want %d), published %d (want %d)", len(f.sender.queue), queueSize, len(f.next.added), queueSize+10)
	}
	f.sender.Close()
}
