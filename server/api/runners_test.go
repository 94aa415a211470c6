package api

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"conch/server/acp"
	"conch/server/runner"
	"conch/server/waittest"
	"conch/shared"
)

// A runner is let in by a runner token alone, with what it announces checked before the
// upgrade; it is listed while connected; revoking its token drops it, and it is refused
// when it dials again.
func TestRunnerConnect(t *testing.T) {
	e := newEnv(t, withToken)
	addr := e.listen()
	admin := []string{"Authorization", "Bearer " + token}
	ada := e.accountWithToken("ada", shared.RoleAdmin)
	var tok shared.AccessToken
	e.expect(http.StatusCreated, "POST", "/api/v1/runners/tokens", `{"name":"pool"}`, &tok, admin...)
	var tokens struct{ Tokens []shared.AccessToken }
	e.expect(http.StatusOK, "GET", "/api/v1/runners/tokens", "", &tokens, admin...)
	if len(tokens.Tokens) != 1 || tokens.Tokens[0].ID != tok.ID || tokens.Tokens[0].Token != "" {
		t.Fatalf("tokens %+v", tokens)
	}
	// Refused before the upgrade, as plain HTTP (a real socket's refusal is the revoked
	// runner's, below).
	good := "name=r1&labels=gpu,os%3Dlinux&capacity=2"
	for what, c := range map[string]struct {
		query, auth string
		want        int
	}{
		"no token":                {good, "", http.StatusUnauthorized},
		"the server's token":      {good, "Bearer " + token, http.StatusUnauthorized},
		"an access token":         {good, ada[1], http.StatusUnauthorized},
		"a wrong runner token":    {good, "Bearer conch_runner_NOPE", http.StatusUnauthorized},
		"a bad label":             {"name=r1&labels=GPU&capacity=2", "Bearer " + tok.Token, http.StatusBadRequest},
		"no capacity":             {"name=r1", "Bearer " + tok.Token, http.StatusBadRequest},
		"a bad name":              {"name=-r&capacity=1", "Bearer " + tok.Token, http.StatusBadRequest},
		"no WebSocket, all right": {good, "Bearer " + tok.Token, http.StatusBadRequest},
	} {
		if resp, raw := e.do("GET", runner.ConnectPath+"?"+c.query, "", "Authorization", c.auth); resp.StatusCode != c.want {
			t.Errorf("%s: %d %s, want %d", what, resp.StatusCode, raw, c.want)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- runner.Run(ctx, runner.Options{Server: "http://" + addr, Token: tok.Token, Machine: acp.Local(acp.LocalConfig{DataDir: t.TempDir()}),
			Hello: runner.Hello{Name: "r1", Labels: []string{"gpu", "os=linux"}, Capacity: 2}})
	}()
	listed := func() []shared.Runner {
		var l shared.RunnerList
		e.expect(http.StatusOK, "GET", "/api/v1/runners", "", &l, admin...)
		return l.Runners
	}
	waittest.Until(t, func() bool { l := listed(); return len(l) == 1 && l[0].Connected })
	if r := listed()[0]; r.Name != "r1" || len(r.Labels) != 2 || r.Labels[1] != "os=linux" || r.Capacity != 2 || r.Sessions != 0 {
		t.Fatalf("listed %+v", r)
	}
	e.clock.Advance(time.Minute) // past the wait of the wrong token above
	e.expect(http.StatusNoContent, "DELETE", "/api/v1/runners/tokens/"+tok.ID, "", nil, admin...)
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "refused this runner (401)") {
			t.Fatalf("runner ended with %v", err)
		}
	case <-time.After(waittest.Limit(t)):
		t.Fatal("the revoked runner still runs")
	}
	if l := listed(); len(l) != 1 || l[0].Connected {
		t.Fatalf("after revocation: %+v", l)
	}
}

// BenchmarkRunnerStream is one operation's way through a runner connected on loopback: a
// stream opened by the server, the runner's check that a directory is one (Machine.Dir)
// answered, and closed, as the server opens one per operation of a session placed there.
func BenchmarkRunnerStream(b *testing.B) {
	var reg *runner.Registry
	e := newEnv(b, withToken, func(c *Config) { reg = runner.New(runner.Config{Store: c.Store, Logger: c.Logger}); c.Runners = reg })
	addr := e.listen()
	var tok shared.AccessToken
	e.expect(http.StatusCreated, "POST", "/api/v1/runners/tokens", `{"name":"bench"}`, &tok, "Authorization", "Bearer "+token)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := b.TempDir()
	go runner.Run(ctx, runner.Options{Server: "http://" + addr, Token: tok.Token, Machine: acp.Local(acp.LocalConfig{DataDir: dir}), Hello: runner.Hello{Name: "r1", Labels: []string{"bench"}, Capacity: 1},
		Logger: slog.New(slog.DiscardHandler)})
	sess := e.session()
	var r *runner.Runner
	waittest.Until(b, func() bool { r, _, _ = reg.Place(ctx, []string{"bench"}, sess.ID); return r != nil })
	m := acp.Remote(r.Open, r.Gone())
	b.ResetTimer()
	for b.Loop() {
		if got, err := m.Dir(ctx, dir); err != nil || got != dir {
			b.Fatalf("Dir: %q %v", got, err)
		}
	}
}
