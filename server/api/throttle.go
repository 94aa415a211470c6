package api

import (
	"net/netip"
	"sync"
	"time"
)

// Wrong tokens slow down the address they come from: after its n-th wrong token an
// address must wait min(firstDelay·2^(n-1), maxDelay) before its next wrong token counts
// (checkToken: the right token is never kept waiting, and forgives nothing). An address
// without wrong tokens for forgetAfter past its wait starts again from nothing; at most
// maxClients addresses are remembered (the one whose wait ended first is forgotten).
const (
	firstDelay  = time.Second
	maxDelay    = 5 * time.Minute
	forgetAfter = time.Hour
	maxClients  = 10000
)

type throttle struct {
	now func() time.Time

	mu      sync.Mutex
	clients map[netip.Addr]*strikes
}

type strikes struct {
	failures int
	until    time.Time // no attempt counts before this
}

func newThrottle(now func() time.Time) *throttle {
	return &throttle{now: now, clients: map[netip.Addr]*strikes{}}
}

// clientKey is whom a failure counts against: an IPv4 address, or the /64 of an IPv6 one
// (one host commonly holds a whole /64).
func clientKey(addr netip.Addr) netip.Addr {
	addr = addr.Unmap()
	if addr.Is6() {
		p, _ := addr.Prefix(64)
		return p.Addr()
	}
	return addr
}

// wait reports how long addr must still wait before an attempt counts (0: it may try now).
func (t *throttle) wait(addr netip.Addr) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.clients[clientKey(addr)]; s != nil {
		return max(s.until.Sub(t.now()), 0)
	}
	return 0
}

// failed counts one failed attempt of addr and returns its failures in a row and the wait
// it has earned.
func (t *throttle) failed(addr netip.Addr) (int, time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now, key := t.now(), clientKey(addr)
	s := t.clients[key]
	if s != nil && now.After(s.until.Add(forgetAfter)) {
		s = nil
	}
	if s == nil {
		t.makeRoom(now)
		s = &strikes{}
		t.clients[key] = s
	}
	s.failures++
	delay := maxDelay
	if s.failures <= 20 { // 2^20 s is far past maxDelay
		delay = min(firstDelay<<(s.failures-1), maxDelay)
	}
	s.until = now.Add(delay)
	return s.failures, delay
}

// makeRoom keeps the table under maxClients: forgotten addresses go first, then the one
// whose wait ended first.
func (t *throttle) makeRoom(now time.Time) {
	if len(t.clients) < maxClients {
		return
	}
	var oldest netip.Addr
	for key, s := range t.clients {
		if now.After(s.until.Add(forgetAfter)) {
			delete(t.clients, key)
		} else if !oldest.IsValid() || s.until.Before(t.clients[oldest].until) {
			oldest = key
		}
	}
	if len(t.clients) >= maxClients {
		delete(t.clients, oldest)
	}
}
