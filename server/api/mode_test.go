package api

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"conch/shared"
)

// POST .../mode switches among the modes the agent offers; every bad request says why
// and changes nothing. session.set_mode on the WebSocket answers the same.
func TestSetMode(t *testing.T) {
	e := newEnv(t)
	s, plain := e.session(), e.session()
	if _, err := e.store.SetSessionModes(context.Background(), s.ID, shared.Modes{Current: "ask",
		Available: []shared.SessionMode{{ID: "ask", Name: "Ask"}, {ID: "code", Name: "Code"}}}); err != nil {
		t.Fatal(err)
	}
	path := "/api/v1/task-sessions/" + s.ID + "/mode"
	for _, tt := range []struct {
		target, body string
		status       int
		want         string
	}{
		{path, `{"mode_id":"yolo"}`, 400, `{"error":"mode \"yolo\" is not offered by the agent","code":"invalid"}`},
		{path, `{}`, 400, `{"error":"mode_id is required","code":"invalid"}`},
		{path, `{"mode":"code"}`, 400, `{"error":"unknown field \"mode\"","code":"invalid"}`},
		{path, `{"mode_id":"code","session_id":"` + plain.ID + `"}`, 400, `{"error":"session_id does not match the path","code":"invalid"}`},
		{"/api/v1/task-sessions/" + plain.ID + "/mode", `{"mode_id":"code"}`, 409, `{"error":"the agent offers no modes","code":"conflict"}`},
		{"/api/v1/task-sessions/nope/mode", `{"mode_id":"code"}`, 404, `{"error":"session not found","code":"not_found"}`},
	} {
		if resp, body := e.do("POST", tt.target, tt.body); resp.StatusCode != tt.status || body != tt.want {
			t.Errorf("%s %s: %d %s, want %d %s", tt.target, tt.body, resp.StatusCode, body, tt.status, tt.want)
		}
	}
	var got shared.Session
	e.expect(http.StatusOK, "POST", path, `{"mode_id":"code"}`, &got)
	if got.Modes.Current != "code" {
		t.Errorf("after the switch: %+v", got.Modes)
	}
	w := mustDial(t, e.listen())
	env := w.request(shared.ActionSetMode, shared.ModeRequest{SessionID: s.ID, ModeID: "ask"})
	if err := json.Unmarshal(env.Payload, &got); err != nil || env.Type != shared.EnvelopeResponse || got.Modes.Current != "ask" {
		t.Errorf("session.set_mode: %s %s", env.Type, env.Payload)
	}
	if p := errorOf(t, w.request(shared.ActionSetMode, shared.ModeRequest{SessionID: s.ID, ModeID: "yolo"})); p.Code != shared.CodeInvalid {
		t.Errorf("session.set_mode to an unknown mode: %+v", p)
	}
}

// A mode switch the agent does not answer keeps its WebSocket connection answering other
// requests meanwhile, and ends with the runtime's timeout: 504 over REST, code timeout
// on both.
func TestSetModeUnanswered(t *testing.T) {
	e := newEnv(t)
	s := e.session()
	e.rt.unanswered = make(chan struct{})
	w := mustDial(t, e.listen())
	w.send(`{"id":"switch","type":"request","action":"session.set_mode","payload":{"session_id":"` + s.ID + `","mode_id":"code"}}`)
	if env := w.request(shared.ActionSubscribe, shared.SessionRef{SessionID: s.ID}); env.Type != shared.EnvelopeResponse {
		t.Errorf("while a switch waits: %s %s", env.Type, env.Payload)
	}
	close(e.rt.unanswered)
	if p := errorOf(t, w.reply("switch")); p.Code != shared.CodeTimeout {
		t.Errorf("session.set_mode unanswered: %+v", p)
	}
	resp, body := e.do("POST", "/api/v1/task-sessions/"+s.ID+"/mode", `{"mode_id":"code"}`)
	if want := `{"error":"the agent did not answer session/set_mode within 10s","code":"timeout"}`; resp.StatusCode != http.StatusGatewayTimeout || body != want {
		t.Errorf("POST .../mode unanswered: %d %s, want 504 %s", resp.StatusCode, body, want)
	}
}
