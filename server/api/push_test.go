package api

import (
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"conch/server/push"
	"conch/server/push/pushtest"
	"conch/server/task"
	"conch/shared"
)

// withPush turns push on, with push services whose names resolve with no network.
func withPush(c *Config) {
	c.PushKey = "BPublicKeyOfTheDatabase"
	c.PushEndpoints = push.Endpoints{Resolver: pushtest.Resolver{
		"push.example": {pushtest.PublicAddr},
		"localhost":    {netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")},
	}}
}

// subscriptionJSON is a browser's PushSubscription.toJSON() for endpoint, with valid keys.
func subscriptionJSON(t *testing.T, endpoint string, everyTask bool) string {
	key, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	return fmt.Sprintf(`{"endpoint":%q,"expirationTime":null,"keys":{"p256dh":%q,"auth":%q},"every_task":%v}`,
		endpoint, enc(key.PublicKey().Bytes()), enc([]byte("0123456789abcdef")), everyTask)
}

// A viewer subscribes its browser for every task and is among the task's watchers until
// it signs out; what no browser would send is refused and stores nothing.
func TestPushSubscriptions(t *testing.T) {
	e := newEnv(t, withToken, withPush)
	ctx := context.Background()
	for _, login := range []string{"vic", "mia"} {
		if _, err := e.store.CreateAccount(ctx, login, shared.RoleViewer, task.HashPassword("correct horse battery")); err != nil {
			t.Fatal(err)
		}
	}
	vic, mia := e.signInAs("vic", "correct horse battery"), e.signInAs("mia", "correct horse battery")
	task, err := e.store.CreateTask(ctx, "Someone else's", "")
	if err != nil {
		t.Fatal(err)
	}
	var key shared.PushServerKey
	e.expect(http.StatusOK, "GET", "/api/v1/push/key", "", &key, "Cookie", vic)
	if key.PublicKey != "BPublicKeyOfTheDatabase" {
		t.Errorf("key %+v", key)
	}

	endpoint := "https://push.example/send/abc"
	good := subscriptionJSON(t, endpoint, true)
	for _, bad := range []string{
		subscriptionJSON(t, "http://push.example/send/abc", true), // not https
		subscriptionJSON(t, "https://push.example/"+strings.Repeat("a", 1100), true),
		subscriptionJSON(t, "https://user@push.example/x", true),
		subscriptionJSON(t, "file:///etc/passwd", true),
		strings.Replace(good, `"auth":"`, `"auth":"AA`, 1),      // 18 bytes
		strings.Replace(good, `"p256dh":"B`, `"p256dh":"C`, 1),  // not a point
		strings.Replace(good, `"every_task"`, `"everyTask"`, 1), // unknown key
	} {
		e.expect(http.StatusBadRequest, "POST", "/api/v1/push/subscriptions", bad, nil, "Cookie", vic)
	}
	if subs, _ := e.store.Watchers(ctx, task.ID); len(subs) != 0 {
		t.Fatalf("refused subscriptions stored: %v", subs)
	}

	var done shared.PushSubscribed
	e.expect(http.StatusCreated, "POST", "/api/v1/push/subscriptions", good, &done, "Cookie", vic)
	if done.Endpoint != endpoint || !done.EveryTask {
		t.Errorf("answer %+v", done)
	}
	e.expect(http.StatusCreated, "POST", "/api/v1/push/subscriptions", subscriptionJSON(t, "https://push.example/mia", false), nil, "Cookie", mia)
	if subs, _ := e.store.Watchers(ctx, task.ID); len(subs) != 1 || subs[0].Endpoint != endpoint {
		t.Fatalf("watchers %v, want vic's browser only (mia asked for her own tasks)", subs)
	}
	e.expect(http.StatusNotFound, "DELETE", "/api/v1/push/subscriptions", fmt.Sprintf(`{"endpoint":%q}`, endpoint), nil, "Cookie", mia)

	if resp, _ := e.do("POST", "/logout", "", "Cookie", vic, "Origin", "http://127.0.0.1:8080"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout: %d", resp.StatusCode)
	}
	if subs, _ := e.store.Watchers(ctx, task.ID); len(subs) != 0 {
		t.Errorf("after sign-out the watchers are %v, want none", subs)
	}
	vic = e.signInAs("vic", "correct horse battery")
	e.expect(http.StatusCreated, "POST", "/api/v1/push/subscriptions", good, nil, "Cookie", vic)
	e.expect(http.StatusNoContent, "DELETE", "/api/v1/push/subscriptions", fmt.Sprintf(`{"endpoint":%q}`, endpoint), nil, "Cookie", vic)
	if subs, _ := e.store.Watchers(ctx, task.ID); len(subs) != 0 {
		t.Errorf("after unsubscribing the watchers are %v, want none", subs)
	}
}

// A subscription must name a push service on the internet: the server sends to it, so
// an endpoint of this host or its network would have it forge requests there. Each is
// refused, and stores nothing; --push-allow-private (for tests) lets 127.0.0.1 in.
func TestPushSubscriptionPrivateEndpoints(t *testing.T) {
	e := newEnv(t, withPush)
	task, err := e.store.CreateTask(context.Background(), "Mine", "")
	if err != nil {
		t.Fatal(err)
	}
	const public = ", not a public address: push services are on the internet"
	for _, c := range []struct{ endpoint, message string }{
		{"http://push.example/x", "endpoint must be an https URL, as the browser's push service gives it"},
		{"http://127.0.0.1:9/x", "endpoint must be an https URL, as the browser's push service gives it"},
		{"https://127.0.0.1:9/x", "endpoint's host 127.0.0.1 is not a public address: push services are on the internet"},
		{"https://[::1]/x", "endpoint's host ::1 is not a public address: push services are on the internet"},
		{"https://[::ffff:127.0.0.1]/x", "endpoint's host ::ffff:127.0.0.1 is not a public address: push services are on the internet"},
		{"https://169.254.169.254/latest/meta-data", "endpoint's host 169.254.169.254 is not a public address: push services are on the internet"},
		{"https://10.0.0.1/x", "endpoint's host 10.0.0.1 is not a public address: push services are on the internet"},
		{"https://192.168.1.1/x", "endpoint's host 192.168.1.1 is not a public address: push services are on the internet"},
		{"https://100.64.0.1/x", "endpoint's host 100.64.0.1 is not a public address: push services are on the internet"},
		{"https://[fd00::1]/x", "endpoint's host fd00::1 is not a public address: push services are on the internet"},
		{"https://localhost/x", "endpoint's host localhost is at 127.0.0.1" + public},
		{"https://nowhere.example/x", "endpoint's host nowhere.example does not resolve"},
	} {
		want, _ := json.Marshal(shared.ErrorBody{Error: c.message, Code: shared.CodeInvalid})
		if got := e.expect(http.StatusBadRequest, "POST", "/api/v1/push/subscriptions", subscriptionJSON(t, c.endpoint, false), nil); got != string(want) {
			t.Errorf("%s: %s, want %s", c.endpoint, got, want)
		}
	}
	if subs, _ := e.store.Watchers(context.Background(), task.ID); len(subs) != 0 {
		t.Fatalf("refused subscriptions stored: %v", subs)
	}

	allowed := newEnv(t, withPush, func(c *Config) { c.PushEndpoints.AllowPrivate = true })
	allowed.expect(http.StatusCreated, "POST", "/api/v1/push/subscriptions", subscriptionJSON(t, "http://127.0.0.1:9/x", false), nil)
}

// An account keeps at most store.MaxPushSubscriptions browsers: the oldest goes.
func TestPushSubscriptionsBounded(t *testing.T) {
	e := newEnv(t, withPush) // no token: everyone is the local admin, one person
	task, err := e.store.CreateTask(context.Background(), "Mine", "")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		e.expect(http.StatusCreated, "POST", "/api/v1/push/subscriptions", subscriptionJSON(t, fmt.Sprintf("https://push.example/%02d", i), false), nil)
	}
	subs, err := e.store.Watchers(context.Background(), task.ID)
	if err != nil || len(subs) != 10 || subs[0].Endpoint != "https://push.example/02" {
		t.Errorf("watchers %v (%v): want the newest 10, from 02", subs, err)
	}
}

// A server without push answers 404 on its routes.
func TestPushOff(t *testing.T) {
	e := newEnv(t)
	e.expect(http.StatusNotFound, "GET", "/api/v1/push/key", "", nil)
	e.expect(http.StatusNotFound, "POST", "/api/v1/push/subscriptions", subscriptionJSON(t, "https://push.example/x", false), nil)
}
