package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/coder/websocket"

	"conch/shared"
)

// pagePrompts is how many prompts the wire-cost page holds: each is a person's message,
// the command the shell agent runs for it and the agent's reply.
const pagePrompts = 20

// prompts measures what a page of 20 prompts costs on the wire, REST and WebSocket, with
// and without compression: bytes read from the socket for the answer, headers included.
func (b *bench) prompts(ctx context.Context) error {
	srv, err := startConch(ctx, b.conchBin, filepath.Join(b.tmp, "prompts.db"))
	if err != nil {
		return err
	}
	defer srv.stop()
	sess, err := srv.startShellSession(ctx, "prompts")
	if err != nil {
		return err
	}
	for i := range pagePrompts {
		command := []string{"ls -la /etc | head -n 20", "echo build step %d done", "seq 1 %d00 | wc -l", "uname -s"}[i%4]
		if strings.Contains(command, "%d") {
			command = fmt.Sprintf(command, i+1)
		}
		if err := srv.prompt(ctx, sess.ID, command, 3*(i+1)); err != nil {
			return err
		}
	}
	n := 3 * pagePrompts
	path := fmt.Sprintf("/api/v1/task-sessions/%s/messages?limit=%d", sess.ID, n)
	b.r.h(2, "A page of prompts on the wire")
	b.r.p("A session of %d prompts run by the built-in shell agent (each a person's message, the command and the "+
		"agent's reply: %d messages), listed whole, as the REST list and as the WebSocket `message.list`. Bytes are "+
		"those read from the socket for the answer, HTTP or frame headers included; *JSON* is the answer's body as "+
		"decoded. The browser offers `br` and permessage-deflate, and gets both.", pagePrompts, n)
	var rows [][]string
	var plain int
	for _, accept := range []string{"identity", "gzip", "br"} {
		wire, body, err := srv.wireGet(ctx, path, accept)
		if err != nil {
			return err
		}
		plain = body
		rows = append(rows, []string{"REST, Accept-Encoding: " + accept, fmt.Sprint(body), fmt.Sprint(wire), perPrompt(wire)})
		if accept == "br" {
			b.goals.promptBytes = float64(wire) / pagePrompts
		}
	}
	for _, mode := range []websocket.CompressionMode{websocket.CompressionDisabled, websocket.CompressionNoContextTakeover} {
		wire, frame, err := srv.wireList(ctx, sess.ID, n, mode)
		if err != nil {
			return err
		}
		name := "WebSocket, uncompressed"
		if mode != websocket.CompressionDisabled {
			name = "WebSocket, permessage-deflate"
		}
		rows = append(rows, []string{name, fmt.Sprint(frame), fmt.Sprint(wire), perPrompt(wire)})
	}
	b.r.table([]string{"answer", "JSON (B)", "on the wire (B)", "per prompt on the wire"}, rows)

	raw, err := srv.get(ctx, path)
	if err != nil {
		return err
	}
	rep, err := repeated(raw)
	if err != nil {
		return err
	}
	b.r.p("What the uncompressed page (%d B, %s per prompt) spends on fields that repeat what the page or the message "+
		"already says; candidates for a later version of the contract, all kept now:", plain, perPrompt(plain))
	b.r.table([]string{"repeated field", "bytes in the page", "per prompt"}, rep)
	return nil
}

func perPrompt(n int) string { return fmt.Sprintf("%.0f B", float64(n)/pagePrompts) }

// prompt sends one prompt and waits until the session holds want messages and is ready again.
func (c *conch) prompt(ctx context.Context, sessionID, content string, want int) error {
	var msg shared.Message
	if err := c.post(ctx, "/api/v1/task-sessions/"+sessionID+"/messages", shared.AddRequest{Content: content},
		&msg, http.StatusAccepted); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var sess shared.Session
		raw, err := c.get(ctx, "/api/v1/task-sessions/"+sessionID)
		if err == nil {
			err = json.Unmarshal(raw, &sess)
		}
		var page shared.MessagePage
		if err == nil {
			raw, err = c.get(ctx, fmt.Sprintf("/api/v1/task-sessions/%s/messages?limit=500", sessionID))
		}
		if err == nil {
			err = json.Unmarshal(raw, &page)
		}
		if err != nil {
			return err
		}
		if sess.State == shared.SessionReady && page.Total >= int64(want) {
			return nil
		}
		time.Sleep(50 * time.Millisecond) // a benchmark's wait for the agent, not a test's
	}
	return fmt.Errorf("prompt %q: the turn did not end within 30 s", content)
}

