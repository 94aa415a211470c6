package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"conch/server/waittest"
	"conch/shared"
)

// person is someone's sign-in on a test server: the cookie its requests carry.
type person struct {
	t      *testing.T
	base   string
	header http.Header
}

// request sends a JSON body (nil: none) as the person and decodes the answer into out.
func (p person) request(method, path string, body any, want int, out any) {
	p.t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, p.base+path, r)
	req.Header = p.header.Clone()
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		p.t.Fatalf("%s %s: %d %s, want %d", method, path, res.StatusCode, raw, want)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			p.t.Fatalf("%s %s: %v in %s", method, path, err, raw)
		}
	}
}

// signIn makes an account of role and signs it in through the form.
func signIn(t *testing.T, base string, admin person, login, role string) person {
	t.Helper()
	password := login + "'s long password"
	admin.request("POST", "/api/v1/accounts", shared.NewAccount{Login: login, Role: role, Password: password}, 201, nil)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.PostForm(base+"/login", url.Values{"login": {login}, "password": {password}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || len(res.Cookies()) != 1 {
		t.Fatalf("sign-in of %s: %d", login, res.StatusCode)
	}
	c := res.Cookies()[0]
	return person{t: t, base: base, header: http.Header{"Cookie": {c.Name + "=" + c.Value}, "Origin": {base}}}
}

// terminal is one socket of a session's terminal.
type terminal struct {
	t    *testing.T
	conn *websocket.Conn
}

func (p person) terminal(ctx context.Context, sessionID string) (*terminal, *http.Response, error) {
	conn, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(p.base, "http")+"/ws/terminal?session_id="+sessionID,
		&websocket.DialOptions{HTTPHeader: p.header})
	if err != nil {
		return nil, resp, err
	}
	conn.SetReadLimit(-1)
	p.t.Cleanup(func() { conn.CloseNow() })
	return &terminal{t: p.t, conn: conn}, resp, nil
}

// event reads until a control message that match accepts, skipping output and others.
func (term *terminal) event(ctx context.Context, what string, match func(shared.TerminalEvent) bool) shared.TerminalEvent {
	term.t.Helper()
	for {
		kind, data, err := term.conn.Read(ctx)
		if err != nil {
			term.t.Fatalf("waiting for %s: %v", what, err)
		}
		var e shared.TerminalEvent
		if kind == websocket.MessageText {
			if err := json.Unmarshal(data, &e); err != nil {
				term.t.Fatal(err)
			}
			if match(e) {
				return e
			}
		}
	}
}

func (term *terminal) send(ctx context.Context, kind websocket.MessageType, data string) {
	term.t.Helper()
	if err := term.conn.Write(ctx, kind, []byte(data)); err != nil {
		term.t.Fatal(err)
	}
}

// The terminal's socket on a real server, on loopback: the task's owner types; a second
// editor takes the keyboard over and both are told; the first editor's and a viewer's
// keys are refused with a reason; someone not signed in, or signed in as a guest of
// another task, is refused before the upgrade.
func TestTerminalSocket(t *testing.T) {
	const token = "terminal-token-0123456789abcdef"
	base, stop := startServer(t, t.TempDir()+"/conch.db", "--token", token)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Limit(t))
	defer cancel()
	admin := person{t: t, base: base, header: http.Header{"Authorization": {"Bearer " + token}}}
	ada := signIn(t, base, admin, "ada", shared.RoleMember)
	bob := signIn(t, base, admin, "bob", shared.RoleMember)
	vic := signIn(t, base, admin, "vic", shared.RoleViewer)
	var task, other shared.Task
	ada.request("POST", "/api/v1/tasks", map[string]string{"title": "terminal"}, 201, &task)
	ada.request("POST", "/api/v1/tasks", map[string]string{"title": "another"}, 201, &other)
	ada.request("POST", "/api/v1/tasks/"+task.ID+"/editors", map[string]string{"login": "bob"}, 200, nil)
	var sess shared.Session
	ada.request("POST", "/api/v1/tasks/"+task.ID+"/sessions", map[string]string{"agent": "shell"}, 201, &sess)

	// Refused before the upgrade: nobody signed in; a guest of another task.
	if _, resp, err := (person{t: t, base: base, header: http.Header{}}).terminal(ctx, sess.ID); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("not signed in: %v %v", resp, err)
	}
	var link shared.ShareLink
	ada.request("POST", "/api/v1/tasks/"+other.ID+"/links", shared.NewShareLink{Days: 1}, 201, &link)
	res, err := http.Get(base + link.URL)
	if err != nil || len(res.Cookies()) != 1 {
		t.Fatalf("the share link: %v", err)
	}
	res.Body.Close()
	guest := person{t: t, base: base, header: http.Header{"Cookie": {res.Cookies()[0].Name + "=" + res.Cookies()[0].Value}, "Origin": {base}}}
	if _, resp, err := guest.terminal(ctx, sess.ID); err == nil || resp == nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a guest of another task: %v %v", resp, err)
	}

	first, _, err := ada.terminal(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	first.event(ctx, "ada's keyboard", func(e shared.TerminalEvent) bool {
		return e.Type == shared.TerminalWriter && e.Editing && e.Writer == "ada"
	})
	watcher, _, err := vic.terminal(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if e := watcher.event(ctx, "who types", func(e shared.TerminalEvent) bool { return e.Type == shared.TerminalWriter }); e.Editing || e.MayEdit || e.Writer != "ada" {
		t.Errorf("the viewer is told %+v", e)
	}
	watcher.send(ctx, websocket.MessageBinary, "echo typed by vic\r")
	if e := watcher.event(ctx, "the refusal", func(e shared.TerminalEvent) bool { return e.Type == shared.TerminalError }); !strings.Contains(e.Reason, "take it over first") {
		t.Errorf("the viewer's keys: %q", e.Reason)
	}
	watcher.send(ctx, websocket.MessageText, `{"type":"take"}`)
	if e := watcher.event(ctx, "the refusal", func(e shared.TerminalEvent) bool { return e.Type == shared.TerminalError }); !strings.Contains(e.Reason, "may watch this terminal, not type in it") {
		t.Errorf("the viewer's take: %q", e.Reason)
	}

	second, _, err := bob.terminal(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if e := second.event(ctx, "who types", func(e shared.TerminalEvent) bool { return e.Type == shared.TerminalWriter }); e.Editing || !e.MayEdit || e.Writer != "ada" {
		t.Errorf("the second editor is told %+v", e)
	}
	second.send(ctx, websocket.MessageText, `{"type":"take"}`)
	second.event(ctx, "bob's keyboard", func(e shared.TerminalEvent) bool {
		return e.Type == shared.TerminalWriter && e.Editing && e.Writer == "bob"
	})
	first.event(ctx, "the takeover", func(e shared.TerminalEvent) bool {
		return e.Type == shared.TerminalWriter && !e.Editing && e.MayEdit && e.Writer == "bob"
	})
	watcher.event(ctx, "the takeover", func(e shared.TerminalEvent) bool {
		return e.Type == shared.TerminalWriter && !e.Editing && e.Writer == "bob"
	})
	first.send(ctx, websocket.MessageBinary, "echo typed by ada\r")
	if e := first.event(ctx, "the refusal", func(e shared.TerminalEvent) bool { return e.Type == shared.TerminalError }); !strings.Contains(e.Reason, "take it over first") {
		t.Errorf("the first editor's keys after the takeover: %q", e.Reason)
	}
}
