package api

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"conch/server/store"
	"conch/shared"
)

// ask stores a pending permission request with two options.
func (e *env) ask(sessionID string) shared.Message {
	e.t.Helper()
	m, err := e.store.CreateMessage(context.Background(), store.NewMessage{SessionID: sessionID, AuthorType: shared.AuthorAgent,
		Type: shared.TypePermissionRequest, Content: "rm -rf build",
		Metadata: &shared.Metadata{ToolCallID: "call-1", Title: "rm -rf build", Status: shared.StatusPending,
			Options: []shared.PermissionOption{{OptionID: "allow", Name: "Allow", Kind: "allow_once"}, {OptionID: "deny", Name: "Deny", Kind: "reject_once"}}}})
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}

func (f *fakeRuntime) answered() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.answers...)
}

// POST .../permissions/{message_id}: 200 with the updated message once; every bad answer
// is refused with its status and body, and reaches neither the store nor the agent.
func TestAnswerPermission(t *testing.T) {
	e := newEnv(t)
	s, other := e.session(), e.session()
	ask := e.ask(s.ID)
	text := e.text(s.ID, "hello")
	path := func(session, message string) string {
		return "/api/v1/task-sessions/" + session + "/permissions/" + message
	}
	for _, tt := range []struct {
		name, target, body string
		status             int
		want               string
	}{
		{"unknown message", path(s.ID, "nope"), `{"option_id":"allow"}`, 404, `{"error":"message not found","code":"not_found"}`},
		{"another session's", path(other.ID, ask.ID), `{"option_id":"allow"}`, 404, `{"error":"message not found","code":"not_found"}`},
		{"not a permission request", path(s.ID, text.ID), `{"option_id":"allow"}`, 404, `{"error":"message not found","code":"not_found"}`},
		{"unknown session", path("nope", ask.ID), `{"option_id":"allow"}`, 404, `{"error":"message not found","code":"not_found"}`},
		{"an option not offered", path(s.ID, ask.ID), `{"option_id":"maybe"}`, 400,
			`{"error":"option \"maybe\" is not offered by this permission request","code":"invalid"}`},
		{"no option", path(s.ID, ask.ID), `{}`, 400, `{"error":"option_id is required","code":"invalid"}`},
		{"an option of the wrong type", path(s.ID, ask.ID), `{"option_id":1}`, 400, `{"error":"field \"option_id\" must be a string","code":"invalid"}`},
		{"an unknown field", path(s.ID, ask.ID), `{"option":"allow"}`, 400, `{"error":"unknown field \"option\"","code":"invalid"}`},
		{"a body naming another message", path(s.ID, ask.ID), `{"option_id":"allow","message_id":"x"}`, 400,
			`{"error":"message_id does not match the path","code":"invalid"}`},
		{"a body naming another session", path(s.ID, ask.ID), `{"option_id":"allow","session_id":"` + other.ID + `"}`, 400,
			`{"error":"session_id does not match the path","code":"invalid"}`},
	} {
		resp, body := e.do("POST", tt.target, tt.body)
		if resp.StatusCode != tt.status || body != tt.want {
			t.Errorf("%s: %d %s, want %d %s", tt.name, resp.StatusCode, body, tt.status, tt.want)
		}
	}
	if got := e.rt.answered(); len(got) != 0 {
		t.Fatalf("bad answers reached the agent: %q", got)
	}

	var m shared.Message
	e.expect(http.StatusOK, "POST", path(s.ID, ask.ID), `{"option_id":"deny"}`, &m)
	if m.ID != ask.ID || m.Metadata.Status != shared.StatusSelected || m.Metadata.SelectedOptionID != "deny" {
		t.Errorf("answered %+v", m.Metadata)
	}
	var page shared.MessagePage
	e.expect(http.StatusOK, "GET", "/api/v1/task-sessions/"+s.ID+"/messages", "", &page)
	listed, _ := json.Marshal(page.Messages[0])
	answered, _ := json.Marshal(m)
	if string(listed) != string(answered) {
		t.Errorf("listed %s\nanswer %s", listed, answered)
	}
	resp, body := e.do("POST", path(s.ID, ask.ID), `{"option_id":"allow"}`)
	if resp.StatusCode != http.StatusConflict || body != `{"error":"permission request is not pending","code":"conflict"}` {
		t.Errorf("second answer: %d %s", resp.StatusCode, body)
	}
	if got := e.rt.answered(); len(got) != 1 || got[0] != ask.ID+": deny" {
		t.Errorf("the agent got %q, want exactly deny", got)
	}
}

