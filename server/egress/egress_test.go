package egress

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"conch/server/waittest"
)

// A listed host is reached through the relay and the proxy, whatever the case and a
// trailing dot; bytes sent right after the head are not lost, and each side's end of
// stream reaches the other while the other way still flows.
func TestConnectAllowed(t *testing.T) {
	echo := echoServer(t)
	_, port, _ := net.SplitHostPort(echo)
	addr := "localhost:" + port
	h := start(t, []string{"LocalHost."}, map[string]string{addr: echo})
	c := h.dialProxy(t)
	io.WriteString(c, "CONNECT LOCALHOST.:"+port+" HTTP/1.1\r\nHost: "+addr+"\r\n\r\nping")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT: %v, %v", resp, err)
	}
	if dialed := h.dials(); len(dialed) != 1 || dialed[0] != addr {
		t.Errorf("dialed %q, want [%s]", dialed, addr)
	}
	expect(t, br, "ping")
	io.WriteString(c, "pong")
	expect(t, br, "pong")
	c.(*net.TCPConn).CloseWrite() // the echo server answers "bye" and ends
	rest, err := io.ReadAll(br)
	if err != nil || string(rest) != "bye" {
		t.Errorf("after closing for writing, read %q, %v; want bye and the end", rest, err)
	}
}

// A real HTTPS client reaches a listed host through the relay, verifying its certificate.
func TestHTTPSClient(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello")
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	h := start(t, []string{"example.com"}, map[string]string{"example.com:" + port: srv.Listener.Addr().String()})
	tr := srv.Client().Transport.(*http.Transport).Clone() // trusts srv's certificate, made for example.com
	tr.Proxy = http.ProxyURL(&url.URL{Scheme: "http", Host: h.proxy})
	t.Cleanup(tr.CloseIdleConnections)
	resp, err := (&http.Client{Transport: tr, Timeout: waittest.Limit(t)}).Get("https://example.com:" + port + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if body, err := io.ReadAll(resp.Body); string(body) != "hello" || err != nil {
		t.Errorf("read %q, %v; want hello", body, err)
	}
}

func expect(t *testing.T, r io.Reader, want string) {
	t.Helper()
	got := make([]byte, len(want))
	if _, err := io.ReadFull(r, got); err != nil || string(got) != want {
		t.Fatalf("read %q, %v; want %q", got, err, want)
	}
}

// Whatever is not a CONNECT to a listed host is answered with an error, and only
// allowed hosts are dialed.
func TestRefused(t *testing.T) {
	h := start(t, []string{"localhost", "*.example.com", "down.example"}, nil)
	connect := func(target string) string { return "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n" }
	for _, tc := range []struct {
		name, request string
		status        int
		body          string
	}{
		{"not listed", connect("evil.example:443"), 403, "evil.example is not in the profile's sandbox.network list"},
		{"wildcard's own domain", connect("example.com:443"), 403, "example.com is not"},
		{"address of a listed name", connect("127.0.0.1:443"), 403, "127.0.0.1 is not"},
		{"listed, unreachable", connect("down.example:443"), 502, "dial down.example:443 failed: no route in this test"},
		{"subdomain", connect("a.Example.com:443"), 502, "dial a.example.com:443 failed"},
		{"GET", "GET http://localhost/ HTTP/1.1\r\nHost: localhost\r\n\r\n", 405, "only HTTPS through CONNECT"},
		{"garbage", "\x16\x03\x01\x02\x00 hello\r\n\r\n", 400, "malformed request"},
		{"no port", connect("localhost"), 400, "host:port"},
		{"port 0", connect("localhost:0"), 400, "host:port"},
		{"port too large", connect("localhost:65536"), 400, "host:port"},
		{"no host", connect(":443"), 400, "host:port"},
		{"oversized head", "CONNECT localhost:443 HTTP/1.1\r\nX-Pad: " + strings.Repeat("a", maxHead) + "\r\n\r\n", 431, "larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := h.dialProxy(t)
			io.WriteString(c, tc.request)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.body) || err != nil {
				t.Errorf("got %d %q (%v), want %d with %q", resp.StatusCode, body, err, tc.status, tc.body)
			}
		})
	}
	if dialed := strings.Join(h.dials(), " "); dialed != "down.example:443 a.example.com:443" {
		t.Errorf("dialed %s, want only the allowed hosts", dialed)
	}
	if log := h.log.String(); !strings.Contains(log, "host=evil.example:443 status=403") {
		t.Errorf("no log line of the refusal of evil.example in\n%s", log)
	}
}

func TestAllowed(t *testing.T) {
	for _, tc := range []struct {
		entry, host string
		want        bool
	}{
		{"example.com", "example.com", true},
		{"Example.COM.", "example.com", true},
		{"example.com", "EXAMPLE.com.", true},
		{"example.com", "www.example.com", false},
		{"example.com", "example.com.evil", false},
		{"example.com", "xexample.com", false},
		{"*.example.com", "a.example.com", true},
		{"*.Example.com.", "A.B.example.COM", true},
		{"*.example.com", "example.com", false},
		{"*.example.com", ".example.com", false},
		{"*.example.com", "aexample.com", false},
		{"*.example.com", "example.com.evil", false},
		{"*", "example.com", false},
		{"*example.com", "aexample.com", false},
		{"10.0.0.1", "10.0.0.1", true},
		{"10.0.0.1", "10.0.0.2", false},
		{"*.0.0.1", "10.0.0.1", false},    // a wildcard matches names, not addresses
		{"::1", "0:0:0:0:0:0:0:1", false}, // addresses are matched as text
		{"::1", "::1", true},
		{"example.com", "", false},
	} {
		if got := allowed([]string{normalize(tc.entry)}, normalize(tc.host)); got != tc.want {
			t.Errorf("entry %q, host %q: allowed %v, want %v", tc.entry, tc.host, got, tc.want)
		}
	}
}

