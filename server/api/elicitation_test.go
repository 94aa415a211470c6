package api

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"conch/server/store"
	"conch/shared"
)

// question stores a pending question of the agent: a required name, an age and tags
// (a multi-select).
func (e *env) question(sessionID string) shared.Message {
	e.t.Helper()
	m, err := e.store.CreateMessage(context.Background(), store.NewMessage{SessionID: sessionID, AuthorType: shared.AuthorAgent,
		Type: shared.TypeElicitation, Content: "Who are you?",
		Metadata: &shared.Metadata{Status: shared.StatusPending, Elicitation: &shared.Elicitation{Mode: shared.ElicitForm, Fields: []shared.ElicitationField{
			{Name: "name", Type: shared.FieldString, Title: "Your name", Required: true},
			{Name: "age", Type: shared.FieldInteger, Max: new(150.0)},
			{Name: "tags", Type: shared.FieldArray, Options: []shared.ElicitationOption{{Value: "x"}, {Value: "y"}}}}}}})
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}

// POST .../elicitations/{message_id}: an answer its fields refuse is a 400 that names the
// field and reaches neither the store nor the agent; the answer that fits is stored with
// who gave it, listed as answered, and a second one (over the WebSocket) is a conflict.
func TestAnswerElicitation(t *testing.T) {
	e := newEnv(t, withToken)
	ada, bob := e.accountWithToken("ada", shared.RoleMember), e.accountWithToken("bob", shared.RoleAdmin)
	var task shared.Task
	e.expect(http.StatusCreated, "POST", "/api/v1/tasks", `{"title":"ada's"}`, &task, ada...)
	var s shared.Session
	e.expect(http.StatusCreated, "POST", "/api/v1/tasks/"+task.ID+"/sessions", `{"agent":"shell","cwd":"/tmp"}`, &s, ada...)
	q := e.question(s.ID)
	path := "/api/v1/task-sessions/" + s.ID + "/elicitations/" + q.ID
	for _, tt := range []struct{ name, body, want string }{
		{"an unknown action", `{"action":"maybe"}`, `{"error":"action must be accept, decline or cancel","code":"invalid"}`},
		{"a missing field", `{"action":"accept","content":{"age":3}}`, `{"error":"Your name is required","code":"invalid"}`},
		{"a wrong type", `{"action":"accept","content":{"name":"ada","age":"old"}}`, `{"error":"age must be a number","code":"invalid"}`},
		{"past the maximum", `{"action":"accept","content":{"name":"ada","age":200}}`, `{"error":"age must be at most 150","code":"invalid"}`},
		{"an unknown field", `{"action":"accept","content":{"name":"ada","root":true}}`, `{"error":"the question has no field \"root\"","code":"invalid"}`},
		{"an option twice", `{"action":"accept","content":{"name":"ada","tags":["x","x"]}}`, `{"error":"tags has \"x\" twice","code":"invalid"}`},
		{"not a list", `{"action":"accept","content":{"name":"ada","tags":"x"}}`, `{"error":"tags must be a list of its options","code":"invalid"}`},
	} {
		resp, body := e.do("POST", path, tt.body, ada...)
		if resp.StatusCode != http.StatusBadRequest || body != tt.want {
			t.Errorf("%s: %d %s, want 400 %s", tt.name, resp.StatusCode, body, tt.want)
		}
	}
	if got := e.rt.answered(); len(got) != 0 {
		t.Fatalf("bad answers reached the agent: %q", got)
	}

	var m shared.Message
	e.expect(http.StatusOK, "POST", path, `{"action":"accept","content":{"name":"ada","age":36,"tags":["y","x"]}}`, &m, ada...)
	if md := m.Metadata; md.Status != shared.StatusSelected || md.AnsweredBy != "ada" || md.Elicitation.Action != "accept" || md.Elicitation.Content["name"] != "ada" {
		t.Errorf("answered %+v %+v", md, md.Elicitation)
	}
	if got := e.rt.answered(); len(got) != 1 || got[0] != q.ID+`: {"action":"accept","content":{"age":36,"name":"ada","tags":["y","x"]}}` {
		t.Errorf("the agent got %q", got)
	}
	w, resp, err := dial(t, e.listen(), http.Header{bob[0]: {bob[1]}})
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	if p := errorOf(t, w.request(shared.ActionElicitationAnswer, shared.ElicitationAnswer{SessionID: s.ID, MessageID: q.ID, Action: "decline"})); p.Code != shared.CodeConflict ||
		p.Message != "question is not pending" {
		t.Errorf("second answer over the WebSocket: %+v", p)
	}
	var page shared.MessagePage
	e.expect(http.StatusOK, "GET", "/api/v1/task-sessions/"+s.ID+"/messages", "", &page, ada...)
	listed, _ := json.Marshal(page.Messages[len(page.Messages)-1])
	answered, _ := json.Marshal(m)
	if string(listed) != string(answered) {
		t.Errorf("listed %s\nanswer %s", listed, answered)
	}
	t.Logf("a listed question: %d bytes", len(listed))
}

// A question answered over the WebSocket: every tab sees it answered, with who answered.
func TestWSElicitationAnswer(t *testing.T) {
	e := newEnv(t)
	s := e.session()
	q := e.question(s.ID)
	addr := e.listen()
	tab1, tab2 := mustDial(t, addr), mustDial(t, addr)
	tab1.request(shared.ActionSubscribe, shared.SessionRef{SessionID: s.ID})
	tab2.request(shared.ActionSubscribe, shared.SessionRef{SessionID: s.ID})
	if p := errorOf(t, tab1.request(shared.ActionElicitationAnswer, shared.ElicitationAnswer{SessionID: s.ID, MessageID: q.ID, Action: "accept"})); p.Message != "Your name is required" {
		t.Errorf("a missing field: %+v", p)
	}
	env := tab1.request(shared.ActionElicitationAnswer, shared.ElicitationAnswer{SessionID: s.ID, MessageID: q.ID, Action: "decline"})
	if env.Type != shared.EnvelopeResponse || env.Action != shared.ActionElicitationAnswer {
		t.Fatalf("answer: %s %s", env.Type, env.Payload)
	}
	for name, tab := range map[string]*wsClient{"tab1": tab1, "tab2": tab2} {
		if n := tab.next(); n.Action != shared.ActionMessageUpdated || string(n.Payload) != string(env.Payload) {
			t.Errorf("%s got %s %s, want the answered question %s", name, n.Action, n.Payload, env.Payload)
		}
	}
}