// needs_attention marks a task while one of its sessions waits for its person.
func TestTasksNeedAttention(t *testing.T) {
	e := newEnv(t)
	s := e.session()
	ask := e.ask(s.ID)
	var out struct {
		Tasks []map[string]any `json:"tasks"`
	}
	e.expect(http.StatusOK, "GET", "/api/v1/tasks", "", &out)
	if out.Tasks[0]["needs_attention"] != true {
		t.Errorf("pending request: %v", out.Tasks[0])
	}
	e.expect(http.StatusOK, "POST", "/api/v1/task-sessions/"+s.ID+"/permissions/"+ask.ID, `{"option_id":"allow"}`, nil)
	out.Tasks = nil
	e.expect(http.StatusOK, "GET", "/api/v1/tasks", "", &out)
	if _, ok := out.Tasks[0]["needs_attention"]; ok {
		t.Errorf("answered: %v", out.Tasks[0])
	}
}

// permission.answer over the WebSocket answers as REST does, and every subscriber of the
// session (another tab) sees the update.
func TestWSPermissionAnswer(t *testing.T) {
	e := newEnv(t)
	s := e.session()
	ask := e.ask(s.ID)
	addr := e.listen()
	tab1, tab2 := mustDial(t, addr), mustDial(t, addr)
	tab1.request(shared.ActionSubscribe, shared.SessionRef{SessionID: s.ID})
	tab2.request(shared.ActionSubscribe, shared.SessionRef{SessionID: s.ID})

	if p := errorOf(t, tab1.request(shared.ActionPermissionAnswer, shared.PermissionAnswer{SessionID: s.ID, MessageID: ask.ID, OptionID: "maybe"})); p.Code != shared.CodeInvalid {
		t.Errorf("bad option: %+v", p)
	}
	if p := errorOf(t, tab1.request(shared.ActionPermissionAnswer, shared.PermissionAnswer{SessionID: s.ID, OptionID: "allow"})); p.Message != "message_id is required" {
		t.Errorf("no message: %+v", p)
	}
	env := tab1.request(shared.ActionPermissionAnswer, shared.PermissionAnswer{SessionID: s.ID, MessageID: ask.ID, OptionID: "allow"})
	if env.Type != shared.EnvelopeResponse || env.Action != shared.ActionPermissionAnswer {
		t.Fatalf("answer: %s %s", env.Type, env.Payload)
	}
	for name, tab := range map[string]*wsClient{"tab1": tab1, "tab2": tab2} {
		if n := tab.next(); n.Action != shared.ActionMessageUpdated || string(n.Payload) != string(env.Payload) {
			t.Errorf("%s got %s %s, want the answered request %s", name, n.Action, n.Payload, env.Payload)
		}
	}
	if p := errorOf(t, tab2.request(shared.ActionPermissionAnswer, shared.PermissionAnswer{SessionID: s.ID, MessageID: ask.ID, OptionID: "deny"})); p.Code != shared.CodeConflict ||
		p.Message != "permission request is not pending" {
		t.Errorf("second answer from the other tab: %+v", p)
	}
}

// An approval shows who gave it: the login of the account that answered is kept with the
// request, over REST and the WebSocket alike, and listed with it.
func TestAnswerRecordsWhoAnswered(t *testing.T) {
	e := newEnv(t, withToken)
	ada, bob := e.accountWithToken("ada", shared.RoleMember), e.accountWithToken("bob", shared.RoleAdmin)
	var task shared.Task
	e.expect(http.StatusCreated, "POST", "/api/v1/tasks", `{"title":"ada's"}`, &task, ada...)
	var s shared.Session
	e.expect(http.StatusCreated, "POST", "/api/v1/tasks/"+task.ID+"/sessions", `{"agent":"shell","cwd":"/tmp"}`, &s, ada...)
	viaREST, viaWS := e.ask(s.ID), e.ask(s.ID)

	var m shared.Message
	e.expect(http.StatusOK, "POST", "/api/v1/task-sessions/"+s.ID+"/permissions/"+viaREST.ID, `{"option_id":"allow"}`, &m, ada...)
	if m.Metadata.AnsweredBy != "ada" {
		t.Errorf("REST answer by %q, want ada", m.Metadata.AnsweredBy)
	}
	w, resp, err := dial(t, e.listen(), http.Header{bob[0]: {bob[1]}})
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	env := w.request(shared.ActionPermissionAnswer, shared.PermissionAnswer{SessionID: s.ID, MessageID: viaWS.ID, OptionID: "deny"})
	if err := json.Unmarshal(env.Payload, &m); err != nil || m.Metadata.AnsweredBy != "bob" {
		t.Errorf("WebSocket answer: %s", env.Payload)
	}
	var page shared.MessagePage
	e.expect(http.StatusOK, "GET", "/api/v1/task-sessions/"+s.ID+"/messages", "", &page, ada...)
	for _, m := range page.Messages {
		if want := map[string]string{viaREST.ID: "ada", viaWS.ID: "bob"}[m.ID]; m.Metadata.AnsweredBy != want {
			t.Errorf("listed %s answered by %q, want %q", m.ID, m.Metadata.AnsweredBy, want)
		}
	}
}