// Serve returns once the sandbox's end of the control socket is closed, and closes the
// connections it gave out.
func TestServeEndsWithSandbox(t *testing.T) {
	srv, sandbox, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	done := serve(t, context.Background(), srv)
	uc := relayEnd(t, sandbox)
	c, err := fetch(uc)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	uc.Close()
	within(t, done, "Serve")
	closed(t, c)
}

// Serve returns when its context ends, and closes the connections it gave out.
func TestServeEndsWithContext(t *testing.T) {
	srv, sandbox, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := serve(t, ctx, srv)
	uc := relayEnd(t, sandbox)
	defer uc.Close()
	c, err := fetch(uc)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cancel()
	within(t, done, "Serve")
	closed(t, c)
}

// A relay that sends anything but requests on the control socket ends Serve.
func TestControlGarbage(t *testing.T) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	for _, tc := range []struct {
		name   string
		data   string
		rights []byte
	}{
		{"garbage", "GET / HTTP/1.1\r\n\r\n", nil},
		{"a request, then garbage", "c\x00", nil},
		{"a file with garbage", "\xff", unix.UnixRights(int(null.Fd()))},
		{"a file with a request, then garbage", "cx", unix.UnixRights(int(null.Fd()))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, sandbox, err := Pair()
			if err != nil {
				t.Fatal(err)
			}
			done := serve(t, context.Background(), srv)
			uc := relayEnd(t, sandbox)
			defer uc.Close()
			if _, _, err := uc.WriteMsgUnix([]byte(tc.data), tc.rights, nil); err != nil {
				t.Fatal(err)
			}
			within(t, done, "Serve")
		})
	}
}

// Past maxConns connections at once, a connection is answered 503.
func TestTooManyConnections(t *testing.T) {
	srv, sandbox, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	done := serve(t, context.Background(), srv)
	uc := relayEnd(t, sandbox)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
		uc.Close()
		within(t, done, "Serve")
	}()
	for range maxConns {
		c, err := fetch(uc)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	c, err := fetch(uc)
	if err != nil {
		t.Fatal(err)
	}
	conns = append(conns, c)
	c.SetDeadline(time.Now().Add(waittest.Limit(t)))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("connection %d: %v, %v; want 503", maxConns+1, resp, err)
	}
}

// Relay returns an error, and closes what it accepted, when the server is gone.
func TestRelayEndsWithServer(t *testing.T) {
	srv, sandbox, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	relayed := make(chan struct{})
	var relayErr error
	go func() {
		defer close(relayed)
		relayErr = Relay(sandbox, ln)
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	within(t, relayed, "Relay")
	if relayErr == nil {
		t.Error("Relay returned nil without its server")
	}
	closed(t, c)
}

// harness is a Serve and its Relay on 127.0.0.1.
type harness struct {
	proxy string // the relay's address
	log   *syncBuffer

	mu     sync.Mutex
	dialed []string
}

// start starts a harness whose proxy allows hosts, and whose dial reaches the address
// routes has for the host:port asked, and fails for any other.
func start(t *testing.T, hosts []string, routes map[string]string) *harness {
	h := &harness{log: &syncBuffer{}}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		h.mu.Lock()
		h.dialed = append(h.dialed, addr)
		h.mu.Unlock()
		if to, ok := routes[addr]; ok {
			return (&net.Dialer{}).DialContext(ctx, network, to)
		}
		return nil, errors.New("no route in this test")
	}
	srv, sandbox, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		Serve(context.Background(), srv, hosts, dial, slog.New(slog.NewTextHandler(h.log, nil)))
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.proxy = ln.Addr().String()
	relayed := make(chan struct{})
	var relayErr error
	go func() {
		defer close(relayed)
		relayErr = Relay(sandbox, ln)
	}()
	t.Cleanup(func() {
		ln.Close()
		within(t, relayed, "Relay")
		if relayErr != nil {
			t.Errorf("Relay: %v", relayErr)
		}
		within(t, served, "Serve") // Relay has closed the sandbox's end
	})
	return h
}

func (h *harness) dialProxy(t *testing.T) net.Conn {
	c, err := net.Dial("tcp", h.proxy)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(waittest.Limit(t)))
	t.Cleanup(func() { c.Close() })
	return c
}

func (h *harness) dials() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.dialed...)
}

// echoServer returns the address of a server that sends back what it reads, then "bye"
// when the client has closed for writing, then closes.
func echoServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				io.Copy(c, c)
				io.WriteString(c, "bye")
				c.(*net.TCPConn).CloseWrite()
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return ln.Addr().String()
}

// serve runs Serve on srv with a dial that fails, and returns a channel closed when it
// returns.
func serve(t *testing.T, ctx context.Context, srv *os.File) <-chan struct{} {
	dial := func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("no dialing in this test")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Serve(ctx, srv, []string{"localhost"}, dial, slog.New(slog.DiscardHandler))
	}()
	return done
}

// relayEnd is the sandbox's end of the control socket, for a test to play the relay.
func relayEnd(t *testing.T, sandbox *os.File) *net.UnixConn {
	uc, err := unixConn(sandbox)
	if err != nil {
		t.Fatal(err)
	}
	return uc
}

func within(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(waittest.Limit(t)):
		t.Fatalf("%s has not returned", what)
	}
}

// closed checks that the other end has closed c, whatever it sent before.
func closed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(waittest.Limit(t)))
	if _, err := io.Copy(io.Discard, c); err != nil && !errors.Is(err, unix.ECONNRESET) {
		t.Errorf("the connection was not closed: %v", err)
	}
}

// syncBuffer is a log's output, written by Serve's goroutines and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
