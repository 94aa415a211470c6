package api

import (
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"conch/shared"
)

// TestEveryCodeHasOneStatus pins the one table from codes to statuses, read the other
// way round, and checks that it has a row for every Code constant shared declares, so a
// new code cannot answer status 0.
func TestEveryCodeHasOneStatus(t *testing.T) {
	want := map[int][]string{
		http.StatusBadRequest:          {shared.CodeInvalid, shared.CodeTooLarge},
		http.StatusUnauthorized:        {shared.CodeUnauthorized},
		http.StatusForbidden:           {shared.CodeForbidden},
		http.StatusNotFound:            {shared.CodeNotFound, shared.CodeUnknownAction},
		http.StatusConflict:            {shared.CodeConflict},
		http.StatusTooManyRequests:     {shared.CodeTooManyRequests},
		http.StatusInternalServerError: {shared.CodeInternal},
		http.StatusGatewayTimeout:      {shared.CodeTimeout},
		http.StatusServiceUnavailable:  {shared.CodeDraining},
		http.StatusInsufficientStorage: {shared.CodeInsufficientStorage},
	}
	rows := 0
	for status, codes := range want {
		for _, code := range codes {
			rows++
			if statusOf[code] != status {
				t.Errorf("code %q: status %d, want %d", code, statusOf[code], status)
			}
		}
	}
	declared := sharedCodes(t)
	if len(declared) != rows || len(statusOf) != rows {
		t.Errorf("shared declares %d codes %v, the table has %d rows, this test %d", len(declared), declared, len(statusOf), rows)
	}
	for _, code := range declared {
		if _, ok := statusOf[code]; !ok {
			t.Errorf("code %q has no status", code)
		}
	}
}

// sharedCodes reads the values of the Code... constants from shared's source.
func sharedCodes(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(gotoken.NewFileSet(), "../../shared/errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	ast.Inspect(f, func(n ast.Node) bool {
		v, ok := n.(*ast.ValueSpec)
		if !ok || !strings.HasPrefix(v.Names[0].Name, "Code") {
			return true
		}
		code, err := strconv.Unquote(v.Values[0].(*ast.BasicLit).Value)
		if err != nil {
			t.Fatal(err)
		}
		codes = append(codes, code)
		return false
	})
	return codes
}

// TestRESTAndWebSocketFailAlike sends the same failing request both ways: the REST answer
// and the WebSocket error payload carry the same code and message, the status is the
// table's, and the message is a text for people, with no "context: " prefix.
func TestRESTAndWebSocketFailAlike(t *testing.T) {
	e := newEnv(t)
	s, closed, other := e.session(), e.session(), e.session()
	if _, err := e.store.SetSessionState(context.Background(), closed.ID, shared.SessionClosed, ""); err != nil {
		t.Fatal(err)
	}
	elsewhere := e.text(other.ID, "elsewhere")
	w := mustDial(t, e.listen())
	list := "/api/v1/task-sessions/" + s.ID + "/messages"

	cases := []struct {
		name                 string
		method, target, body string
		action               string
		payload              map[string]any
		want                 shared.Error
	}{
		{"unknown session", "GET", "/api/v1/task-sessions/nope/messages", "",
			shared.ActionMessageList, map[string]any{"session_id": "nope"},
			shared.Error{Code: shared.CodeNotFound, Message: "session not found"}},
		{"cursor of another session", "GET", list + "?before=" + elsewhere.ID, "",
			shared.ActionMessageList, map[string]any{"session_id": s.ID, "before": elsewhere.ID},
			shared.Error{Code: shared.CodeInvalid, Message: "cursor is not a message of this session"}},
		{"zero limit", "GET", list + "?limit=0", "",
			shared.ActionMessageList, map[string]any{"session_id": s.ID, "limit": 0},
			shared.Error{Code: shared.CodeInvalid, Message: "limit must be a positive integer"}},
		{"negative limit", "GET", list + "?limit=-1", "",
			shared.ActionMessageList, map[string]any{"session_id": s.ID, "limit": -1},
			shared.Error{Code: shared.CodeInvalid, Message: "limit must be a positive integer"}},
		{"both cursors", "GET", list + "?before=a&after=b", "",
			shared.ActionMessageList, map[string]any{"session_id": s.ID, "before": "a", "after": "b"},
			shared.Error{Code: shared.CodeInvalid, Message: "give before or after, not both"}},
		{"bad sort", "GET", list + "?sort=up", "",
			shared.ActionMessageList, map[string]any{"session_id": s.ID, "sort": "up"},
			shared.Error{Code: shared.CodeInvalid, Message: "sort must be asc or desc"}},
		{"no content", "POST", list, `{"content":" "}`,
			shared.ActionMessageAdd, map[string]any{"session_id": s.ID, "content": " "},
			shared.Error{Code: shared.CodeInvalid, Message: "content is required"}},
		{"add to an unknown session", "POST", "/api/v1/task-sessions/nope/messages", `{"content":"ls"}`,
			shared.ActionMessageAdd, map[string]any{"session_id": "nope", "content": "ls"},
			shared.Error{Code: shared.CodeNotFound, Message: "session not found"}},
		{"add to a closed session", "POST", "/api/v1/task-sessions/" + closed.ID + "/messages", `{"content":"ls"}`,
			shared.ActionMessageAdd, map[string]any{"session_id": closed.ID, "content": "ls"},
			shared.Error{Code: shared.CodeConflict, Message: "session is closed"}},
		{"store failure", "GET", list, "",
			shared.ActionMessageList, map[string]any{"session_id": s.ID},
			shared.Error{Code: shared.CodeInternal, Message: "request failed"}},
	}
	for _, c := range cases {
		if c.want.Code == shared.CodeInternal {
			e.store.Close()
		}
		restWant, _ := json.Marshal(shared.ErrorBody{Error: c.want.Message, Code: c.want.Code})
		if got := e.expect(statusOf[c.want.Code], c.method, c.target, c.body, nil); got != string(restWant) {
			t.Errorf("%s: REST %s, want %s", c.name, got, restWant)
		}
		wsWant, _ := json.Marshal(c.want)
		if env := w.request(c.action, c.payload); env.Type != shared.EnvelopeError || string(env.Payload) != string(wsWant) {
			t.Errorf("%s: WebSocket %s %s, want %s", c.name, env.Type, env.Payload, wsWant)
		}
		if strings.Contains(c.want.Message, ": ") {
			t.Errorf("%s: %q carries a context prefix", c.name, c.want.Message)
		}
	}
	if logs := e.logs.String(); strings.Count(logs, "database is closed") < 2 {
		t.Errorf("the store failure's details are not in the log for both requests:\n%s", logs)
	}
}
