package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"conch/server/cmd/loadgen/load"
	"conch/shared"
)

// frame is one notification about the watched command, as one client received it.
type frame struct {
	size    int // bytes of the whole WebSocket frame
	payload json.RawMessage
	at      time.Time
}

type clientLog struct {
	frames []frame
	err    error
}

// watched is one command run by the shell agent while clients watched it.
type watched struct {
	sessionID, messageID string
	clients              []clientLog
	seconds              float64 // from the first notification to the terminal one, at client 0
	proc                 load.Proc
	// wal is what SQLite's WAL grew by from the prompt on (0 on PostgreSQL); SQLite's
	// automatic checkpoint, every 1,000 frames, starts it again and would hide the frames
	// before it.
	wal int64
}

// watchCommand starts a shell session, subscribes n WebSocket clients to it, prompts the
// command and records every notification about the command until its status is terminal.
func (b *bench) watchCommand(ctx context.Context, srv *conch, n int, command string, limit time.Duration) (watched, error) {
	var w watched
	sess, err := srv.startShellSession(ctx, "bench command")
	if err != nil {
		return w, err
	}
	w.sessionID = sess.ID
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	clients, err := srv.subscribers(ctx, n, sess.ID)
	defer closeAll(clients)
	if err != nil {
		return w, err
	}
	sampler, err := load.Watch(srv.PID, 100*time.Millisecond)
	if err != nil {
		return w, err
	}
	walStart := walSize(srv.DB)
	w.clients = make([]clientLog, n)
	var wg sync.WaitGroup
	followAll(ctx, clients, w.clients, 1, &wg)
	var msg shared.Message
	if err := srv.post(ctx, "/api/v1/task-sessions/"+sess.ID+"/messages", shared.AddRequest{Content: command},
		&msg, http.StatusAccepted); err != nil {
		cancel()
		wg.Wait()
		sampler.Stop()
		return w, err
	}
	wg.Wait()
	w.proc = sampler.Stop()
	w.wal = walSize(srv.DB) - walStart
	for i, c := range w.clients {
		if c.err != nil {
			return w, fmt.Errorf("client %d of %d: %w", i+1, n, c.err)
		}
	}
	first := w.clients[0].frames
	w.seconds = first[len(first)-1].at.Sub(first[0].at).Seconds()
	var m shared.Message
	if err := json.Unmarshal(first[0].payload, &m); err != nil {
		return w, err
	}
	w.messageID = m.ID
	return w, nil
}

// subscribers dials n WebSocket clients subscribed to the session; close them with
// closeAll, also after an error.
func (c *conch) subscribers(ctx context.Context, n int, sessionID string) ([]*wsClient, error) {
	var clients []*wsClient
	for i := range n {
		ws, err := c.dialWS(ctx)
		if err != nil {
			return clients, fmt.Errorf("subscriber %d: %w", i+1, err)
		}
		clients = append(clients, ws)
		if _, err := ws.request(ctx, shared.ActionSubscribe, shared.SessionRef{SessionID: sessionID}); err != nil {
			return clients, fmt.Errorf("subscriber %d: %w", i+1, err)
		}
	}
	return clients, nil
}

func closeAll(clients []*wsClient) {
	for _, c := range clients {
		c.close()
	}
}

// followAll has each client follow its sessions' commands, until that many have ended,
// into logs (one each), in the background; wg is done when all have.
func followAll(ctx context.Context, clients []*wsClient, logs []clientLog, commands int, wg *sync.WaitGroup) {
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			logs[i] = c.follow(ctx, commands)
		}()
	}
}

// follow reads notifications about the subscribed sessions' shell commands until that
// many of them have been terminal.
func (c *wsClient) follow(ctx context.Context, commands int) clientLog {
	var log clientLog
	for ended := map[string]bool{}; len(ended) < commands; {
		_, data, err := c.conn.Read(ctx)
		if err != nil {
			log.err = fmt.Errorf("after %d notifications: %w", len(log.frames), err)
			return log
		}
		at := time.Now()
		var env shared.Envelope
		if err := json.Unmarshal(data, &env); err != nil {
			log.err = err
			return log
		}
		if env.Action != shared.ActionMessageAdded && env.Action != shared.ActionMessageUpdated {
			continue
		}
		var m shared.Message
		if err := env.Decode(&m); err != nil {
			log.err = err
			return log
		}
		if m.Type != shared.TypeToolExecute {
			continue
		}
		log.frames = append(log.frames, frame{size: len(data), payload: env.Payload, at: at})
		if m.Metadata != nil && m.Metadata.Status.IsTerminal() {
			ended[m.ID] = true
		}
	}
	return log
}

// walSize is the size of the WAL of the SQLite database at path: 0 when there is none.
func walSize(path string) int64 {
	info, err := os.Stat(path + "-wal")
	if err != nil {
		return 0
	}
	return info.Size()
}
