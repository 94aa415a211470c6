package api

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"conch/shared"
)

// POST .../messages/{id}/fork of an agent that cannot fork its session answers a new
// session of the same task and agent, with a draft that summarizes the conversation up to
// the reply (nothing after it) and sends nothing. A message that is unknown, of another
// session or not an agent's reply is refused and starts nothing.
func TestForkFromHere(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	s, other := e.session(), e.session()
	if _, err := e.rt.Prompt(ctx, s.ID, "ada", shared.AddRequest{Content: "make it blue"}); err != nil {
		t.Fatal(err)
	}
	reply := e.text(s.ID, "It is blue now.")
	if _, err := e.rt.Prompt(ctx, s.ID, "ada", shared.AddRequest{Content: "now green"}); err != nil {
		t.Fatal(err)
	}
	e.text(s.ID, "Green it is.")
	theirs := e.text(other.ID, "elsewhere")
	sessions := func() int {
		tasks, err := e.store.ListTasks(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, task := range tasks {
			n += len(task.Sessions)
		}
		return n
	}
	before := sessions()

	for _, tt := range []struct {
		name, message string
		status        int
		says          string
	}{
		{"unknown", "nope", http.StatusNotFound, "message not found"},
		{"another session's", theirs.ID, http.StatusBadRequest, "is not in session"},
		{"a prompt", e.messages(s.ID)[0].ID, http.StatusBadRequest, "one of the agent's replies"},
	} {
		if body := e.expect(tt.status, "POST", "/api/v1/task-sessions/"+s.ID+"/messages/"+tt.message+"/fork", "", nil); !strings.Contains(body, tt.says) {
			t.Errorf("%s: %s", tt.name, body)
		}
	}
	e.expect(http.StatusNotFound, "POST", "/api/v1/task-sessions/nope/messages/"+reply.ID+"/fork", "", nil)
	if n := sessions(); n != before {
		t.Fatalf("refused forks made sessions: %d, were %d", n, before)
	}

	var f shared.Fork
	e.expect(http.StatusCreated, "POST", "/api/v1/task-sessions/"+s.ID+"/messages/"+reply.ID+"/fork", "", &f)
	want := "Let's continue from an earlier conversation. Here is what was said, up to where we take it up:\n\n" +
		"Me: make it blue\n\nYou: It is blue now.\n\nGo on from there: "
	if f.Forked || f.Draft != want || f.Session.ID == s.ID || f.Session.TaskID != s.TaskID || f.Session.Agent != s.Agent {
		t.Errorf("fork: %+v\ndraft %q", f, f.Draft)
	}
	if got := e.messages(f.Session.ID); len(got) != 0 {
		t.Errorf("the fork sent something: %+v", got)
	}
}

// messages lists a session's messages, oldest first.
func (e *env) messages(sessionID string) []shared.Message {
	e.t.Helper()
	page, err := e.store.ListMessages(context.Background(), shared.ListRequest{SessionID: sessionID, Sort: shared.SortAsc})
	if err != nil {
		e.t.Fatal(err)
	}
	return page.Messages
}
