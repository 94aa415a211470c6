package api

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"conch/shared"
)

// POST .../config sets one of the agent's config options to a value (a string) or on or
// off (a boolean), answering the session as the agent left it; a request that is not one
// says why and changes nothing. session.set_config on the WebSocket answers the same.
func TestSetConfig(t *testing.T) {
	e := newEnv(t)
	s, plain := e.session(), e.session()
	if _, err := e.store.SetSessionConfig(context.Background(), s.ID, []shared.ConfigOption{
		{ID: "model", Name: "Model", Category: "model", Type: shared.ConfigSelect, Current: "small",
			Values: []shared.ConfigValue{{ID: "small", Name: "Small"}, {ID: "large", Name: "Large", Group: "Big"}}},
		{ID: "fast", Name: "Fast", Category: "model_config", Type: shared.ConfigBoolean},
	}); err != nil {
		t.Fatal(err)
	}
	path := "/api/v1/task-sessions/" + s.ID + "/config"
	for _, tt := range []struct {
		target, body string
		status       int
		want         string
	}{
		{path, `{"config_id":"model"}`, 400, `{"error":"value must be a string (a select's value) or a boolean","code":"invalid"}`},
		{path, `{"config_id":"model","value":3}`, 400, `{"error":"value must be a string (a select's value) or a boolean","code":"invalid"}`},
		{path, `{"config_id":"model","value":""}`, 400, `{"error":"value is empty, over 128 bytes, or not plain text","code":"invalid"}`},
		{path, `{"config_id":"model","value":"a\u001bb"}`, 400, `{"error":"value is empty, over 128 bytes, or not plain text","code":"invalid"}`},
		{path, `{"value":"large"}`, 400, `{"error":"config_id is required: plain text of at most 128 bytes","code":"invalid"}`},
		{path, `{"config_id":"model","value":"large","extra":1}`, 400, `{"error":"unknown field \"extra\"","code":"invalid"}`},
		{path, `{"config_id":"model","value":"large","session_id":"` + plain.ID + `"}`, 400, `{"error":"session_id does not match the path","code":"invalid"}`},
		{"/api/v1/task-sessions/nope/config", `{"config_id":"model","value":"large"}`, 404, `{"error":"session not found","code":"not_found"}`},
	} {
		if resp, body := e.do("POST", tt.target, tt.body); resp.StatusCode != tt.status || body != tt.want {
			t.Errorf("%s %s: %d %s, want %d %s", tt.target, tt.body, resp.StatusCode, body, tt.status, tt.want)
		}
	}
	var got shared.Session
	e.expect(http.StatusOK, "POST", path, `{"config_id":"model","value":"large"}`, &got)
	if got.ConfigOptions[0].Current != "large" {
		t.Errorf("after the set: %+v", got.ConfigOptions)
	}
	w := mustDial(t, e.listen())
	env := w.request(shared.ActionSetConfig, shared.ConfigRequest{SessionID: s.ID, ConfigID: "fast", Value: true})
	if err := json.Unmarshal(env.Payload, &got); err != nil || env.Type != shared.EnvelopeResponse || !got.ConfigOptions[1].On {
		t.Errorf("session.set_config: %s %s", env.Type, env.Payload)
	}
	if p := errorOf(t, w.request(shared.ActionSetConfig, shared.ConfigRequest{SessionID: s.ID, ConfigID: "fast", Value: 1})); p.Code != shared.CodeInvalid {
		t.Errorf("session.set_config to a number: %+v", p)
	}
}
