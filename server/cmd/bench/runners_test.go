package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"conch/server/servetest"
	"conch/server/waittest"
	"conch/shared"
)

// answerAgain prompts until the command's output comes, and tells a session that ended:
// the server as it is (the session fails with its runner), as the lead's change will
// have it (a queued prompt dropped with the dead runner, the session parked and ready), a
// server that refuses prompts for a while, and one where nothing ever comes.
func TestAnswerAgain(t *testing.T) {
	const command = "echo back"
	ready, running := shared.Session{State: shared.SessionReady}, shared.Session{State: shared.SessionRunning}
	failed := shared.Session{State: shared.SessionFailed, Error: "the runner's connection ended"}
	tests := []struct {
		name     string
		statuses []int            // the answers to the prompts, in turn (the last repeats)
		states   []shared.Session // the session after the first prompt, in turn (the last repeats)
		outputAt int              // the taken prompt (1 the first) whose command prints (0: none does)
		want     answer
		wantErr  string
	}{
		{"fails with its runner", []int{202}, []shared.Session{running, failed}, 0,
			answer{prompts: 1, ended: "failed (the runner's connection ended)"}, ""},
		{"a queued prompt dropped, then parked", []int{202}, []shared.Session{running, ready}, 2,
			answer{prompts: 2}, ""},
		{"refused, then taken", []int{409, 409, 202}, []shared.Session{running}, 1,
			answer{prompts: 1, conflicts: 2}, ""},
		{"never answers", []int{202}, []shared.Session{running}, 0,
			answer{prompts: 1}, `no output of "echo back"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			outs := &firstOutputs{at: map[string]time.Time{}, changed: make(chan struct{}, 1)}
			var mu sync.Mutex
			prompts, taken, polls := 0, 0, 0
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				if r.Method == http.MethodPost {
					status := tt.statuses[min(prompts, len(tt.statuses)-1)]
					prompts++
					if status == http.StatusAccepted {
						taken++
					}
					if status == http.StatusAccepted && taken == tt.outputAt {
						outs.mu.Lock()
						outs.at[command] = time.Now()
						outs.mu.Unlock()
					}
					w.WriteHeader(status)
					_, _ = w.Write([]byte("{}"))
					return
				}
				_ = json.NewEncoder(w).Encode(tt.states[min(polls, len(tt.states)-1)])
				polls++
			}))
			defer ts.Close()
			ctx, cancel := context.WithTimeout(context.Background(), waittest.Limit(t))
			defer cancel()
			got, err := (&conch{URL: ts.URL}).answerAgain(ctx, "s1", command, outs, time.Now().Add(time.Second))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.at.IsZero() || got.prompts != tt.want.prompts || got.conflicts != tt.want.conflicts || got.ended != tt.want.ended {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// A runner killed mid-turn, as the step does it, against the real conch: its session
// either answers again on the other runner or ends (as the server had it when this was
// written), the victim is the runner placed first, and it is back afterwards.
func TestRunnerDeath(t *testing.T) {
	bin := servetest.Bin(t)
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Limit(t))
	defer cancel()
	srv, pool, err := startRunners(ctx, bin, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.stop()
	defer pool.stopAll()
	before := pool.procs["r1"].PID
	d, err := runnerDeath(ctx, srv, pool, syscall.SIGKILL)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(d)
	if d.victim != "r1" || d.took <= 0 || d.start <= 0 || d.prompts+d.conflicts == 0 ||
		(d.ended == "" && d.runner != "r2") || (d.ended != "" && !strings.HasPrefix(d.ended, "failed")) {
		t.Fatalf("%+v", d)
	}
	if r1 := pool.procs["r1"]; r1.PID == before {
		t.Fatal("r1 was not started again")
	}
	var l shared.RunnerList
	if err := srv.getJSON(ctx, "/api/v1/runners", &l); err != nil || len(l.Runners) != 2 || !l.Runners[0].Connected || !l.Runners[1].Connected ||
		l.Runners[0].Sessions+l.Runners[1].Sessions != 0 {
		t.Fatalf("runners after: %+v %v", l, err)
	}
}
