package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"conch/shared"

	"github.com/coder/websocket"
)

// conch is a running `conch serve` on 127.0.0.1 with its own database, or another server
// started the same way (the open loop's baseline).
type conch struct {
	URL    string // http://127.0.0.1:PORT
	DB     string // the database file it serves
	PID    int
	cmd    *exec.Cmd
	stderr *tailBuffer
	exited chan struct{} // closed once the server has exited and been reaped
}

// startConch starts bin/conch on a free loopback port and waits for its "listening on"
// line; flags go to serve as given.
func startConch(ctx context.Context, bin, db string, flags ...string) (*conch, error) {
	cmd := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--db", db}, flags...)...)
	// A crash's own line, not its goroutine dump, is what the stderr tail must keep.
	cmd.Env = append(os.Environ(), "CONCH_TOKEN=", "CONCH_AGENTS=", "GOTRACEBACK=none")
	c, err := startServer(ctx, cmd)
	if c != nil {
		c.DB = db
	}
	return c, err
}

// startServer starts cmd, a server that prints "listening on URL" on its stdout, and waits
// for that line.
func startServer(ctx context.Context, cmd *exec.Cmd) (*conch, error) {
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c, err := launch(cmd)
	if err != nil {
		return nil, err
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	for {
		select {
		case line := <-lines:
			if u, ok := strings.CutPrefix(line, "listening on "); ok {
				c.URL = u
				return c, nil
			}
		case <-c.exited:
			return nil, fmt.Errorf("%s exited before listening: %s", cmd.Path, c.stderr)
		case <-timer.C:
			c.stop()
			return nil, fmt.Errorf("%s did not start within 30s: %s", cmd.Path, c.stderr)
		case <-ctx.Done():
			c.stop()
			return nil, ctx.Err()
		}
	}
}

// launch starts cmd, a conch process, in a process group of its own, so that stopping it
// also ends the commands it runs; its stderr's tail is kept for error messages.
func launch(cmd *exec.Cmd) (*conch, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A child that inherited its stderr must not keep Wait, and so stop, waiting.
	cmd.WaitDelay = 2 * time.Second
	c := &conch{cmd: cmd, stderr: &tailBuffer{max: 8 << 10}, exited: make(chan struct{})}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c.PID = cmd.Process.Pid
	go func() { _ = cmd.Wait(); close(c.exited) }()
	return c, nil
}

// stop ends the server (SIGTERM, then SIGKILL after 10 s) and the process group it leads.
// A server that already died is only reaped.
func (c *conch) stop() {
	select {
	case <-c.exited:
		return
	default:
	}
	_ = syscall.Kill(-c.PID, syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-c.PID, syscall.SIGKILL)
		<-c.exited
	}
}

// get fetches path and returns the body; any status but 200 is an error.
func (c *conch) get(ctx context.Context, path string) ([]byte, error) {
	return c.do(ctx, http.MethodGet, path, nil, http.StatusOK)
}

// post sends a JSON body and decodes the answer into out.
func (c *conch) post(ctx context.Context, path string, in, out any, want int) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	raw, err := c.do(ctx, http.MethodPost, path, body, want)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, out)
}

func (c *conch) do(ctx context.Context, method, path string, body []byte, want int) ([]byte, error) {
	status, raw, err := c.try(ctx, method, path, body)
	if err != nil {
		return nil, err
	}
	if status != want {
		return nil, fmt.Errorf("%s %s: %d %s: %s", method, path, status, http.StatusText(status), raw)
	}
	return raw, nil
}

// try sends one request and returns the answer's status and body, whatever the status.
func (c *conch) try(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.URL+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, err
}

// startShellSession creates a task and a session of the built-in shell agent.
func (c *conch) startShellSession(ctx context.Context, title string) (shared.Session, error) {
	return c.startSession(ctx, title, "shell", os.TempDir())
}

// startSession creates a task and a session of agent in cwd, ready for a prompt.
func (c *conch) startSession(ctx context.Context, title, agent, cwd string) (shared.Session, error) {
	var task shared.Task
	if err := c.post(ctx, "/api/v1/tasks", map[string]string{"title": title}, &task, http.StatusCreated); err != nil {
		return shared.Session{}, err
	}
	var sess shared.Session
	if err := c.post(ctx, "/api/v1/tasks/"+task.ID+"/sessions", map[string]string{"agent": agent, "cwd": cwd},
		&sess, http.StatusCreated); err != nil {
		return shared.Session{}, err
	}
	if sess.State != shared.SessionReady {
		return shared.Session{}, fmt.Errorf("%s session is %s: %s", agent, sess.State, sess.Error)
	}
	return sess, nil
}

// wsClient is one WebSocket connection to /ws. Frames are read by the caller.
type wsClient struct {
	conn *websocket.Conn
	next int
}

func (c *conch) dialWS(ctx context.Context) (*wsClient, error) {
	return c.dialWSWith(ctx, nil)
}

func (c *conch) dialWSWith(ctx context.Context, opts *websocket.DialOptions) (*wsClient, error) {
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(c.URL, "http")+"/ws", opts)
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(64 << 20)
	return &wsClient{conn: conn}, nil
}

func (w *wsClient) close() { _ = w.conn.Close(websocket.StatusNormalClosure, "") }

// request sends one request and returns the raw response frame, skipping notifications.
func (w *wsClient) request(ctx context.Context, action string, payload any) ([]byte, error) {
	w.next++
	id := fmt.Sprint(w.next)
	raw, err := json.Marshal(payload)
	if err != nil {
		return nil, err
	}
	req, err := json.Marshal(shared.Envelope{ID: id, Type: shared.EnvelopeRequest, Action: action, Payload: raw, Timestamp: time.Now().UTC()})
	if err != nil {
		return nil, err
	}
	if err := w.conn.Write(ctx, websocket.MessageText, req); err != nil {
		return nil, err
	}
	for {
		_, frame, err := w.conn.Read(ctx)
		if err != nil {
			return nil, err
		}
		var env shared.Envelope
		if err := json.Unmarshal(frame, &env); err != nil {
			return nil, err
		}
		if env.ID != id {
			continue
		}
		if env.Type != shared.EnvelopeResponse {
			return nil, fmt.Errorf("ws %s: %s", action, env.Payload)
		}
		return frame, nil
	}
}

// tailBuffer keeps the last max bytes written to it, for error messages.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = t.buf[over:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
