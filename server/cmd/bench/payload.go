package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"conch/server/store"
	"conch/shared"
)

// payloadSizes are the stdout sizes of the payload benchmark.
var payloadSizes = []int{0, 1 << 10, 64 << 10, 256 << 10}

const payloadMessages = 200

// uiPageSize is how many messages the session page lists first (app/ui/session.go).
const uiPageSize = 100

// seedDB creates a database in its own directory (the server keeps its data beside it),
// writes one session per spec into it through the store, and returns its path and the
// sessions, in the order of specs.
func (b *bench) seedDB(ctx context.Context, name string, specs ...seedSpec) (string, []seeded, error) {
	dir := filepath.Join(b.tmp, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	path := filepath.Join(dir, "conch.db")
	sessions, _, err := seedInto(ctx, path, name, specs...)
	return path, sessions, err
}

// seedInto writes one session per spec into the database db (a SQLite file or a
// postgres:// URL) through the store, and returns the sessions, in the order of specs,
// and how long writing them took.
func seedInto(ctx context.Context, db, name string, specs ...seedSpec) ([]seeded, time.Duration, error) {
	st, err := store.Open(db, nil)
	if err != nil {
		return nil, 0, err
	}
	defer st.Close()
	task, err := st.CreateTask(ctx, "bench "+name, "seeded by server/cmd/bench")
	if err != nil {
		return nil, 0, err
	}
	t := time.Now()
	sessions := make([]seeded, len(specs))
	for i, spec := range specs {
		if sessions[i], err = seedSession(ctx, st, task.ID, spec); err != nil {
			return nil, 0, err
		}
	}
	took := time.Since(t)
	progress("   seeded %s in %s", name, took.Round(time.Millisecond))
	return sessions, took, nil
}

// serveSeeded seeds a database as seedDB does and starts bin/conch on it.
func (b *bench) serveSeeded(ctx context.Context, name string, specs ...seedSpec) (*conch, []seeded, error) {
	db, sessions, err := b.seedDB(ctx, name, specs...)
	if err != nil {
		return nil, nil, err
	}
	srv, err := startConch(ctx, b.conchBin, db)
	return srv, sessions, err
}

// payload measures what a session of 200 messages (half shell commands) costs a browser,
// projected as served against the same messages with their output bodies inline.
func (b *bench) payload(ctx context.Context) error {
	specs := make([]seedSpec, len(payloadSizes))
	for i, size := range payloadSizes {
		specs[i] = seedSpec{Messages: payloadMessages, StdoutBytes: size}
	}
	srv, sessions, err := b.serveSeeded(ctx, "payload", specs...)
	if err != nil {
		return err
	}
	defer srv.stop()

	b.r.h(2, "Payload")
	b.r.p("A seeded session of %d messages (%d shell commands whose stdout has the given size, %d agent text "+
		"messages). *Projected* is what Conch sends; *inline* is the same JSON with each command's output "+
		"bodies in place of its summary, computed here from the snapshots (an inline mode that exists only "+
		"in this benchmark). The REST list and the WebSocket `message.list` ask for all %d messages "+
		"(`limit=%d`). The first page load is what opening `/sessions/{id}` fetches besides the cached app: "+
		"the HTML document and the WebSocket `message.list` of the newest %d messages. Byte counts are exact and "+
		"deterministic, so there is one run. Every shell message's command text (29 bytes) appears three times, "+
		"as the ACP runtime stores it: `content`, `metadata.title` and `shell_exec.command`.", payloadMessages,
		payloadMessages/2, payloadMessages/2, payloadMessages, payloadMessages, uiPageSize)
	var rows [][]string
	for i, s := range sessions {
		row, err := b.payloadRow(ctx, srv, payloadSizes[i], s)
		if err != nil {
			return err
		}
		rows = append(rows, row)
	}
	b.r.table([]string{"stdout", "REST list", "inline", "inline / projected", "per shell message (projected)",
		"per shell message (inline)", "per shell message inline / projected", "WS message.list", "WS inline", "first page load", "first page load inline"}, rows)

	b.r.p("Notifications of one running command, sent to one subscribed WebSocket client: the built-in shell " +
		"agent runs a command printing its output in four parts 0.3 s apart. *Inline* counts each notification " +
		"as if it carried the output received so far.")
	var nrows [][]string
	for _, size := range payloadSizes {
		row, err := b.notificationRow(ctx, srv, size)
		if err != nil {
			return err
		}
		nrows = append(nrows, row)
	}
	b.r.table([]string{"stdout", "notifications", "bytes (projected)", "per notification", "bytes (inline)",
		"inline / projected"}, nrows)
	return nil
}

func (b *bench) payloadRow(ctx context.Context, srv *conch, size int, s seeded) ([]string, error) {
	listPath := fmt.Sprintf("/api/v1/task-sessions/%s/messages?limit=%d", s.SessionID, payloadMessages)
	list, err := srv.get(ctx, listPath)
	if err != nil {
		return nil, err
	}
	var page struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(list, &page); err != nil {
		return nil, err
	}
	grow := map[string]int{} // message id -> bytes its output adds inline
	var shellBytes, extra, shells int
	for _, raw := range page.Messages {
		var m shared.Message
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		if shared.ShellOf(m) == nil {
			continue
		}
		snap, err := srv.snapshot(ctx, s.SessionID, m.ID)
		if err != nil {
			return nil, err
		}
		if grow[m.ID], err = inlineGrowth(raw, snap.Output); err != nil {
			return nil, err
		}
		shellBytes += len(raw)
		extra += grow[m.ID]
		shells++
	}
	ws, err := srv.dialWS(ctx)
	if err != nil {
		return nil, err
	}
	defer ws.close()
	frame, err := ws.request(ctx, shared.ActionMessageList, shared.ListRequest{SessionID: s.SessionID, Limit: new(payloadMessages)})
	if err != nil {
		return nil, err
	}
	// The session page asks for the newest uiPageSize messages over the WebSocket.
	firstList, err := ws.request(ctx, shared.ActionMessageList, shared.ListRequest{SessionID: s.SessionID,
		Limit: new(uiPageSize), Sort: shared.SortDesc})
	if err != nil {
		return nil, err
	}
	var first struct {
		Payload struct {
			Messages []struct {
				ID string `json:"id"`
			} `json:"messages"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(firstList, &first); err != nil {
		return nil, err
	}
	firstExtra := 0
	for _, m := range first.Payload.Messages {
		firstExtra += grow[m.ID]
	}
	html, err := srv.get(ctx, "/sessions/"+url.PathEscape(s.SessionID))
	if err != nil {
		return nil, err
	}
	n := float64(max(shells, 1))
	b.goals.listBytesPerShell = append(b.goals.listBytesPerShell, float64(shellBytes)/n)
	if size == shared.OutputLimit {
		b.goals.inlineRatio256List = float64(len(list)+extra) / float64(len(list))
		b.goals.inlineRatio256Shell = float64(shellBytes+extra) / float64(shellBytes)
	}
	firstLoad := len(html) + len(firstList)
	return []string{bytesIEC(float64(size)), bytesIEC(float64(len(list))), bytesIEC(float64(len(list) + extra)),
		fmt.Sprintf("x%.1f", float64(len(list)+extra)/float64(len(list))),
		fmt.Sprintf("%.0f B", float64(shellBytes)/n), bytesIEC(float64(shellBytes+extra) / n),
		fmt.Sprintf("x%.0f", float64(shellBytes+extra)/float64(shellBytes)),
		bytesIEC(float64(len(frame))), bytesIEC(float64(len(frame) + extra)),
		bytesIEC(float64(firstLoad)), bytesIEC(float64(firstLoad + firstExtra))}, nil
}

// snapshot fetches the whole output of a shell command.
func (c *conch) snapshot(ctx context.Context, sessionID, messageID string) (shared.ShellOutputSnapshot, error) {
	var snap shared.ShellOutputSnapshot
	raw, err := c.get(ctx, fmt.Sprintf("/api/v1/task-sessions/%s/messages/%s/shell-output", sessionID, messageID))
	if err == nil {
		err = json.Unmarshal(raw, &snap)
	}
	return snap, err
}

// inlined returns a projected message's JSON with its output summary replaced by the
// output bodies it summarises (the first stdout_bytes/stderr_bytes of full): the message
// as it would travel if output were not fetched on demand. Messages that are not shell
// commands come back unchanged. Keys come back sorted, which changes no byte count.
func inlined(raw []byte, full shared.ShellOutput) ([]byte, error) {
	var m struct {
		Metadata *struct {
			Normalized *struct {
				ShellExec *struct {
					Output shared.ShellOutputSummary `json:"output"`
				} `json:"shell_exec"`
			} `json:"normalized"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if m.Metadata == nil || m.Metadata.Normalized == nil || m.Metadata.Normalized.ShellExec == nil {
		return raw, nil
	}
	sum := m.Metadata.Normalized.ShellExec.Output
	out := full
	out.Stdout = full.Stdout[:min(sum.StdoutBytes, len(full.Stdout))]
	out.Stderr = full.Stderr[:min(sum.StderrBytes, len(full.Stderr))]
	out.ExitCode, out.Truncated, out.Signal = sum.ExitCode, sum.Truncated, sum.Signal
	body, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return replaceAt(raw, body, "metadata", "normalized", "shell_exec", "output")
}

// replaceAt returns the JSON object raw with the value at path replaced by value.
func replaceAt(raw, value []byte, path ...string) ([]byte, error) {
	if len(path) == 0 {
		return value, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	inner, err := replaceAt(obj[path[0]], value, path[1:]...)
	if err != nil {
		return nil, err
	}
	obj[path[0]] = inner
	return json.Marshal(obj)
}

// inlineGrowth is how many bytes longer raw is with its output inline (see inlined).
func inlineGrowth(raw []byte, full shared.ShellOutput) (int, error) {
	in, err := inlined(raw, full)
	return len(in) - len(raw), err
}

// notificationRow runs one command printing size bytes in four parts and measures the
// notifications a subscriber receives about it.
func (b *bench) notificationRow(ctx context.Context, srv *conch, size int) ([]string, error) {
	command := "sleep 1"
	if size > 0 {
		command = fmt.Sprintf("for i in 1 2 3 4; do head -c %d /dev/zero | tr '\\0' x; echo; sleep 0.3; done", size/4-1)
	}
	w, err := b.watchCommand(ctx, srv, 1, command, 30*time.Second)
	if err != nil {
		return nil, err
	}
	snap, err := srv.snapshot(ctx, w.sessionID, w.messageID)
	if err != nil {
		return nil, err
	}
	var projected, extra int
	for _, f := range w.clients[0].frames {
		grow, err := inlineGrowth(f.payload, snap.Output)
		if err != nil {
			return nil, err
		}
		projected += f.size
		extra += grow
	}
	n := len(w.clients[0].frames)
	return []string{bytesIEC(float64(size)), fmt.Sprint(n), bytesIEC(float64(projected)),
		fmt.Sprintf("%.0f B", float64(projected)/float64(max(n, 1))), bytesIEC(float64(projected + extra)),
		fmt.Sprintf("x%.1f", float64(projected+extra)/float64(projected))}, nil
}
