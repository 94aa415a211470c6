package push

import (
	"context"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	webpush "github.com/SherClockHolmes/webpush-go"

	"conch/server/push/pushtest"
	"conch/shared"
)

// Only https URLs of hosts whose every address is public are sent to; AllowPrivate
// (--push-allow-private) lets tests use a push service on 127.0.0.1.
func TestPushEndpointsCheck(t *testing.T) {
	resolver := pushtest.Resolver{
		"push.example":     {pushtest.PublicAddr, netip.MustParseAddr("2606:4700::1111")},
		"loopback.example": {netip.MustParseAddr("127.0.0.1")},
		"ula.example":      {netip.MustParseAddr("fd12::1")},
		"partly.example":   {pushtest.PublicAddr, netip.MustParseAddr("10.0.0.1")}, // every address counts
		"empty.example":    {},
	}
	const notHTTPS, notPublic, noSuchHost = "https URL", "not a public address", "does not resolve"
	for _, c := range []struct {
		endpoint string
		private  bool   // AllowPrivate
		system   bool   // looked up by the system's resolver, not the table
		want     string // in the error; "" for none
	}{
		{endpoint: "https://push.example/send/abc"},
		{endpoint: "https://1.1.1.1/x"},
		{endpoint: "https://[2606:4700::1111]:8443/x"},
		{endpoint: "https://[64:ff9b::101:101]/x"}, // NAT64 of 1.1.1.1
		{endpoint: "http://push.example/x", want: notHTTPS},
		{endpoint: "ftp://push.example/x", want: notHTTPS},
		{endpoint: "https://user@push.example/x", want: notHTTPS},
		{endpoint: "https://push.example/x#y", want: notHTTPS},
		{endpoint: "/send/abc", want: notHTTPS},
		{endpoint: "http://127.0.0.1:9/x", want: notHTTPS},
		{endpoint: "https://127.0.0.1/x", want: notPublic},
		{endpoint: "https://127.1.2.3:8080/x", want: notPublic},
		{endpoint: "https://[::1]/x", want: notPublic},
		{endpoint: "https://[::ffff:127.0.0.1]/x", want: notPublic},
		{endpoint: "https://[::ffff:10.0.0.1]/x", want: notPublic},
		{endpoint: "https://[::127.0.0.1]/x", want: notPublic},
		{endpoint: "https://0.0.0.0/x", want: notPublic},
		{endpoint: "https://[::]/x", want: notPublic},
		{endpoint: "https://169.254.169.254/latest/meta-data", want: notPublic},
		{endpoint: "https://[fe80::1%25eth0]/x", want: notPublic},
		{endpoint: "https://10.0.0.1/x", want: notPublic},
		{endpoint: "https://172.16.0.1/x", want: notPublic},
		{endpoint: "https://192.168.1.1/x", want: notPublic},
		{endpoint: "https://100.64.0.1/x", want: notPublic},
		{endpoint: "https://[fd00::1]/x", want: notPublic},
		{endpoint: "https://[fec0::1]/x", want: notPublic},
		{endpoint: "https://224.0.0.1/x", want: notPublic},
		{endpoint: "https://[ff02::1]/x", want: notPublic},
		{endpoint: "https://255.255.255.255/x", want: notPublic},
		{endpoint: "https://192.0.2.1/x", want: notPublic},
		{endpoint: "https://[2001:db8::1]/x", want: notPublic},
		{endpoint: "https://[64:ff9b::7f00:1]/x", want: notPublic},    // NAT64 of 127.0.0.1
		{endpoint: "https://[64:ff9b::a9fe:a9fe]/x", want: notPublic}, // NAT64 of 169.254.169.254
		{endpoint: "https://[2002:a00:1::1]/x", want: notPublic},      // 6to4 of 10.0.0.1
		{endpoint: "https://loopback.example/x", want: notPublic},
		{endpoint: "https://ula.example/x", want: notPublic},
		{endpoint: "https://partly.example/x", want: notPublic},
		{endpoint: "https://localhost/x", system: true, want: notPublic},
		{endpoint: "https://nowhere.example/x", want: noSuchHost},
		{endpoint: "https://empty.example/x", want: noSuchHost},
		{endpoint: "http://127.0.0.1:9/x", private: true},
		{endpoint: "https://169.254.169.254/x", private: true},
		{endpoint: "https://loopback.example/x", private: true},
		{endpoint: "https://localhost/x", private: true, system: true},
		{endpoint: "ftp://127.0.0.1/x", private: true, want: notHTTPS},
		{endpoint: "http://user@127.0.0.1/x", private: true, want: notHTTPS},
	} {
		e := Endpoints{AllowPrivate: c.private, Resolver: resolver}
		if c.system {
			e.Resolver = nil
		}
		err := e.Check(context.Background(), c.endpoint)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s (private allowed: %v): %v, want it accepted", c.endpoint, c.private, err)
		case c.want != "" && (err == nil || !strings.Contains(shared.ErrorMessage(err), c.want) || shared.ErrorCode(err) != shared.CodeInvalid):
			t.Errorf("%s (private allowed: %v): %v, want an invalid error saying %q", c.endpoint, c.private, err, c.want)
		}
	}
}

