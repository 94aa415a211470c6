package main

import (
	"context"
	"path/filepath"
	"testing"

	"conch/server/store"
	"conch/shared"
)

func TestSeedSession(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "c.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	task, err := st.CreateTask(ctx, "bench", "")
	if err != nil {
		t.Fatal(err)
	}
	s, err := seedSession(ctx, st, task.ID, seedSpec{Messages: 9, StdoutBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.ShellIDs) != 5 || s.MiddleID == "" {
		t.Fatalf("seeded %+v", s)
	}
	page, err := st.ListMessages(ctx, s.SessionID, store.ListQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != 9 || page.Messages[4].ID != s.MiddleID || page.Messages[0].ID != s.ShellIDs[0] {
		t.Fatalf("listed %d messages, middle %s", page.Total, page.Messages[4].ID)
	}
	if se := shared.ShellOf(page.Messages[0]); se == nil || se.Output.StdoutBytes != 1000 {
		t.Fatalf("first message is not a 1000-byte shell command: %+v", page.Messages[0])
	}
	snap, err := st.GetShellOutput(ctx, s.SessionID, s.ShellIDs[4])
	if err != nil || len(snap.Output.Stdout) != 1000 || snap.Status != shared.StatusCompleted {
		t.Fatalf("snapshot %v %d %s", err, len(snap.Output.Stdout), snap.Status)
	}
	// Restarting the server must change nothing that was seeded.
	if err := st.RecoverAfterRestart(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := st.ListMessages(ctx, s.SessionID, store.ListQuery{})
	if err != nil || again.Messages[8].UpdatedAt != page.Messages[8].UpdatedAt {
		t.Fatal("recovery changed a seeded message")
	}
}

func TestOutputText(t *testing.T) {
	for _, n := range []int{0, 1, 1024, shared.OutputLimit} {
		if got := outputText(n); len(got) != n {
			t.Errorf("outputText(%d) has %d bytes", n, len(got))
		}
	}
}
