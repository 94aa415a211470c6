package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"conch/server/cmd/loadgen/load"
	"conch/shared"
)

// The hardening load run: many watchers and pollers on one live command at once.
const (
	crowdSubscribers = 200
	crowdPollers     = 100
	crowdFor         = 30 * time.Second
)

// crowd runs a command that prints a line every 10 ms for 30 s while 200 WebSocket clients
// follow its session and 100 connections poll its output snapshot as fast as they can, and
// reports what failed, who was dropped, the pollers' latency and the server's memory.
func (b *bench) crowd(ctx context.Context) error {
	srv, _, err := b.serveSeeded(ctx, "crowd")
	if err != nil {
		return err
	}
	defer srv.stop()
	self := b.emitter
	sess, err := srv.startShellSession(ctx, "crowd")
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, crowdFor+2*time.Minute)
	defer cancel()
	clients, err := srv.subscribers(wctx, crowdSubscribers, sess.ID)
	defer closeAll(clients)
	if err != nil {
		return err
	}
	sampler, err := load.Watch(srv.PID, 100*time.Millisecond)
	if err != nil {
		return err
	}
	logs := make([]clientLog, len(clients))
	var wg sync.WaitGroup
	followAll(wctx, clients, logs, 1, &wg)
	// The run: the command, then the pollers on its output while the crowd follows it.
	run := func() (load.Result, error) {
		command := fmt.Sprintf("%s emit -every 10ms -for %s", shared.ShellJoin(self), crowdFor)
		var prompt shared.Message
		if err := srv.post(wctx, "/api/v1/task-sessions/"+sess.ID+"/messages", shared.AddRequest{Content: command},
			&prompt, http.StatusAccepted); err != nil {
			return load.Result{}, err
		}
		id, err := srv.commandOf(wctx, sess.ID)
		if err != nil {
			return load.Result{}, err
		}
		return b.loadFor(wctx, srv, crowdFor, crowdPollers,
			srv.URL+"/api/v1/task-sessions/"+sess.ID+"/messages/"+id+"/shell-output")
	}
	polls, pollErr := run()
	if pollErr != nil && polls.Requests == 0 {
		cancel() // the followers stop too
	}
	wg.Wait()
	proc := sampler.Stop()
	if pollErr != nil && polls.Requests == 0 {
		return pollErr
	}

	var dropped int
	var notes dist
	for _, l := range logs {
		if l.err != nil {
			dropped++
			continue
		}
		notes = append(notes, float64(len(l.frames)))
	}
	b.r.h(2, "A crowd on one live command")
	b.r.p("One command prints a line every 10 ms for %s while %d WebSocket clients follow its session (each "+
		"to the notification of its terminal status) and %d connections poll its output snapshot as fast as "+
		"they can (plain GETs, the heaviest a poller can be). *Dropped* counts subscribers whose connection "+
		"ended before the command did; *errors* are failed or non-2xx polls. Memory is the server's VmRSS.",
		crowdFor, crowdSubscribers, crowdPollers)
	b.r.table([]string{"subscribers", "dropped", "notifications per subscriber", "pollers", "polls", "errors",
		"polls/s", "p50", "p99", "server RSS peak", "server RSS at end"},
		[][]string{{fmt.Sprint(crowdSubscribers), fmt.Sprint(dropped), notes.format(count), fmt.Sprint(crowdPollers),
			fmt.Sprint(polls.Requests), fmt.Sprint(polls.Errors), count(polls.RPS), micros(polls.P50us), micros(polls.P99us),
			bytesIEC(float64(proc.RSSMaxKiB) * 1024), bytesIEC(float64(proc.RSSEndKiB) * 1024)}})
	return nil
}

// commandOf waits for the session's shell command to be stored and returns its id.
func (c *conch) commandOf(ctx context.Context, sessionID string) (string, error) {
	for {
		body, err := c.get(ctx, "/api/v1/task-sessions/"+sessionID+"/messages?sort=desc&limit=10")
		if err != nil {
			return "", err
		}
		var page shared.MessagePage
		if err := json.Unmarshal(body, &page); err != nil {
			return "", err
		}
		for _, m := range page.Messages {
			if shared.ShellOf(m) != nil {
				return m.ID, nil
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("the command never appeared: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