// A push service's redirect is not followed, neither a 303 (which would be a GET) nor a
// 307 (the POST again), though its target is allowed here (a loopback listener, with
// private addresses allowed): the delivery counts as refused.
func TestPushRedirectNotFollowed(t *testing.T) {
	f := newFixture(t, shared.Account{}, "Redirected")
	target := newPushService(t) // on 127.0.0.1
	f.push.location = target.URL + "/forged"
	f.push.status["/see-other"], f.push.status["/temporary"] = http.StatusSeeOther, http.StatusTemporaryRedirect
	f.subscribe(t, "", "", "/see-other", false)
	f.subscribe(t, "", "", "/temporary", false)
	f.sender.send(event{taskID: f.task.ID, sessionID: f.session.ID, body: "b", urgency: webpush.UrgencyNormal, ttl: time.Minute})

	got := f.push.paths()
	slices.Sort(got)
	if strings.Join(got, " ") != "/see-other /temporary" {
		t.Fatalf("the push service got %v, want /see-other and /temporary", got)
	}
	if got := target.paths(); len(got) != 0 {
		t.Errorf("the redirect was followed: its target got %v", got)
	}
	for _, status := range []string{"status=303", "status=307"} {
		if !strings.Contains(f.logs.String(), "push: refused") || !strings.Contains(f.logs.String(), status) {
			t.Errorf("the log says no refusal with %s:\n%s", status, f.logs)
		}
	}
}

// answers is a resolver whose answers change: each lookup gets the next, the last again.
type answers struct {
	mu   sync.Mutex
	list [][]netip.Addr
}

func (a *answers) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	next := a.list[0]
	if len(a.list) > 1 {
		a.list = a.list[1:]
	}
	return next, nil
}

// A name that resolves to a private address when the server connects is not connected
// to, whether its subscription was stored unchecked or its name resolved to a public
// address when it was checked (DNS rebinding). Private addresses allowed, the same
// subscription connects: the test would see it.
func TestPushConnectChecksAddresses(t *testing.T) {
	loopback := []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	for _, c := range []struct {
		name      string
		answers   [][]netip.Addr
		private   bool
		checked   bool // subscribed through Check, which passed
		connected bool
	}{
		{name: "stored unchecked", answers: [][]netip.Addr{loopback}},
		{name: "rebound after the check", answers: [][]netip.Addr{{pushtest.PublicAddr}, loopback}, checked: true},
		{name: "private allowed", answers: [][]netip.Addr{loopback}, private: true, checked: true, connected: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, shared.Account{}, "Rebound")
			var conns atomic.Int32
			// TLS, so that a connection shows before the client's request ends: its
			// handshake waits for the server, which counts it first.
			service := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusCreated)
			}))
			service.Config.ErrorLog = log.New(io.Discard, "", 0) // the client does not trust its certificate
			service.Config.ConnState = func(_ net.Conn, state http.ConnState) {
				if state == http.StateNew {
					conns.Add(1)
				}
			}
			service.StartTLS()
			t.Cleanup(service.Close)
			_, port, _ := net.SplitHostPort(service.Listener.Addr().String())
			endpoint := "https://push.example:" + port + "/rebound"

			e := Endpoints{AllowPrivate: c.private, Resolver: &answers{list: c.answers}}
			if c.checked {
				if err := e.Check(context.Background(), endpoint); err != nil {
					t.Fatalf("Check: %v", err)
				}
			}
			var err error
			if f.sender, err = New(context.Background(), Config{Store: f.st, Logger: slog.New(slog.NewTextHandler(f.logs, nil)), Endpoints: e}); err != nil {
				t.Fatal(err)
			}
			f.subscribeTo(t, "", "", endpoint, false)
			f.sender.send(event{taskID: f.task.ID, sessionID: f.session.ID, body: "b", urgency: webpush.UrgencyNormal, ttl: time.Minute})

			if n := conns.Load(); (n > 0) != c.connected {
				t.Errorf("%d connections, want them: %v", n, c.connected)
			}
			if !c.connected && !strings.Contains(f.logs.String(), "not a public address") {
				t.Errorf("the log does not say why:\n%s", f.logs)
			}
		})
	}
}
