package main

import (
	"context"
	"fmt"
	"strings"

	"conch/server/store"
	"conch/shared"
)

// seedSpec describes one seeded session: Messages messages alternating between a finished
// shell command whose stdout is StdoutBytes long and an agent text message, or only shell
// commands with AllShell.
type seedSpec struct {
	Messages    int
	StdoutBytes int
	AllShell    bool
}

// seeded is what the benchmarks need to know about a seeded session.
type seeded struct {
	SessionID string
	ShellIDs  []string // every shell command, oldest first
	MiddleID  string   // the message in the middle, a cursor for a page deep in the session
}

// seedSession writes a closed session through the store API. Commands are stored completed,
// so the server's start-up sweep changes nothing about them.
func seedSession(ctx context.Context, st *store.Store, taskID string, spec seedSpec) (seeded, error) {
	sess, err := st.CreateSession(ctx, taskID, "shell", "/tmp")
	if err != nil {
		return seeded{}, err
	}
	if _, err := st.SetSessionState(ctx, sess.ID, shared.SessionClosed, ""); err != nil {
		return seeded{}, err
	}
	out := seeded{SessionID: sess.ID}
	stdout := outputText(spec.StdoutBytes)
	zero := 0
	// One transaction per batch: seeding spends its time writing, not committing.
	const batch = 500
	var nms []store.NewMessage
	for i := range spec.Messages {
		nm := store.NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent, Type: shared.TypeMessage,
			Content: fmt.Sprintf("Message %d: the command finished; here is what it printed, in short.", i)}
		if i%2 == 0 || spec.AllShell {
			cmd := fmt.Sprintf("go test ./... -run TestCase%d", i)
			nm.Type, nm.Content = shared.TypeToolExecute, cmd
			nm.Metadata = &shared.Metadata{ToolCallID: fmt.Sprintf("call_%d", i), Title: cmd,
				Status: shared.StatusCompleted, Kind: "execute",
				Normalized: &shared.Normalized{Kind: shared.NormalizedShellExec,
					ShellExec: &shared.ShellExec{Command: cmd, WorkDir: "/tmp"}}}
			nm.Output = &shared.ShellOutput{Stdout: stdout, ExitCode: &zero}
		}
		nms = append(nms, nm)
		if len(nms) < batch && i < spec.Messages-1 {
			continue
		}
		msgs, err := st.CreateMessages(ctx, nms)
		if err != nil {
			return seeded{}, fmt.Errorf("seed messages up to %d: %w", i, err)
		}
		for j, m := range msgs {
			if shared.ShellOf(m) != nil {
				out.ShellIDs = append(out.ShellIDs, m.ID)
			}
			if i-len(msgs)+1+j == spec.Messages/2 {
				out.MiddleID = m.ID
			}
		}
		nms = nms[:0]
	}
	return out, nil
}

// outputText is n bytes of numbered ASCII lines, like a test run's log.
func outputText(n int) string {
	var b strings.Builder
	b.Grow(n + 64)
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "=== RUN   TestCase%06d ok  conch/server/store 0.%03ds\n", i, i%1000)
	}
	return b.String()[:n]
}
