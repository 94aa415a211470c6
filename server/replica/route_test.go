package replica

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"conch/server/hub"
	"conch/server/internal/pgtest"
	"conch/server/store"
	"conch/server/waittest"
	"conch/shared"
)

// A person's prompt and answer for an agent another replica runs are stored, published
// once by the replica that took them, and addressed in the same commit to the owner's
// inbox; a repeated prompt publishes and addresses nothing.
func TestPersonsCommandsRoutedAndPublishedOnce(t *testing.T) {
	ctx := context.Background()
	b, a, sess, ask := ownedElsewhere(t)
	client := b.hub.Connect(hub.Who{})
	t.Cleanup(client.Close)
	client.Subscribe(sess.ID)

	prompt, err := b.rep.Prompt(ctx, sess.ID, "ann", shared.AddRequest{Content: "echo hi", ClientMessageID: "c-1"})
	if err != nil {
		t.Fatal(err)
	}
	if again, err := b.rep.Prompt(ctx, sess.ID, "ann", shared.AddRequest{Content: "echo hi", ClientMessageID: "c-1"}); err != nil || again.ID != prompt.ID {
		t.Fatalf("the repeated prompt: %s %v, want %s", again.ID, err, prompt.ID)
	}
	added := published(t, client.Take(), shared.ActionMessageAdded)
	if _, err := b.rep.AnswerPermission(ctx, sess.ID, ask.ID, "yes"); err != nil {
		t.Fatal(err)
	}
	updated := published(t, client.Take(), shared.ActionMessageUpdated)
	if added[prompt.ID] != 1 || len(added) != 1 {
		t.Errorf("prompt added %v, want %s once", added, prompt.ID)
	}
	if updated[ask.ID] != 1 || len(updated) != 1 {
		t.Errorf("answer published %v, want %s once", updated, ask.ID)
	}
	cmds, err := a.TakeCommands(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Command{{Sender: b.rep.id, SessionID: sess.ID, Kind: store.CommandPrompt, MessageID: prompt.ID, Body: "echo hi"},
		{Sender: b.rep.id, SessionID: sess.ID, Kind: store.CommandPermission, MessageID: ask.ID, Body: "yes"}}
	if len(cmds) != len(want) {
		t.Fatalf("the owner's inbox: %+v, want %+v", cmds, want)
	}
	for i := range want {
		if cmds[i].ID = ""; cmds[i] != want[i] {
			t.Errorf("command %d: %+v, want %+v", i, cmds[i], want[i])
		}
	}
}

// ownedElsewhere starts replica b, and a replica a that only holds its lease in the same
// database and owns a ready session with a pending permission request.
func ownedElsewhere(t *testing.T) (b *server, a *store.Store, sess shared.Session, ask shared.Message) {
	t.Helper()
	dsn := pgtest.Database(t)
	ctx := context.Background()
	b = startServer(t, dsn)
	// Its first connection reads again what changed in the sessions watched: once it has,
	// only what the test does is published.
	select {
	case <-b.rep.Listened():
	case <-time.After(waittest.Limit(t)):
		t.Fatal("b never listened")
	}
	a, err := store.Open(dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if err := a.Join(ctx, "owner", DefaultLease); err != nil {
		t.Fatal(err)
	}
	task, err := a.CreateTask(ctx, t.Name(), "")
	if err != nil {
		t.Fatal(err)
	}
	if sess, err = a.CreateSession(ctx, task.ID, "shell", "/tmp"); err != nil {
		t.Fatal(err)
	}
	if sess, err = a.SetSessionState(ctx, sess.ID, shared.SessionReady, ""); err != nil {
		t.Fatal(err)
	}
	ask, err = a.CreateMessage(ctx, store.NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent, Type: shared.TypePermissionRequest,
		Content: "may I?", Metadata: &shared.Metadata{Status: shared.StatusPending,
			Options: []shared.PermissionOption{{OptionID: "yes", Name: "Yes", Kind: "allow_once"}}}})
	if err != nil {
		t.Fatal(err)
	}
	return b, a, sess, ask
}

// published counts the frames of action by the id of the message they carry.
func published(t *testing.T, frames [][]byte, action string) map[string]int {
	t.Helper()
	n := map[string]int{}
	for _, f := range frames {
		var env shared.Envelope
		var m shared.Message
		if err := json.Unmarshal(f, &env); err != nil {
			t.Fatal(err)
		}
		if env.Action != action {
			continue
		}
		if err := env.Decode(&m); err != nil {
			t.Fatal(err)
		}
		n[m.ID]++
	}
	return n
}

// A prompt for a session whose replica drains is refused as that replica refuses its own
// (draining, to be sent again) with nothing stored or addressed, while the person's answer
// to a permission request of its running turn still reaches it.
func TestPromptForADrainingOwnerRefused(t *testing.T) {
	ctx := context.Background()
	b, a, sess, ask := ownedElsewhere(t)
	if err := a.Drain(ctx); err != nil {
		t.Fatal(err)
	}

	_, err := b.rep.Prompt(ctx, sess.ID, "ann", shared.AddRequest{Content: "echo hi", ClientMessageID: "c-1"})
	if shared.ErrorCode(err) != shared.CodeDraining {
		t.Errorf("a prompt for a draining owner: %v, want code %s", err, shared.CodeDraining)
	}
	if page, err := b.store.ListMessages(ctx, shared.ListRequest{SessionID: sess.ID}); err != nil || page.Total != 1 {
		t.Errorf("messages after the refusal: %d (%v), want the permission request alone", page.Total, err)
	}
	if _, err := b.rep.AnswerPermission(ctx, sess.ID, ask.ID, "yes"); err != nil {
		t.Fatal(err)
	}
	cmds, err := a.TakeCommands(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) != 1 || cmds[0].Kind != store.CommandPermission {
		t.Errorf("the draining owner's inbox: %+v, want the answer alone", cmds)
	}
}
