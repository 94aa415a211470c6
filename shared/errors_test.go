package shared

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
)

func TestErrorCodeAndMessage(t *testing.T) {
	conflict := Errorf(CodeConflict, "session is %s", SessionClosed)
	for _, c := range []struct {
		name          string
		err           error
		code, message string
	}{
		{"nil", nil, "", ""},
		{"plain error", errors.New("disk I/O error"), CodeInternal, "request failed"},
		{"coded", conflict, CodeConflict, "session is closed"},
		{"wrapped: context stays out of the message", fmt.Errorf("add user message: %w", conflict), CodeConflict, "session is closed"},
		{"wrapped twice", fmt.Errorf("queue: %w", fmt.Errorf("add: %w", conflict)), CodeConflict, "session is closed"},
		{"internal hides its message", Errorf(CodeInternal, "table messages is locked"), CodeInternal, "request failed"},
		{"no code is internal", &Error{Message: "what went wrong"}, CodeInternal, "request failed"},
	} {
		if code, msg := ErrorCode(c.err), ErrorMessage(c.err); code != c.code || msg != c.message {
			t.Errorf("%s: %q %q, want %q %q", c.name, code, msg, c.code, c.message)
		}
	}
}

// TestErrorWireShapes pins the WebSocket error payload and the REST error body.
func TestErrorWireShapes(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{Errorf(CodeNotFound, "session not found"), `{"code":"not_found","message":"session not found"}`},
		{ErrorBody{Error: "message not found", Code: CodeNotFound}, `{"error":"message not found","code":"not_found"}`},
		{ErrorBody{Error: "store unavailable"}, `{"error":"store unavailable"}`},
	} {
		if got, err := json.Marshal(c.v); err != nil || string(got) != c.want {
			t.Errorf("%+v: %s %v, want %s", c.v, got, err, c.want)
		}
	}
}
