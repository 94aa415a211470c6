package push

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"

	"conch/shared"
)

// Endpoints says which push endpoints the server sends to: https URLs of hosts whose
// every address is public. Any account, a viewer's included, names an endpoint, so
// without this a subscription would have the server POST to its own network: a loopback
// service, a cloud's metadata address, a private host. Check runs when a browser
// subscribes; Client checks again on every connection, and connects only to the
// addresses it checked (a name looked up a second time may answer otherwise: DNS
// rebinding). The zero value is the strict one.
type Endpoints struct {
	// AllowPrivate lets endpoints be http URLs and hosts on loopback, private, link-local
	// and every other address that is not public: for test setups whose push service
	// listens on 127.0.0.1 (--push-allow-private).
	AllowPrivate bool
	// Resolver looks host names up; net.DefaultResolver when nil.
	Resolver Resolver
}

// Resolver is what Endpoints asks of *net.Resolver.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// lookupTimeout bounds the lookup of a subscribing browser's push service.
const lookupTimeout = 5 * time.Second

// Check refuses an endpoint the server would not send to, with a shared.CodeInvalid error
// that says why.
func (e Endpoints) Check(ctx context.Context, endpoint string) error {
	u, err := e.parse(endpoint)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	_, err = e.resolve(ctx, u.Hostname())
	return err
}

// parse checks what the endpoint's URL says, before any lookup.
func (e Endpoints) parse(endpoint string) (*url.URL, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" || u.User != nil || u.Fragment != "" ||
		!(u.Scheme == "https" || u.Scheme == "http" && e.AllowPrivate) {
		return nil, shared.Errorf(shared.CodeInvalid, "endpoint must be an https URL, as the browser's push service gives it")
	}
	return u, nil
}

// resolve looks host up and returns its addresses if every one may be sent to.
func (e Endpoints) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		if !e.allowed(a) {
			return nil, shared.Errorf(shared.CodeInvalid, "endpoint's host %s is not a public address: push services are on the internet", host)
		}
		return []netip.Addr{a}, nil
	}
	r := e.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return nil, fmt.Errorf("push endpoint: %v: %w", err, shared.Errorf(shared.CodeInvalid, "endpoint's host %s does not resolve", host))
	}
	for _, a := range addrs {
		if !e.allowed(a) {
			return nil, shared.Errorf(shared.CodeInvalid, "endpoint's host %s is at %s, not a public address: push services are on the internet", host, a)
		}
	}
	return addrs, nil
}

func (e Endpoints) allowed(a netip.Addr) bool { return e.AllowPrivate || public(a) }

// Client sends to push services: it connects only to addresses resolve allowed, and
// follows no redirect (a push service answers 201; a redirect is a failed delivery).
// HTTP_PROXY and HTTPS_PROXY are not used: the address checked must be the one reached.
func (e Endpoints) Client(timeout time.Duration) *http.Client {
	dialer := &net.Dialer{Control: func(_, address string, _ syscall.RawConn) error {
		// The last word, on the address the socket connects to.
		if a, err := netip.ParseAddrPort(address); err != nil || !e.allowed(a.Addr()) {
			return fmt.Errorf("push: %s is not a public address", address)
		}
		return nil
	}}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.Proxy = nil
	transport.DialContext = func(ctx context.Context, network, address string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(address)
		if err != nil {
			return nil, err
		}
		addrs, err := e.resolve(ctx, host)
		if err != nil {
			return nil, err
		}
		var errs []error
		for _, a := range addrs {
			conn, err := dialer.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
			if err == nil {
				return conn, nil
			}
			errs = append(errs, err)
		}
		return nil, errors.Join(errs...)
	}
	return &http.Client{Timeout: timeout, Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// public reports whether a is an address on the internet: not loopback, private
// (10/8, 172.16/12, 192.168/16, fc00::/7), link-local, unspecified, multicast or
// reserved, nor an IPv6 form of such an IPv4 address.
func public(a netip.Addr) bool {
	a = embedded(a.WithZone("").Unmap())
	if !a.IsGlobalUnicast() || a.IsPrivate() {
		return false
	}
	for _, p := range reserved {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// embedded is the IPv4 address an IPv6 one reaches through a translator or tunnel that
// carries it (NAT64's well-known prefix, 6to4), or a itself.
func embedded(a netip.Addr) netip.Addr {
	b := a.As16()
	switch {
	case nat64.Contains(a):
		return netip.AddrFrom4([4]byte(b[12:16]))
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte(b[2:6]))
	}
	return a
}

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// reserved are the ranges that netip's methods do not name and that no push service is in
// (IANA's special-purpose address registries).
var reserved = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // this network
	netip.MustParsePrefix("100.64.0.0/10"),   // shared address space (carrier-grade NAT)
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved
	netip.MustParsePrefix("::/96"),           // IPv4-compatible (deprecated)
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("2001::/23"),       // IETF protocol assignments, Teredo among them
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("3fff::/20"),       // documentation
	netip.MustParsePrefix("fec0::/10"),       // site-local (deprecated)
}
