// Package egress is how a sandbox with network hosts reaches its listed hosts and
// nothing else: an HTTP CONNECT proxy in the server, reached from the sandbox's network
// namespace (only a loopback) through one unix socket the sandbox inherits.
//
// The sandbox's ns-init runs Relay: it listens on the namespace's loopback and, per
// connection it accepts, asks the server for a connection to the proxy on its control
// socket (Pair). The server's Serve answers each request with one end of a new
// socketpair, on whose other end it serves the proxy with that session's host list. No
// other sandbox holds the control socket, so none can use another's list.
//
// The control protocol: the relay writes the byte request for each connection it
// wants; the server answers each, in order, with the byte request carrying one file
// descriptor (SCM_RIGHTS). Any other byte from the relay ends Serve. Fds the relay might
// send are never installed in the server: Serve reads with read(2), so the kernel drops
// them.
package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// request is the one byte of the control protocol, both ways.
const request = 'c'

const (
	maxHead     = 8 << 10          // bytes of a CONNECT request's head
	headTimeout = 10 * time.Second // for the head to arrive
	dialTimeout = 10 * time.Second
	// writeTimeout bounds writing an answer to the relay, which reads it as it comes.
	writeTimeout = 10 * time.Second
	// lingerTimeout bounds how long a refused connection waits for the client to close.
	lingerTimeout = 2 * time.Second
	maxConns      = 256 // proxied connections at once, per Serve
)

// Pair makes the control socket of one sandbox: server's end stays in the server (Serve),
// sandbox's end is given to ns-init as an inherited fd (exec.Cmd.ExtraFiles), where
// Relay uses it. Both are close-on-exec. The caller closes its copy of sandbox's end once
// the child has started: Serve sees the socket close only when every copy is closed.
func Pair() (server, sandbox *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("egress: socketpair: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "egress-server"), os.NewFile(uintptr(fds[1]), "egress-sandbox"), nil
}

// Serve answers the relay at the other end of ctrl until ctrl is closed or ctx ends: per
// request, a new connection on which a CONNECT proxy allows only hosts, on any port
// (1-65535). An entry matches a host case-insensitively, one trailing dot aside;
// "*.example.com" matches every subdomain of example.com but not example.com itself, nor
// an IP address; an IP address (IPv6 without brackets) matches only the same text. dial
// reaches an allowed host (nil: a net.Dialer). At most 256 connections are proxied at
// once; more are answered 503.
//
// Serve closes ctrl, and returns once every connection it proxied has been closed. log
// gets one line per refused or failed CONNECT (host, reason), never what a connection
// carries.
func Serve(ctx context.Context, ctrl *os.File, hosts []string, dial func(ctx context.Context, network, addr string) (net.Conn, error), log *slog.Logger) {
	uc, err := unixConn(ctrl)
	if err != nil {
		log.Error("egress: control socket", "err", err)
		return
	}
	defer uc.Close()
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	p := &proxy{dial: dial, log: log}
	for _, h := range hosts {
		p.hosts = append(p.hosts, normalize(h))
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // closes every proxied connection
	context.AfterFunc(ctx, func() { uc.Close() })
	slots := make(chan struct{}, maxConns)
	buf := make([]byte, 64)
	for {
		n, err := uc.Read(buf)
		if err != nil {
			return // the sandbox has ended, or ctx
		}
		for _, b := range buf[:n] {
			if b != request {
				log.Warn("egress: unexpected byte on the control socket, stopping", "byte", b)
				return
			}
			c, err := give(uc)
			if err != nil {
				if ctx.Err() == nil {
					log.Error("egress: control socket", "err", err)
				}
				return
			}
			select {
			case slots <- struct{}{}:
				wg.Go(func() {
					defer func() { <-slots }()
					p.serve(ctx, c)
				})
			default:
				p.refuse(c, "", http.StatusServiceUnavailable, fmt.Sprintf("too many connections (at most %d at once)", maxConns))
				c.Close()
			}
		}
	}
}

// give answers one request on uc: it makes a socketpair, sends one end and returns the
// other.
func give(uc *net.UnixConn) (net.Conn, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socketpair: %w", err)
	}
	defer unix.Close(fds[1]) // sent or not, the server keeps no copy
	c, err := fileConn(fds[0])
	if err != nil {
		return nil, err
	}
	if _, _, err := uc.WriteMsgUnix([]byte{request}, unix.UnixRights(fds[1]), nil); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Relay (in the sandbox's ns-init) accepts on ln and, per connection, gets a connection to
// the proxy through ctrl and copies both ways. It returns when ln is closed (nil) or ctrl
// fails, after closing ctrl, ln and every connection it relayed.
func Relay(ctrl *os.File, ln net.Listener) error {
	defer ln.Close()
	uc, err := unixConn(ctrl)
	if err != nil {
		return fmt.Errorf("egress relay: %w", err)
	}
	defer uc.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	// Requests are made one at a time, here, so each answer is the last request's.
	for {
		c, err := ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("egress relay: %w", err)
		}
		up, err := fetch(uc)
		if err != nil {
			c.Close()
			return fmt.Errorf("egress relay: %w", err)
		}
		wg.Go(func() { join(ctx, c, up) })
	}
}

// fetch asks the server on uc for a connection to the proxy.
func fetch(uc *net.UnixConn) (net.Conn, error) {
	if _, err := uc.Write([]byte{request}); err != nil {
		return nil, err
	}
	b := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4)) // room for one fd
	n, oobn, flags, _, err := uc.ReadMsgUnix(b, oob)
	var fds []int
	if msgs, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil {
		for _, m := range msgs {
			got, _ := unix.ParseUnixRights(&m)
			fds = append(fds, got...)
		}
	}
	switch {
	case err != nil:
	case n == 0:
		err = io.EOF
	case b[0] != request || len(fds) != 1 || flags&unix.MSG_CTRUNC != 0:
		err = errors.New("unexpected answer on the control socket")
	default:
		return fileConn(fds[0])
	}
	for _, fd := range fds {
		unix.Close(fd)
	}
	return nil, err
}