// counted counts the bytes read from the connections its dialer makes.
type counted struct{ n atomic.Int64 }

func (c *counted) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	return countedConn{conn, &c.n}, err
}

type countedConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// wireGet fetches path once on a fresh connection, offering accept, and returns the bytes
// read from the socket and the decoded body's length.
func (c *conch) wireGet(ctx context.Context, path, accept string) (wire, body int, err error) {
	var cnt counted
	tr := &http.Transport{DialContext: cnt.dial, DisableCompression: true}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL+path, nil)
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Accept-Encoding", accept)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	plain, err := decoded(resp.Header.Get("Content-Encoding"), raw)
	return int(cnt.n.Load()), len(plain), err
}

// wireList asks for the newest n messages over a WebSocket dialled with mode and returns
// the bytes read from the socket for the response and the response frame's length.
func (c *conch) wireList(ctx context.Context, sessionID string, n int, mode websocket.CompressionMode) (wire, frame int, err error) {
	var cnt counted
	tr := &http.Transport{DialContext: cnt.dial}
	defer tr.CloseIdleConnections()
	ws, err := c.dialWSWith(ctx, &websocket.DialOptions{HTTPClient: &http.Client{Transport: tr}, CompressionMode: mode})
	if err != nil {
		return 0, 0, err
	}
	defer ws.close()
	before := cnt.n.Load()
	f, err := ws.request(ctx, shared.ActionMessageList, shared.ListRequest{SessionID: sessionID, Limit: new(n)})
	return int(cnt.n.Load() - before), len(f), err
}

// repeated measures the fields of a list page that repeat what is said elsewhere.
func repeated(raw []byte) ([][]string, error) {
	var page struct {
		Messages []map[string]json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		return nil, err
	}
	field := func(k string, v json.RawMessage) int { return len(k) + len(v) + 4 } // "k":v,
	var ids, sameTime, command int
	for _, m := range page.Messages {
		ids += field("session_id", m["session_id"]) + field("task_id", m["task_id"])
		if string(m["updated_at"]) == string(m["created_at"]) {
			sameTime += field("updated_at", m["updated_at"])
		}
		var meta struct {
			Title      json.RawMessage `json:"title"`
			Normalized *struct {
				ShellExec *struct {
					Command json.RawMessage `json:"command"`
				} `json:"shell_exec"`
			} `json:"normalized"`
		}
		if err := json.Unmarshal(m["metadata"], &meta); err == nil && meta.Normalized != nil && meta.Normalized.ShellExec != nil {
			cmd := string(meta.Normalized.ShellExec.Command)
			if string(m["content"]) == cmd {
				command += len(cmd)
			}
			if string(meta.Title) == cmd {
				command += len(cmd)
			}
		}
	}
	row := func(name string, n int) []string { return []string{name, fmt.Sprint(n), perPrompt(n)} }
	return [][]string{
		row("`session_id` and `task_id` on every message (the page is one session's)", ids),
		row("`updated_at` equal to `created_at`", sameTime),
		row("the command again as `content` and `metadata.title`", command),
	}, nil
}

// decoded is a body as it was before its Content-Encoding.
func decoded(encoding string, raw []byte) ([]byte, error) {
	switch encoding {
	case "":
		return raw, nil
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(zr)
	case "br":
		return io.ReadAll(brotli.NewReader(bytes.NewReader(raw)))
	}
	return nil, fmt.Errorf("unknown Content-Encoding %q", encoding)
}
