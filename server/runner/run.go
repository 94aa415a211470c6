package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/hashicorp/yamux"

	"conch/server/acp"
	"conch/shared"
)

// ConnectPath is the route a runner dials, below the server's URL.
const ConnectPath = "/api/v1/runners/connect"

// The runner's wait between attempts to connect: doubled after each failure, from the
// first to the last, and back to the first once connected.
const (
	firstRetry = time.Second
	lastRetry  = 30 * time.Second
)

// Options are what `conch runner` was asked for.
type Options struct {
	Server string // the server's base URL, http:// or https://
	Token  string // a runner token (POST /api/v1/runners/tokens)
	Hello
	// Machine runs the server's operations (acp.Local: this host, its sandboxes under
	// the runner's directory).
	Machine acp.Machine
	Logger  *slog.Logger
}

// Run connects to the server and serves the streams it opens until ctx is done, dialling
// again after each loss with a bounded backoff. It opens no listening socket. A refusal
// that trying again cannot change (a wrong or revoked token, a bad announcement) ends it.
func Run(ctx context.Context, o Options) error {
	if err := shared.CheckRunner(o.Name, o.Labels, o.Capacity); err != nil {
		return err
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	u, err := connectURL(o.Server, o.Hello)
	if err != nil {
		return err
	}
	wait := firstRetry
	for {
		connected, err := session(ctx, u, o)
		var refused refusal
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.As(err, &refused):
			return err
		case connected:
			wait = firstRetry
		}
		o.Logger.Warn("runner: not connected; trying again", "server", o.Server, "in", wait, "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = min(2*wait, lastRetry)
	}
}

// refusal is the server's answer to a connection that trying again cannot change.
type refusal struct {
	status int
	text   string
}

func (r refusal) Error() string {
	return fmt.Sprintf("the server refused this runner (%d): %s", r.status, r.text)
}

// connectURL is the connect route of server, with the runner's announcement.
func connectURL(server string, h Hello) (string, error) {
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("--server %q is not an http:// or https:// URL", server)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + ConnectPath
	u.RawQuery = url.Values{"name": {h.Name}, "labels": {strings.Join(h.Labels, ",")}, "capacity": {strconv.Itoa(h.Capacity)}}.Encode()
	return u.String(), nil
}

// session is one connection: it dials, then accepts the server's streams until the
// connection ends. connected says whether the server took it.
func session(ctx context.Context, u string, o Options) (connected bool, err error) {
	dialCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ws, resp, err := websocket.Dial(dialCtx, u, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + o.Token}}})
	if err != nil {
		if resp != nil && (resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
			return false, refusal{resp.StatusCode, errorText(resp)}
		}
		return false, err
	}
	conn := websocket.NetConn(ctx, ws, websocket.MessageBinary)
	cfg := yamux.DefaultConfig()
	cfg.KeepAliveInterval = DefaultHeartbeat // a server gone silent is dialled again
	cfg.ConnectionWriteTimeout = DefaultHeartbeat
	cfg.LogOutput = nil
	cfg.Logger = slog.NewLogLogger(o.Logger.Handler(), slog.LevelWarn)
	mux, err := yamux.Server(conn, cfg)
	if err != nil {
		conn.Close()
		return true, err
	}
	defer mux.Close()
	o.Logger.Info("runner: connected", "server", o.Server, "name", o.Name)
	go func() {
		select {
		case <-ctx.Done():
			mux.Close()
		case <-mux.CloseChan():
		}
	}()
	for {
		stream, err := mux.Accept()
		if err != nil {
			return true, err
		}
		go acp.ServeMachine(ctx, stream, o.Machine)
	}
}

// errorText is the server's {"error"} of a refused connection, bounded.
func errorText(resp *http.Response) string {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		return e.Error // at most 1 KiB: the body read
	}
	return http.StatusText(resp.StatusCode)
}
