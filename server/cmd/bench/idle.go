package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"conch/shared"
)

// The idle step: how many sessions it starts, the --agent-idle it gives the server (long
// enough for all of them to start before the first is stopped), and how long it waits for
// the idle stops.
const (
	idleSessions = 50
	idleAfter    = 20 * time.Second
	idleWait     = 90 * time.Second
)

// idle measures what idle sessions hold while their agents run and once --agent-idle has
// stopped them: the server and every process under it (agents, their namespaces' first
// processes), memory summed.
func (b *bench) idle(ctx context.Context) error {
	srv, err := startConch(ctx, b.conchBin, filepath.Join(b.tmp, "idle.db"), "--agent-idle", idleAfter.String())
	if err != nil {
		return err
	}
	defer srv.stop()
	ids := make([]string, 0, idleSessions)
	for i := range idleSessions {
		sess, err := srv.startShellSession(ctx, fmt.Sprintf("idle %d", i))
		if err != nil {
			return err
		}
		ids = append(ids, sess.ID)
	}
	running, procs, err := treePSS(srv.PID)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(idleWait)
	for stopped := 0; stopped < len(ids); {
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s, %d of %d agents were stopped", idleWait, stopped, len(ids))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
		if stopped, err = countStopped(ctx, srv, ids); err != nil {
			return err
		}
	}
	after, procsAfter, err := treePSS(srv.PID)
	if err != nil {
		return err
	}
	b.r.h(2, "Idle sessions")
	b.r.p("%d sessions of the built-in shell agent, started one after another and left idle, on a server with "+
		"`--agent-idle %s`. Memory is the proportional set size (PSS: a page shared by n processes counts 1/n to each) "+
		"of the server and every process under it (each agent and its namespace's first process), summed from "+
		"/proc/PID/smaps_rollup, once all have started and once every agent has been stopped.", idleSessions, idleAfter)
	b.r.table([]string{"", "processes", "PSS", "per session"}, [][]string{
		{"agents running", strconv.Itoa(procs), bytesIEC(float64(running << 10)), bytesIEC(float64(running << 10 / idleSessions))},
		{"agents stopped", strconv.Itoa(procsAfter), bytesIEC(float64(after << 10)), bytesIEC(float64(after << 10 / idleSessions))},
	})
	return nil
}

// countStopped counts the sessions of ids whose agent is stopped.
func countStopped(ctx context.Context, srv *conch, ids []string) (int, error) {
	n := 0
	for _, id := range ids {
		raw, err := srv.get(ctx, "/api/v1/task-sessions/"+id)
		if err != nil {
			return 0, err
		}
		var s shared.Session
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, err
		}
		if s.Stopped {
			n++
		}
	}
	return n, nil
}

// treePSS sums the proportional set size (KiB: a page shared by n processes counts 1/n
// to each, so the agents' one binary is not counted fifty times) of pid and every process
// under it, and counts them.
func treePSS(pid int) (kib int64, procs int, err error) {
	for todo := []int{pid}; len(todo) > 0; {
		p := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		rollup, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", p))
		if err != nil {
			if p == pid {
				return 0, 0, err
			}
			continue // ended meanwhile
		}
		for line := range strings.Lines(string(rollup)) {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "Pss:" {
				n, _ := strconv.ParseInt(f[1], 10, 64)
				kib += n
			}
		}
		procs++
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", p))
		for _, t := range tasks {
			data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", p, t.Name()))
			for _, f := range strings.Fields(string(data)) {
				if child, err := strconv.Atoi(f); err == nil {
					todo = append(todo, child)
				}
			}
		}
	}
	return kib, procs, nil
}
