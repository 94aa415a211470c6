package api

import (
	"context"
	"testing"

	"conch/app/client"
	"conch/server/waittest"
	"conch/shared"
)

// TestTypedClientAgainstServer drives the UI's own client (app/client) against the real
// routes, so the two halves of the wire cannot drift apart.
func TestTypedClientAgainstServer(t *testing.T) {
	e := newEnv(t)
	c := client.New("http://" + e.listen())
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Limit(t))
	defer cancel()

	agents, err := c.Agents(ctx)
	if err != nil || len(agents) != 1 || agents[0].Name != "shell" {
		t.Fatalf("agents %v, %v", agents, err)
	}
	task, err := c.CreateTask(ctx, "client task", "")
	if err != nil {
		t.Fatal(err)
	}
	sess, err := c.StartSession(ctx, task.ID, "shell", "")
	if err != nil || sess.State != shared.SessionReady {
		t.Fatalf("session %+v, %v", sess, err)
	}
	if _, err := c.StartSession(ctx, task.ID, "nope", ""); shared.ErrorCode(err) != shared.CodeInvalid {
		t.Errorf("unknown agent: %v", err)
	}
	if got, err := c.GetSession(ctx, sess.ID); err != nil || got.ID != sess.ID {
		t.Errorf("get session %+v, %v", got, err)
	}

	ws, err := c.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if err := ws.Subscribe(ctx, sess.ID); err != nil {
		t.Fatal(err)
	}
	sent, err := c.SendMessage(ctx, sess.ID, "echo hi", "cm-1")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case env := <-ws.Notifications():
		if env.Action != shared.ActionMessageAdded {
			t.Errorf("notification %s", env.Action)
		}
	case <-ctx.Done():
		t.Fatal("no added notification")
	}
	added, err := ws.Add(ctx, shared.AddRequest{SessionID: sess.ID, Content: "echo hi", ClientMessageID: "cm-1"})
	if err != nil || added.ID != sent.ID {
		t.Errorf("repeated add over ws: %+v, %v", added, err)
	}
	sh := e.shell(sess.ID, "echo hi", shared.StatusCompleted, &shared.ShellOutput{Stdout: "hi\n", ExitCode: intp(0)})

	restPage, err := c.ListMessages(ctx, shared.ListRequest{SessionID: sess.ID, Limit: new(10)})
	if err != nil || len(restPage.Messages) != 2 {
		t.Fatalf("REST page %+v, %v", restPage, err)
	}
	wsPage, err := ws.List(ctx, shared.ListRequest{SessionID: sess.ID, Limit: new(10)})
	if err != nil || len(wsPage.Messages) != 2 || wsPage.Cursor != restPage.Cursor {
		t.Errorf("WS page %+v, %v", wsPage, err)
	}
	if _, err := c.ListMessages(ctx, shared.ListRequest{SessionID: sess.ID, Sort: "sideways"}); shared.ErrorCode(err) != shared.CodeInvalid {
		t.Errorf("bad sort: %v", err)
	}
	if _, err := ws.List(ctx, shared.ListRequest{SessionID: "nope"}); shared.ErrorCode(err) != shared.CodeNotFound {
		t.Errorf("WS list of an unknown session: %v", err)
	}

	snap, err := c.ShellOutput(ctx, sess.ID, sh.ID)
	if err != nil || snap.Output.Stdout != "hi\n" {
		t.Errorf("snapshot %+v, %v", snap, err)
	}
	if _, err := c.ShellOutput(ctx, sess.ID, sent.ID); shared.ErrorCode(err) != shared.CodeNotFound {
		t.Errorf("snapshot of a user message: %v", err)
	}
	if raw, err := c.ShellOutputRaw(ctx, sess.ID, sh.ID, "stdout"); err != nil || raw != "hi\n" {
		t.Errorf("raw stdout %q, %v", raw, err)
	}
	if _, err := c.ShellOutputRaw(ctx, sess.ID, sh.ID, "both"); shared.ErrorCode(err) != shared.CodeInvalid {
		t.Errorf("raw of a bad stream: %v", err)
	}
	if err := c.Cancel(ctx, sess.ID); err != nil {
		t.Errorf("cancel: %v", err)
	}
	tasks, err := c.ListTasks(ctx)
	if err != nil || len(tasks) != 1 || len(tasks[0].Sessions) != 1 {
		t.Errorf("tasks %+v, %v", tasks, err)
	}
	if err := ws.Unsubscribe(ctx, sess.ID); err != nil {
		t.Errorf("unsubscribe: %v", err)
	}
}

// A script with the server's token gets in over REST and the WebSocket; without it, 401.
func TestTypedClientWithToken(t *testing.T) {
	e := newEnv(t, withToken)
	base := "http://" + e.listen()
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Limit(t))
	defer cancel()

	if _, err := client.New(base).Agents(ctx); shared.ErrorCode(err) != shared.CodeUnauthorized {
		t.Fatalf("without the token: %v", err)
	}
	if _, err := client.New(base).Dial(ctx); err == nil {
		t.Fatal("WebSocket without the token was accepted")
	}
	c := client.New(base).WithToken(token)
	task, err := c.CreateTask(ctx, "scripted", "")
	if err != nil {
		t.Fatal(err)
	}
	ws, err := c.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	sess := e.session()
	if err := ws.Subscribe(ctx, sess.ID); err != nil {
		t.Fatalf("subscribe with the token: %v", err)
	}
	if task.Title != "scripted" {
		t.Fatalf("task %+v", task)
	}
}
