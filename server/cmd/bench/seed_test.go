package main

import (
	"context"
	"encoding/json"
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
	page, err := st.ListMessages(ctx, shared.ListRequest{SessionID: s.SessionID})
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
	if _, err := st.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := st.ListMessages(ctx, shared.ListRequest{SessionID: s.SessionID})
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

func TestInlined(t *testing.T) {
	zero := 0
	m := shared.Message{ID: "m1", Type: shared.TypeToolExecute, Metadata: &shared.Metadata{
		Normalized: &shared.Normalized{Kind: shared.NormalizedShellExec, ShellExec: &shared.ShellExec{Command: "ls",
			Output: shared.ShellOutput{Stdout: "abc", ExitCode: &zero}.Summarize()}}}}
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	// The summary counts 3 bytes of a longer final output: only those 3 travel inline.
	got, err := inlined(raw, shared.ShellOutput{Stdout: "abcdef", ExitCode: &zero})
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Metadata struct {
			Normalized struct {
				ShellExec struct {
					Command string             `json:"command"`
					Output  shared.ShellOutput `json:"output"`
				} `json:"shell_exec"`
			} `json:"normalized"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	se := back.Metadata.Normalized.ShellExec
	if se.Command != "ls" || se.Output.Stdout != "abc" || se.Output.ExitCode == nil || *se.Output.ExitCode != 0 {
		t.Fatalf("inlined: %s", got)
	}
	grow, err := inlineGrowth(raw, shared.ShellOutput{Stdout: "abc", ExitCode: &zero})
	if want := len(`{"stdout":"abc","exit_code":0}`) - len(`{"has_output":true,"stdout_bytes":3,"stderr_bytes":0,"truncated":false,"exit_code":0,"stdout_total_bytes":3,"stderr_total_bytes":0}`); err != nil || grow != want {
		t.Fatalf("growth %d, want %d (%v)", grow, want, err)
	}
	text, _ := json.Marshal(shared.Message{ID: "m2", Type: shared.TypeMessage, Content: "hi"})
	if same, err := inlined(text, shared.ShellOutput{Stdout: "x"}); err != nil || string(same) != string(text) {
		t.Fatalf("a text message changed: %s", same)
	}
}
