package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"conch/shared"
)

// A fake server is enough here: these tests pin the client's own behaviour (paths, error
// mapping, request/response matching). The real server is exercised by app/e2e.
func TestErrorsAndPaths(t *testing.T) {
	var gotPath, gotQuery string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotQuery = r.URL.Path, r.URL.RawQuery
		switch r.URL.Path {
		case "/api/v1/task-sessions/s1/messages/m1/shell-output":
			json.NewEncoder(w).Encode(shared.ShellOutputSnapshot{MessageID: "m1", Status: shared.StatusCompleted,
				Output: shared.ShellOutput{Stdout: "hi"}})
		case "/api/v1/task-sessions/s1/messages":
			json.NewEncoder(w).Encode(shared.MessagePage{Messages: []shared.Message{}, Total: 0})
		default:
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":"message not found","code":"not_found"}`))
		}
	}))
	defer srv.Close()
	c := New(srv.URL + "/")
	ctx := context.Background()

	snap, err := c.ShellOutput(ctx, "s1", "m1")
	if err != nil || snap.Output.Stdout != "hi" {
		t.Fatalf("ShellOutput = %+v, %v", snap, err)
	}
	if _, err := c.ListMessages(ctx, shared.ListRequest{SessionID: "s1", Limit: new(5), Before: "m9", Sort: shared.SortDesc}); err != nil {
		t.Fatal(err)
	}
	if gotQuery != "before=m9&limit=5&sort=desc" {
		t.Fatalf("query %q", gotQuery)
	}
	_, err = c.ShellOutput(ctx, "s1", "other")
	if shared.ErrorCode(err) != shared.CodeNotFound || shared.ErrorMessage(err) != "message not found" ||
		err.Error() != "GET /api/v1/task-sessions/s1/messages/other/shell-output: 404: message not found" {
		t.Fatalf("404 answer gave %v", err)
	}
	if gotPath != "/api/v1/task-sessions/s1/messages/other/shell-output" {
		t.Fatalf("path %q", gotPath)
	}

	srv.Close()
	if _, err := c.ShellOutput(ctx, "s1", "m1"); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("a stopped server gave %v, want ErrUnreachable", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.ShellOutput(cancelled, "s1", "m1"); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled request gave %v, want context.Canceled", err)
	}
}

func TestWebSocketMatchesResponsesAndQueuesNotifications(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		ctx := r.Context()
		for {
			_, data, err := ws.Read(ctx)
			if err != nil {
				return
			}
			var req shared.Envelope
			json.Unmarshal(data, &req)
			send := func(e shared.Envelope) {
				b, _ := json.Marshal(e)
				ws.Write(ctx, websocket.MessageText, b)
			}
			switch req.Action {
			case shared.ActionSubscribe:
				// A notification overtakes the response: it must reach Notifications.
				send(shared.Envelope{Type: shared.EnvelopeNotification, Action: shared.ActionMessageAdded,
					Payload: json.RawMessage(`{"id":"m1","session_id":"s1"}`)})
				send(shared.Envelope{ID: req.ID, Type: shared.EnvelopeResponse, Action: req.Action, Payload: req.Payload})
			case shared.ActionMessageAdd:
				return // the server goes away mid-request
			case shared.ActionMessageList:
				send(shared.Envelope{ID: req.ID, Type: shared.EnvelopeError, Action: req.Action,
					Payload: json.RawMessage(`{"code":"invalid","message":"bad cursor"}`)})
			}
		}
	}))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := New(srv.URL).Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Subscribe(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	select {
	case env := <-conn.Notifications():
		if env.Action != shared.ActionMessageAdded {
			t.Fatalf("notification %+v", env)
		}
	case <-ctx.Done():
		t.Fatal("no notification")
	}
	_, err = conn.List(ctx, shared.ListRequest{SessionID: "s1", Before: "x"})
	if shared.ErrorCode(err) != shared.CodeInvalid || shared.ErrorMessage(err) != "bad cursor" {
		t.Fatalf("error envelope gave %v", err)
	}

	if _, err := conn.Add(ctx, shared.AddRequest{SessionID: "s1", Content: "x"}); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("a request cut by the server gave %v, want ErrUnreachable", err)
	}
	select {
	case _, ok := <-conn.Notifications():
		if ok {
			t.Fatal("unexpected notification")
		}
	case <-ctx.Done():
		t.Fatal("Notifications not closed after the connection dropped")
	}
	if !errors.Is(conn.Err(), ErrUnreachable) {
		t.Fatalf("Err() = %v, want ErrUnreachable", conn.Err())
	}
	if err := conn.Subscribe(ctx, "s1"); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("a request on a closed connection gave %v", err)
	}
}

// The poll sends the version it holds; only a version still current answers 304 with no
// body, and a 304 the client did not ask for is an error, not "unchanged".
func TestShellOutputIfChanged(t *testing.T) {
	const current = `"v2"`
	var sent, query string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent, query = r.Header.Get("If-None-Match"), r.URL.RawQuery
		w.Header().Set("ETag", current)
		if sent == current || r.URL.Path == "/api/v1/task-sessions/s1/messages/always304/shell-output" {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		json.NewEncoder(w).Encode(shared.ShellOutputSnapshot{MessageID: "m1", Status: shared.StatusRunning,
			Output: shared.ShellOutput{Stdout: "two"}})
	}))
	defer srv.Close()
	c := New(srv.URL)

	tests := []struct {
		name, message, held     string
		from                    *shared.Offsets
		wantQuery               string
		wantStdout, wantVersion string
		wantUnchanged           bool
		wantErr                 bool
	}{
		{name: "nothing held: the whole snapshot", message: "m1", wantStdout: "two", wantVersion: current},
		{name: "an older version: the whole snapshot", message: "m1", held: `"v1"`, wantStdout: "two", wantVersion: current},
		{name: "the current version: unchanged", message: "m1", held: current, wantVersion: current, wantUnchanged: true},
		{name: "a 304 not asked for is an error", message: "always304", wantErr: true},
		{name: "offsets go in the query", message: "m1", held: `"v1"`, from: &shared.Offsets{Stdout: 3, Stderr: 1 << 40},
			wantQuery: "stdout_offset=3&stderr_offset=1099511627776", wantStdout: "two", wantVersion: current},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap, version, unchanged, err := c.ShellOutputIfChanged(context.Background(), "s1", tt.message, tt.held, tt.from)
			if sent != tt.held || query != tt.wantQuery {
				t.Errorf("If-None-Match %q and query %q, want %q and %q", sent, query, tt.held, tt.wantQuery)
			}
			if (err != nil) != tt.wantErr || (err != nil && !strings.Contains(err.Error(), "304")) {
				t.Fatalf("error %v, want one: %v (naming the 304)", err, tt.wantErr)
			}
			if err == nil && (snap.Output.Stdout != tt.wantStdout || version != tt.wantVersion || unchanged != tt.wantUnchanged) {
				t.Fatalf("stdout %q, version %q, unchanged %v; want %q, %q, %v",
					snap.Output.Stdout, version, unchanged, tt.wantStdout, tt.wantVersion, tt.wantUnchanged)
			}
		})
	}
}
