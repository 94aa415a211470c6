package store

import (
	"context"
	"maps"
	"testing"

	"conch/shared"
)

func TestRunnerTokens(t *testing.T) {
	s, _ := open(t, 0)
	ctx := context.Background()
	made, err := s.CreateRunnerToken(ctx, "gpu pool", "hash-1")
	if err != nil || made.Name != "gpu pool" || made.Token != "" {
		t.Fatalf("create: %+v, %v", made, err)
	}
	if id, err := s.RunnerToken(ctx, "hash-1"); err != nil || id != made.ID {
		t.Fatalf("by hash: %q, %v", id, err)
	}
	list, err := s.RunnerTokens(ctx)
	if err != nil || len(list) != 1 || list[0].ID != made.ID || list[0].LastUsedAt == nil {
		t.Fatalf("list after use: %+v, %v", list, err)
	}
	// An access token's hash is no runner token, nor the other way round.
	if _, err := s.RunnerToken(ctx, "hash-2"); !IsUnknownToken(err) {
		t.Fatalf("unknown hash: %v", err)
	}
	if _, _, err := s.AccountByToken(ctx, "hash-1"); !IsUnknownToken(err) {
		t.Fatalf("a runner token as an access token: %v", err)
	}
	if err := s.DeleteRunnerToken(ctx, made.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RunnerToken(ctx, "hash-1"); !IsUnknownToken(err) {
		t.Fatalf("revoked: %v", err)
	}
	if err := s.DeleteRunnerToken(ctx, made.ID); shared.ErrorCode(err) != shared.CodeNotFound {
		t.Fatalf("revoked twice: %v", err)
	}
}

// A session's runner is stored when it is made there or moves there, with its directory;
// the loads count the live sessions of each runner.
func TestSessionRunner(t *testing.T) {
	s, _ := open(t, 0)
	ctx := context.Background()
	a, b, c := newSession(t, s), newSession(t, s), newSession(t, s)
	for id, runner := range map[string]string{a.ID: "r1", b.ID: "r1", c.ID: "r2"} {
		if err := s.MoveSession(ctx, id, runner, "/srv/"+runner); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := s.GetSession(ctx, a.ID); got.Runner != "r1" || got.Cwd != "/srv/r1" {
		t.Fatalf("the moved session: runner %q, directory %q", got.Runner, got.Cwd)
	}
	d, err := s.CreateSessionOn(ctx, a.TaskID, "shell", "/srv/r2/d", "r2")
	if got, _ := s.GetSession(ctx, d.ID); err != nil || d.Runner != "r2" || got.Runner != "r2" {
		t.Fatalf("a session made on r2: %+v, stored %q, %v", d, got.Runner, err)
	}
	if _, err := s.SetSessionState(ctx, b.ID, shared.SessionClosed, ""); err != nil {
		t.Fatal(err)
	}
	loads, err := s.RunnerLoads(ctx)
	if want := map[string]int{"r1": 1, "r2": 2}; err != nil || !maps.Equal(loads, want) {
		t.Fatalf("loads %v (%v), want %v", loads, err, want)
	}
	if err := s.MoveSession(ctx, "nope", "r1", "/srv"); shared.ErrorCode(err) != shared.CodeNotFound {
		t.Fatalf("unknown session: %v", err)
	}
	if err := s.MoveSession(ctx, a.ID, "r3", "/srv/\x00"); shared.ErrorCode(err) != shared.CodeInvalid {
		t.Fatalf("a directory with a NUL: %v", err)
	}
}