// unixConn returns a connection on a duplicate of f's socket, and closes f.
func unixConn(f *os.File) (*net.UnixConn, error) {
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		return nil, err
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, errors.New("not a unix socket")
	}
	return uc, nil
}

// fileConn returns a connection on the socket fd, which it takes over.
func fileConn(fd int) (net.Conn, error) {
	f := os.NewFile(uintptr(fd), "egress")
	defer f.Close()
	return net.FileConn(f)
}

// proxy is the CONNECT proxy of one Serve.
type proxy struct {
	hosts []string // normalized
	dial  func(ctx context.Context, network, addr string) (net.Conn, error)
	log   *slog.Logger
}

// serve reads one CONNECT request on c and, if its host is allowed and answers, joins c
// to it; otherwise it answers with an error. It closes c.
func (p *proxy) serve(ctx context.Context, c net.Conn) {
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	refuse := func(host string, status int, reason string) {
		p.refuse(c, host, status, reason)
		linger(c)
	}
	c.SetReadDeadline(time.Now().Add(headTimeout))
	head := &io.LimitedReader{R: c, N: maxHead}
	br := bufio.NewReader(head)
	req, err := http.ReadRequest(br)
	switch {
	case err == nil:
	case head.N == 0:
		refuse("", http.StatusRequestHeaderFieldsTooLarge, fmt.Sprintf("request head larger than %d bytes", maxHead))
		return
	case errors.Is(err, os.ErrDeadlineExceeded):
		refuse("", http.StatusRequestTimeout, fmt.Sprintf("no request head within %v", headTimeout))
		return
	case err == io.EOF:
		return // closed before a word: nothing to answer
	default:
		refuse("", http.StatusBadRequest, "malformed request")
		return
	}
	if req.Method != http.MethodConnect {
		refuse(req.Host, http.StatusMethodNotAllowed, "only HTTPS through CONNECT is proxied")
		return
	}
	host, port, err := net.SplitHostPort(req.RequestURI)
	n, perr := strconv.ParseUint(port, 10, 16)
	if err != nil || host == "" || perr != nil || n == 0 {
		refuse("", http.StatusBadRequest, "CONNECT wants host:port, with a port from 1 to 65535")
		return
	}
	host = normalize(host)
	addr := net.JoinHostPort(host, strconv.FormatUint(n, 10))
	if !allowed(p.hosts, host) {
		refuse(addr, http.StatusForbidden, host+" is not in the profile's sandbox.network list")
		return
	}
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	up, err := p.dial(dctx, "tcp", addr)
	cancel()
	if err != nil {
		refuse(addr, http.StatusBadGateway, "dial "+addr+" failed: "+err.Error())
		return
	}
	defer up.Close()
	stopUp := context.AfterFunc(ctx, func() { up.Close() })
	defer stopUp()
	c.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		return
	}
	// Bytes the client sent after the head (it need not wait for the answer) go first.
	early, _ := br.Peek(br.Buffered())
	if _, err := up.Write(early); err != nil {
		return
	}
	c.SetDeadline(time.Time{})
	join(ctx, c, up)
}

// linger closes c for writing and reads what the client sends until it closes, for a
// moment at most: closing with unread data would reset the connection on its way to the
// client, which could lose the answer just written.
func linger(c net.Conn) {
	closeWrite(c)
	c.SetReadDeadline(time.Now().Add(lingerTimeout))
	io.CopyN(io.Discard, c, maxHead)
}

// refuse answers c with status and a plain-text body saying reason, and logs it; host is
// the request's target, when known.
func (p *proxy) refuse(c net.Conn, host string, status int, reason string) {
	p.log.Info("egress refused", "host", host, "status", status, "reason", reason)
	body := "conch egress proxy: " + reason + "\n"
	allow := ""
	if status == http.StatusMethodNotAllowed {
		allow = "Allow: CONNECT\r\n"
	}
	c.SetWriteDeadline(time.Now().Add(writeTimeout))
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\n%sContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, http.StatusText(status), allow, len(body), body)
}

// normalize returns a host name as it is matched: lower case, without a trailing dot.
func normalize(host string) string {
	return strings.TrimSuffix(strings.ToLower(host), ".")
}

// allowed reports whether the normalized host matches one of the normalized hosts.
func allowed(hosts []string, host string) bool {
	for _, h := range hosts {
		if suffix, ok := strings.CutPrefix(h, "*"); ok && strings.HasPrefix(suffix, ".") {
			if len(host) > len(suffix) && strings.HasSuffix(host, suffix) && net.ParseIP(host) == nil {
				return true
			}
		} else if host == h {
			return true
		}
	}
	return false
}

// join copies both ways between a and b until both directions have ended, passing the
// end of each on as a half-close. An error either way, or ctx ending, closes both, which
// ends the other way too. It closes a and b.
func join(ctx context.Context, a, b net.Conn) {
	stop := context.AfterFunc(ctx, func() { a.Close(); b.Close() })
	defer stop()
	done := make(chan struct{})
	go func() {
		defer close(done)
		pipe(a, b)
	}()
	pipe(b, a)
	<-done
	a.Close()
	b.Close()
}

// pipe copies src to dst until src ends, then closes dst for writing.
func pipe(dst, src net.Conn) {
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		src.Close()
		return
	}
	closeWrite(dst)
}

// closeWrite closes c for writing, or closes it if it cannot half-close (a connection
// from a dial func).
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	} else {
		c.Close()
	}
}
