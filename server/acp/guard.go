package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"

	sdk "github.com/coder/acp-go-sdk"
)

// The SDK closes the whole connection on an incoming line over 10 MiB and when 1,024
// notifications wait in its queue (ACP-NOTES.md). Real agents send both: a whole command
// output in one line, and floods of small updates. So the agent's stdout goes through
// guard first: session/update notifications are decoded here and handed, in wire order,
// to the session's recorder (which never blocks on the database); only requests and
// responses reach the SDK. Because guard handles each line before reading the next, every
// update of a turn is applied before the turn's answer reaches the SDK, as ACP promises.

// lineLimits are the line lengths guard enforces: agentLines for agents, small ones in
// tests (Manager.lines), which then need not push tens of MiB through it.
type lineLimits struct {
	sdk int // the longest line the SDK accepts (bufio.Scanner's limit)
	max int // the memory one line may take; a longer one is skipped
}

var agentLines = lineLimits{sdk: 10<<20 - 1, max: 64 << 20}

// lineHead is enough of a JSON-RPC message to route it.
type lineHead struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// guard copies src to dst line by line until src ends, calling onUpdate for each
// session/update notification instead of copying it. A message too long for the SDK
// is not passed on: a response becomes an error response (so the caller does not wait
// forever), a request from the agent is answered with an error through reply, and
// anything else is dropped. guard closes dst when done.
func guard(src io.Reader, dst *io.PipeWriter, limits lineLimits, onUpdate func(sdk.SessionNotification), reply func([]byte), log *slog.Logger) {
	r := bufio.NewReaderSize(src, 64<<10)
	var err error
	for err == nil {
		var line []byte
		line, err = readLine(r, limits.max)
		if errors.Is(err, errLineTooLong) {
			log.Error("agent sent a line over the limit; skipped", "limit", limits.max)
			err = nil
			continue
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var head lineHead
		if json.Unmarshal(line, &head) == nil && head.Method == sdk.ClientMethodSessionUpdate && head.ID == nil {
			var n sdk.SessionNotification
			if uerr := json.Unmarshal(head.Params, &n); uerr != nil {
				log.Error("agent sent an undecodable session/update; skipped", "err", uerr)
				continue
			}
			onUpdate(n)
			continue
		}
		if len(line) > limits.sdk {
			log.Error("agent sent a message over the SDK's line limit", "method", head.Method, "bytes", len(line))
			switch {
			case head.ID == nil:
				continue
			case head.Method == "":
				line = errorLine(head.ID, "the agent's answer is over the 10 MiB line limit")
			default:
				reply(append(errorLine(head.ID, "request over the 10 MiB line limit"), '\n'))
				continue
			}
		}
		if _, werr := dst.Write(append(line, '\n')); werr != nil {
			break
		}
	}
	dst.Close()
}

// errorLine is a JSON-RPC error response (internal error) to the request id.
func errorLine(id json.RawMessage, msg string) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": -32603, "message": msg}})
	return b
}

// lockedWriter serialises whole writes: the SDK and guard both write lines to the agent.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

var errLineTooLong = errors.New("line too long")

// readLine reads one line without its newline. A line over max bytes is consumed and
// reported as errLineTooLong, so memory stays bounded.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	tooLong := false
	for {
		frag, err := r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(frag) > max {
				tooLong, line = true, nil
			} else {
				line = append(line, frag...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if tooLong {
			if err == nil {
				return nil, errLineTooLong
			}
			return nil, err
		}
		return bytes.TrimSuffix(line, []byte{'\n'}), err
	}
}
