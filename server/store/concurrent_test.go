package store

import (
	"context"
	"sync"
	"testing"
	"time"

	"conch/shared"
)

// race runs n calls of fn at once (as far as the database lets them) and waits for all.
func race(n int, fn func(i int)) {
	var start, done sync.WaitGroup
	start.Add(1)
	for i := range n {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			fn(i)
		}()
	}
	start.Done()
	done.Wait()
}

// Concurrent prompts with one client id store one message: every request gets it, none
// fails, and the session counts one.
func TestConcurrentPromptsOneClientID(t *testing.T) {
	s, _ := open(t, time.Millisecond)
	sess := newSession(t, s)
	const n = 16
	ids, created, errs := make([]string, n), make([]bool, n), make([]error, n)
	race(n, func(i int) {
		var m shared.Message
		m, created[i], _, errs[i] = s.AddUserMessage(context.Background(), sess.ID, "hello", "client-1", "")
		ids[i] = m.ID
	})
	firsts := 0
	for i := range n {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Errorf("request %d: %s, %v; want %s", i, ids[i], errs[i], ids[0])
		}
		if created[i] {
			firsts++
		}
	}
	page, err := s.ListMessages(context.Background(), shared.ListRequest{SessionID: sess.ID})
	if firsts != 1 || err != nil || page.Total != 1 || len(page.Messages) != 1 {
		t.Errorf("%d requests created, total %d, %d listed (%v); want one", firsts, page.Total, len(page.Messages), err)
	}
}

// A late "running" racing the final "completed" never wins, whichever commits first:
// the update reads the stored status and writes in one locked step.
func TestConcurrentUpdatesKeepTheFinalStatus(t *testing.T) {
	s, _ := open(t, time.Millisecond)
	sess := newSession(t, s)
	ctx := context.Background()
	for round := range 20 {
		m, err := s.CreateMessage(ctx, NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent,
			Type: shared.TypeToolExecute, Metadata: shellMeta(shared.StatusRunning)})
		if err != nil {
			t.Fatal(err)
		}
		race(8, func(i int) {
			st := shared.StatusRunning
			if i == 0 {
				st = shared.StatusCompleted
			}
			if _, _, err := s.UpdateMessage(ctx, m.ID, Update{Metadata: shellMeta(st),
				Output: &shared.ShellOutput{Stdout: "out\n"}}); err != nil {
				t.Error(err)
			}
		})
		got, err := s.GetMessage(ctx, m.ID)
		if err != nil || got.Metadata.Status != shared.StatusCompleted {
			t.Fatalf("round %d: status %s (%v), want completed", round, got.Metadata.Status, err)
		}
	}
}

// Two answers to one permission request at once: one is taken, the other is a conflict.
func TestConcurrentAnswersOneTaken(t *testing.T) {
	s, _ := open(t, time.Millisecond)
	sess := newSession(t, s)
	ctx := context.Background()
	for round := range 10 {
		ask := addAsk(t, s, sess.ID)
		options := []string{"yes", "no"}
		errs := make([]error, len(options))
		race(len(options), func(i int) { _, _, errs[i] = s.AnswerPermission(ctx, sess.ID, ask.ID, options[i]) })
		taken := 0
		for _, err := range errs {
			switch {
			case err == nil:
				taken++
			case shared.ErrorCode(err) != shared.CodeConflict:
				t.Errorf("round %d: %v, want a conflict", round, err)
			}
		}
		if taken != 1 {
			t.Fatalf("round %d: %d answers taken (%v), want 1", round, taken, errs)
		}
	}
}

// A reader paging after its cursor while prompts and agent messages are written at once
// sees every message exactly once: the catch-up after a reconnect lists after the last
// message it has, so a message that commits behind the cursor of a page already read
// would be lost for good.
func TestPagingAfterWhileWriting(t *testing.T) {
	s, _ := open(t, time.Millisecond)
	sess := newSession(t, s)
	ctx := context.Background()
	const writers, each = 8, 50
	done := make(chan struct{})
	go func() {
		defer close(done)
		race(writers, func(i int) {
			for range each {
				var err error
				if i%2 == 0 {
					_, _, _, err = s.AddUserMessage(ctx, sess.ID, "prompt", "", "")
				} else {
					_, err = s.CreateMessage(ctx, NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent,
						Type: shared.TypeMessage, Content: "reply"})
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}()
	seen := map[string]bool{}
	cursor := ""
	// read pages after the cursor until there are no more.
	read := func() error {
		for {
			page, err := s.ListMessages(ctx, shared.ListRequest{SessionID: sess.ID, After: cursor, Limit: new(7)})
			if err != nil {
				return err
			}
			for _, m := range page.Messages {
				if seen[m.ID] {
					t.Errorf("message %s listed twice", m.ID)
				}
				seen[m.ID] = true
			}
			if page.Cursor != "" {
				cursor = page.Cursor
			}
			if !page.HasMore {
				return nil
			}
		}
	}
	for writing := true; writing; {
		select {
		case <-done:
			writing = false // one last pass reads what the last writes committed
		default:
		}
		if err := read(); err != nil {
			<-done // the writers use the store until then
			t.Fatal(err)
		}
	}
	if len(seen) != writers*each {
		t.Errorf("%d of %d messages seen paging after the cursor", len(seen), writers*each)
	}
}
