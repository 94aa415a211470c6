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
	"path/filepath"
	"strings"
	"testing"
	"time"

	"conch/server/acp"
	"conch/server/acp/acptest"
	"conch/server/internal/pgtest"
	"conch/server/waittest"
	"conch/shared"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/coder/websocket"
)

// TestMain lets the test binary play `conch agent shell`, the built-in agent the server
// starts as a child process of its own executable, and, with CONCH_TEST_AGENT=modes, a
// third-party agent that offers two session modes; with CONCH_TEST_AGENT=resume, one
// that can resume (resumerScripts).
func TestMain(m *testing.M) {
	if os.Getenv("CONCH_TEST_AGENT") == "modes" {
		modes := &sdk.SessionModeState{CurrentModeId: "ask", AvailableModes: []sdk.SessionMode{{Id: "ask", Name: "Ask"}, {Id: "code", Name: "Code"}}}
		if err := acptest.Run(context.Background(), os.Stdin, os.Stdout, acptest.Config{Modes: modes}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if os.Getenv("CONCH_TEST_AGENT") == "resume" {
		if err := acptest.Run(context.Background(), os.Stdin, os.Stdout, acptest.Config{Scripts: resumerScripts, Resume: true}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if len(os.Args) == 3 && os.Args[1] == "agent" || len(os.Args) > 1 && os.Args[1] == acp.NamespaceInitArg {
		if err := run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(pgtest.Main(m))
}

// startServer runs `conch serve` in process on 127.0.0.1:0 and returns its base URL.
// flags go to serve as given.
func startServer(t *testing.T, dbPath string, flags ...string) (string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	var logs bytes.Buffer
	go func() {
		done <- run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0", "--db", dbPath}, flags...), nil, pw, &logs)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("server did not start: %v (%v)", err, <-done)
	}
	go io.Copy(io.Discard, pr)
	base := strings.TrimSpace(strings.TrimPrefix(line, "listening on "))
	stop := func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(waittest.Limit(t)):
			t.Error("server did not stop")
		}
	}
	return base, stop
}

func call(t *testing.T, method, url string, body any, want int, out any) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, r)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		t.Fatalf("%s %s: %d %s, want %d", method, url, res.StatusCode, raw, want)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, url, err, raw)
		}
	}
}

