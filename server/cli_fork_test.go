package main

import (
	"context"
	"strings"
	"testing"

	"conch/app/client"
	"conch/shared"
)

// conch fork names the reply to fork from; a message that is not an agent's reply, or
// none, is refused with the server's words and starts nothing.
func TestCLIForkRefuses(t *testing.T) {
	t.Chdir(t.TempDir())
	addr, stop := startServer(t, "conch.db")
	defer stop()
	if _, stderr, err := conch(t, addr, "run", "--", "echo hello"); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr)
	}
	api := client.New(addr)
	tasks, err := api.ListTasks(context.Background())
	if err != nil || len(tasks) != 1 || len(tasks[0].Sessions) != 1 {
		t.Fatalf("tasks %+v %v", tasks, err)
	}
	sess := tasks[0].Sessions[0]
	page, err := api.ListMessages(context.Background(), shared.ListRequest{SessionID: sess.ID})
	if err != nil || len(page.Messages) == 0 {
		t.Fatalf("messages %+v %v", page, err)
	}
	for _, tt := range []struct{ message, says string }{
		{page.Messages[0].ID, "a fork starts from one of the agent's replies"},
		{"nope", "message not found"},
	} {
		if _, _, err := conch(t, addr, "fork", sess.ID, tt.message); err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("fork of %s: %v, want %q", tt.message, err, tt.says)
		}
	}
	if _, _, err := conch(t, addr, "fork", sess.ID); err == nil || !strings.Contains(err.Error(), "give one SESSION_ID and one MESSAGE_ID") {
		t.Errorf("fork without a message: %v", err)
	}
	if tasks, _ := api.ListTasks(context.Background()); len(tasks[0].Sessions) != 1 {
		t.Errorf("a refused fork started a session: %+v", tasks[0].Sessions)
	}
}
