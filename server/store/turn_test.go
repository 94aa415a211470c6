package store

import (
	"context"
	"encoding/json"
	"testing"

	"conch/shared"
)

// EndTurn stores the stop reason on the session; any reason but end_turn adds one status
// message, counted in the session's total. An unknown session changes nothing.
func TestEndTurn(t *testing.T) {
	s, _ := open(t, 1)
	ctx := context.Background()
	sess := newSession(t, s)
	if m, err := s.EndTurn(ctx, sess.ID, shared.StopEndTurn); err != nil || m != nil {
		t.Fatalf("end_turn: %+v, %v", m, err)
	}
	m, err := s.EndTurn(ctx, sess.ID, shared.StopMaxTokens)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(m)
	want := `{"id":"` + m.ID + `","session_id":"` + sess.ID + `","task_id":"` + sess.TaskID +
		`","author_type":"system","type":"status","content":"Stopped: the model reached its output limit.",` +
		`"metadata":{"stop_reason":"max_tokens"},"created_at":"` + m.CreatedAt.Format("2006-01-02T15:04:05.999999999Z07:00") +
		`","updated_at":"` + m.UpdatedAt.Format("2006-01-02T15:04:05.999999999Z07:00") + `"}`
	if string(got) != want {
		t.Errorf("status message\n got %s\nwant %s", got, want)
	}
	after, err := s.GetSession(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.LastStopReason != shared.StopMaxTokens || !after.UpdatedAt.After(sess.UpdatedAt) {
		t.Errorf("session after: %+v", after)
	}
	page, err := s.ListMessages(ctx, shared.ListRequest{SessionID: sess.ID})
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != 1 || len(page.Messages) != 1 || page.Messages[0].ID != m.ID {
		t.Errorf("listed %+v", page)
	}
	if _, err := s.EndTurn(ctx, "nope", shared.StopRefusal); shared.ErrorCode(err) != shared.CodeNotFound {
		t.Errorf("unknown session: %v", err)
	}
}

// The modes and commands an agent offers are stored on its session and come back with it;
// an empty list of commands clears them.
func TestSessionModesAndCommands(t *testing.T) {
	s, _ := open(t, 1)
	ctx := context.Background()
	sess := newSession(t, s)
	modes := shared.Modes{Current: "ask", Available: []shared.SessionMode{{ID: "ask", Name: "Ask"}, {ID: "code", Name: "Code", Description: "edits files"}}}
	if _, err := s.SetSessionModes(ctx, sess.ID, modes); err != nil {
		t.Fatal(err)
	}
	got, err := s.SetSessionCommands(ctx, sess.ID, []shared.Command{{Name: "review", Description: "Review the diff", Hint: "branch"}})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(struct {
		M *shared.Modes    `json:"modes"`
		C []shared.Command `json:"commands"`
	}{got.Modes, got.Commands})
	if want := `{"modes":{"current":"ask","available":[{"id":"ask","name":"Ask"},{"id":"code","name":"Code","description":"edits files"}]},` +
		`"commands":[{"name":"review","description":"Review the diff","hint":"branch"}]}`; string(raw) != want {
		t.Errorf("got %s\nwant %s", raw, want)
	}
	if got, _ := s.SetSessionCommands(ctx, sess.ID, nil); got.Commands != nil || got.Modes == nil {
		t.Errorf("cleared commands: %+v", got)
	}
	if tasks, err := s.ListTasks(ctx); err != nil || tasks[0].Sessions[0].Modes != nil || tasks[0].Sessions[0].State != sess.State {
		t.Errorf("the task list carries modes: %+v, %v", tasks, err)
	}
	if _, err := s.SetSessionModes(ctx, "nope", modes); shared.ErrorCode(err) != shared.CodeNotFound {
		t.Errorf("unknown session: %v", err)
	}
}