// The whole server on a free port with a temporary database, driven over HTTP and the
// WebSocket: a real shell command through the built-in agent, live summaries without the
// body, the body from the snapshot endpoint, and the same conversation after a restart.
func TestServeEndToEnd(t *testing.T) {
	db := filepath.Join(t.TempDir(), "conch.db")
	base, stop := startServer(t, db)
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Limit(t))
	defer cancel()

	var health map[string]string
	call(t, "GET", base+"/healthz", nil, 200, &health)
	if health["status"] != "ok" {
		t.Fatalf("healthz %v", health)
	}
	var task shared.Task
	call(t, "POST", base+"/api/v1/tasks", map[string]string{"title": "e2e"}, 201, &task)
	var sess shared.Session
	call(t, "POST", base+"/api/v1/tasks/"+task.ID+"/sessions", map[string]string{"agent": "shell"}, 201, &sess)
	if sess.State != shared.SessionReady {
		t.Fatalf("session %+v, want ready", sess)
	}

	ws, _, err := websocket.Dial(ctx, strings.Replace(base, "http", "ws", 1)+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(1 << 20)
	send := func(id, action string, payload any) {
		p, _ := json.Marshal(payload)
		b, _ := json.Marshal(shared.Envelope{ID: id, Type: shared.EnvelopeRequest, Action: action, Payload: p, Timestamp: time.Now()})
		if err := ws.Write(ctx, websocket.MessageText, b); err != nil {
			t.Fatal(err)
		}
	}
	read := func() (shared.Envelope, []byte) {
		_, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("ws read: %v", err)
		}
		var env shared.Envelope
		if err := json.Unmarshal(b, &env); err != nil {
			t.Fatal(err)
		}
		return env, b
	}
	send("1", shared.ActionSubscribe, shared.SessionRef{SessionID: sess.ID})
	if env, raw := read(); env.Type != shared.EnvelopeResponse || env.ID != "1" {
		t.Fatalf("subscribe answer %s", raw)
	}

	const marker = "E2E-MARKER-4711"
	cmd := fmt.Sprintf("for i in $(seq 1 2000); do echo %s-$i; done; echo oops >&2; exit 3", marker)
	var user shared.Message
	call(t, "POST", base+"/api/v1/task-sessions/"+sess.ID+"/messages",
		map[string]string{"content": cmd, "client_message_id": "m-1"}, 202, &user)

	// Follow notifications until the command is terminal; none may carry the body.
	var final shared.Message
	for final.ID == "" {
		env, raw := read()
		if bytes.Contains(raw, []byte(marker+"-1999")) {
			t.Fatalf("a live frame carries output: %.300s", raw)
		}
		if env.Action != shared.ActionMessageAdded && env.Action != shared.ActionMessageUpdated {
			continue
		}
		var m shared.Message
		if err := json.Unmarshal(env.Payload, &m); err != nil {
			t.Fatal(err)
		}
		if se := shared.ShellOf(m); se != nil && m.Metadata.Status.IsTerminal() {
			final = m
		}
	}
	se := shared.ShellOf(final)
	if final.Metadata.Status != shared.StatusFailed || se.Output.ExitCode == nil || *se.Output.ExitCode != 3 ||
		se.Command != cmd || !se.Output.HasOutput || se.Output.StderrBytes != len("oops\n") {
		t.Fatalf("final command %+v %+v", final.Metadata, se)
	}

	var snap shared.ShellOutputSnapshot
	call(t, "GET", base+"/api/v1/task-sessions/"+sess.ID+"/messages/"+final.ID+"/shell-output", nil, 200, &snap)
	if !strings.HasPrefix(snap.Output.Stdout, marker+"-1\n") || !strings.HasSuffix(snap.Output.Stdout, marker+"-2000\n") ||
		len(snap.Output.Stdout) != se.Output.StdoutBytes || snap.Output.Stderr != "oops\n" {
		t.Fatalf("snapshot: %d bytes stdout, stderr %q", len(snap.Output.Stdout), snap.Output.Stderr)
	}

	// The turn ends with the agent's short text message, after the command.
	var page shared.MessagePage
	for {
		call(t, "GET", base+"/api/v1/task-sessions/"+sess.ID+"/messages", nil, 200, &page)
		if n := len(page.Messages); n >= 3 && page.Messages[n-1].Type == shared.TypeMessage &&
			page.Messages[n-1].AuthorType == shared.AuthorAgent {
			break
		}
		if _, _, err := ws.Read(ctx); err != nil { // wait for the next event, not a timer
			t.Fatalf("turn did not end: %v", err)
		}
	}
	listed, _ := json.Marshal(page)
	if bytes.Contains(listed, []byte(marker+"-1999")) {
		t.Fatal("the list carries output")
	}
	ws.Close(websocket.StatusNormalClosure, "")
	stop()

	// The same database after a restart shows the same conversation.
	base, stop = startServer(t, db)
	defer stop()
	var again shared.MessagePage
	call(t, "GET", base+"/api/v1/task-sessions/"+sess.ID+"/messages", nil, 200, &again)
	relisted, _ := json.Marshal(again)
	if string(relisted) != string(listed) {
		t.Fatalf("after restart:\n%s\nbefore:\n%s", relisted, listed)
	}
}

func TestServeRefusesOpenAddressWithoutToken(t *testing.T) {
	err := run(context.Background(), []string{"serve", "--addr", "0.0.0.0:0", "--db", filepath.Join(t.TempDir(), "x.db")},
		nil, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--token") {
		t.Fatalf("err = %v, want a refusal naming --token", err)
	}
}

