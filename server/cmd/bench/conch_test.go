package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"conch/server/servetest"
	"conch/server/waittest"
	"conch/shared"
)

// TestHarnessAgainstRealServer runs the payload measurement against the real binary
// (CONCH_BIN, as make test sets it) on a small seeded session.
func TestHarnessAgainstRealServer(t *testing.T) {
	bin := servetest.Bin(t)
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Limit(t))
	defer cancel()
	b := &bench{conchBin: bin, tmp: t.TempDir()}
	srv, sessions, err := b.serveSeeded(ctx, "e2e", seedSpec{Messages: 6, StdoutBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.stop()
	s := sessions[0]

	snap, err := srv.snapshot(ctx, s.SessionID, s.ShellIDs[0])
	if err != nil || len(snap.Output.Stdout) != 4096 {
		t.Fatalf("snapshot: %v, %d bytes", err, len(snap.Output.Stdout))
	}
	ws, err := srv.dialWS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.close()
	frame, err := ws.request(ctx, shared.ActionMessageList, shared.ListRequest{SessionID: s.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	var env struct {
		Payload shared.MessagePage `json:"payload"`
	}
	if err := json.Unmarshal(frame, &env); err != nil || env.Payload.Total != 6 {
		t.Fatalf("message.list: %v, %+v", err, env.Payload)
	}
	if strings.Contains(string(frame), snap.Output.Stdout[:64]) {
		t.Fatal("a body travelled in message.list")
	}
	row, err := b.payloadRow(ctx, srv, 4096, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(row) != 11 || !strings.HasPrefix(row[3], "x") {
		t.Fatalf("payload row %q", row)
	}
	if len(b.goals.listBytesPerShell) != 1 || b.goals.listBytesPerShell[0] <= 0 {
		t.Fatalf("targets not recorded: %+v", b.goals)
	}
}