// TestServeRefusesWeakTokenOrBadProxy: a server reachable from other hosts needs a token
// of at least 16 bytes; any token must be one an Authorization header can carry; a
// --trusted-proxy must be an address or a CIDR prefix; a --lease at least a second.
func TestServeRefusesWeakTokenOrBadProxy(t *testing.T) {
	db := filepath.Join(t.TempDir(), "x.db")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--addr", "0.0.0.0:0", "--token", "fifteen-bytes.."}, "--token (or CONCH_TOKEN) must be at least 16 bytes, it has 15"},
		// A token that no Authorization header can carry (RFC 6750's b64token) could never be presented.
		{[]string{"--addr", "127.0.0.1:0", "--token", strings.Repeat("\t", 16)}, `--token (or CONCH_TOKEN) may hold only letters, digits and "-._~+/" (then "=" at the end), as a bearer token (RFC 6750): it has '\t' at byte 0`},
		{[]string{"--addr", "127.0.0.1:0", "--token", "the-right-token-of-32-characters\n"}, `it has '\n' at byte 32`},
		{[]string{"--addr", "0.0.0.0:0", "--token", " the-right-token-of-32-characters"}, `it has ' ' at byte 0`},
		{[]string{"--addr", "127.0.0.1:0", "--token", "pass word with spaces"}, `it has ' ' at byte 4`},
		{[]string{"--addr", "127.0.0.1:0", "--token", "padding=in-the-middle"}, `it has '=' at byte 7`},
		{[]string{"--addr", "[::]:0", "--token", "short"}, "must be at least 16 bytes"},
		{[]string{"--trusted-proxy", "10.0.0.1", "--trusted-proxy", "proxy.example"}, `--trusted-proxy "proxy.example" is neither an address nor a CIDR prefix`},
		{[]string{"--trusted-proxy", "10.0.0.0/33"}, `--trusted-proxy "10.0.0.0/33"`},
		{[]string{"--lease", "500ms"}, "--lease 500ms is too short: give 1s or more"},
		{[]string{"--lease", "-15s"}, "--lease -15s is too short"},
	} {
		// Cancelled: a start that is not refused returns at once instead of serving.
		stopped, stop := context.WithCancel(context.Background())
		stop()
		err := run(stopped, append([]string{"serve", "--db", db}, tc.args...), nil, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.want)
		}
	}
	t.Setenv("CONCH_LEASE", "fifteen seconds")
	if err := run(context.Background(), []string{"serve", "--db", db}, nil, io.Discard, io.Discard); err == nil ||
		err.Error() != `CONCH_LEASE="fifteen seconds" is not a duration such as 15s` {
		t.Errorf("CONCH_LEASE that is no duration: err = %v", err)
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("a refused start created the database: %v", err)
	}
}

// parseServe takes the environment where no flag is given, a flag over it, and notes a
// token given on the command line (serve warns that every process can read it there).
func TestParseServe(t *testing.T) {
	t.Setenv("CONCH_ADDR", "127.0.0.1:9")
	t.Setenv("CONCH_TOKEN", "a-token-from-the-environment")
	t.Setenv("CONCH_AGENT_IDLE", "0s")
	t.Setenv("CONCH_TRUSTED_PROXIES", "10.0.0.1, 10.1.0.0/16")
	t.Setenv("CONCH_PUSH_ALLOW_PRIVATE", "1")
	cfg, err := parseServe([]string{"--db", "x.db", "--lease", "20s"}, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%s %s %s %s %s %v %v %v", cfg.addr, cfg.db, cfg.token, cfg.lease, cfg.idle, cfg.trusted, cfg.tokenFlag, cfg.pushAllowPrivate); got !=
		"127.0.0.1:9 x.db a-token-from-the-environment 20s 0s [10.0.0.1/32 10.1.0.0/16] false true" {
		t.Errorf("from the environment: %s", got)
	}
	cfg, err = parseServe([]string{"--token", "a-token-on-the-command-line", "--trusted-proxy", "10.2.0.0/16", "--push-allow-private=false"}, io.Discard, io.Discard)
	if err != nil || cfg.token != "a-token-on-the-command-line" || !cfg.tokenFlag || fmt.Sprint(cfg.trusted) != "[10.2.0.0/16]" || cfg.pushAllowPrivate {
		t.Errorf("flags over the environment: %+v, %v", cfg, err)
	}
	t.Setenv("CONCH_AGENT_IDLE", "")
	if cfg, err := parseServe(nil, io.Discard, io.Discard); err != nil || cfg.idle != 15*time.Minute {
		t.Errorf("an agent with nothing to do is stopped after %s, want the 15m its help and docs say (%v)", cfg.idle, err)
	}
}

// --max-storage takes plain bytes, from CONCH_MAX_STORAGE where the flag is not given; a
// negative count or one with a unit is refused before anything starts.
func TestParseMaxStorage(t *testing.T) {
	for _, c := range []struct {
		env  string
		args []string
		want int64
		err  string
	}{
		{"", nil, 0, ""},
		{"1073741824", nil, 1 << 30, ""},
		{"1073741824", []string{"--max-storage", "2048"}, 2048, ""},
		{"", []string{"--max-storage", "-1"}, 0, "--max-storage -1 is negative: give 0 for no limit"},
		{"10GiB", nil, 0, `CONCH_MAX_STORAGE="10GiB" is not a number of bytes such as 10737418240`},
	} {
		t.Setenv("CONCH_MAX_STORAGE", c.env)
		cfg, err := parseServe(c.args, io.Discard, io.Discard)
		if got := fmt.Sprint(err); c.err != "" && got != c.err || c.err == "" && (err != nil || cfg.maxStorage != c.want) {
			t.Errorf("env %q, %v: %d, %v; want %d, %s", c.env, c.args, cfg.maxStorage, err, c.want, c.err)
		}
	}
}
