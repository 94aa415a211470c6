package acptest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	sdk "github.com/coder/acp-go-sdk"
)

// Attack is one turn of a hostile agent (the bench's `bench agent`): the prompt that
// names it, what it does, and its script. Agents are untrusted (docs/SECURITY.md); these
// are the attacks the bench measures a server under.
type Attack struct {
	Name, Does string
	Script     Script
}

// The sizes of issue 19's attacks.
const (
	printBytes    = 1 << 30
	terminalCount = 300
	terminalBytes = 1_500_000
	fifoReads     = 200
	messageBytes  = 30_000_000
	fifoWait      = 5 * time.Second
)

// Attacks are the hostile agent's turns.
var Attacks = []Attack{
	{"print", "one command prints 1 GiB (80-byte lines) in a terminal the agent shows in a tool call, then releases it",
		func(ctx context.Context, a *Agent, sid sdk.SessionId) error {
			return printInTerminals(ctx, a, sid, 1, printBytes, true)
		}},
	{"terminals", fmt.Sprintf("%d terminals, each a command printing %.1f MB, each in a tool call, never released",
		terminalCount, terminalBytes/1e6),
		func(ctx context.Context, a *Agent, sid sdk.SessionId) error {
			return printInTerminals(ctx, a, sid, terminalCount, terminalBytes, false)
		}},
	{"fifo", fmt.Sprintf("%d concurrent `fs/read_text_file` of a FIFO in the session's directory; the agent gives up on "+
		"each after %s", fifoReads, fifoWait), readFIFO},
	{"message", fmt.Sprintf("one agent message of %d MB, in one `agent_message_chunk` (one line of JSON-RPC)",
		messageBytes/1_000_000), sendBigMessage},
}

// ServeHostile runs an agent of the Attacks over stdio: its prompt names the attack.
func ServeHostile(ctx context.Context) error {
	scripts := map[string]Script{}
	for _, at := range Attacks {
		scripts[at.Name] = at.Script
	}
	return Serve(ctx, os.Stdin, os.Stdout, scripts)
}

// printInTerminals starts n terminals, each a command printing size bytes, shows each in a
// tool call, and waits for them all to exit. A refused request is the client defending
// itself: the agent stops asking and ends its turn as usual, which the bench sees.
func printInTerminals(ctx context.Context, a *Agent, sid sdk.SessionId, n, size int, release bool) error {
	command := fmt.Sprintf("yes %s | head -c %d", strings.Repeat("x", 79), size)
	var ids []string
	for i := range n {
		term, err := a.Conn.CreateTerminal(ctx, sdk.CreateTerminalRequest{SessionId: sid, Command: "sh", Args: []string{"-c", command}})
		if err != nil {
			break
		}
		ids = append(ids, term.TerminalId)
		err = a.Send(ctx, sid, sdk.StartToolCall(sdk.ToolCallId(fmt.Sprint("print-", i)), command,
			sdk.WithStartKind(sdk.ToolKindExecute), sdk.WithStartStatus(sdk.ToolCallStatusInProgress),
			sdk.WithStartContent([]sdk.ToolCallContent{sdk.ToolTerminalRef(term.TerminalId)})))
		if err != nil {
			return err
		}
	}
	for i, id := range ids {
		_, _ = a.Conn.WaitForTerminalExit(ctx, sdk.WaitForTerminalExitRequest{SessionId: sid, TerminalId: id})
		if err := a.Send(ctx, sid, sdk.UpdateToolCall(sdk.ToolCallId(fmt.Sprint("print-", i)),
			sdk.WithUpdateStatus(sdk.ToolCallStatusCompleted))); err != nil {
			return err
		}
		if release {
			_, _ = a.Conn.ReleaseTerminal(ctx, sdk.ReleaseTerminalRequest{SessionId: sid, TerminalId: id})
		}
	}
	return nil
}

// readFIFO makes a FIFO in its directory (the session's) and asks to read it many times at
// once. Nothing ever writes to it: a client that opens it blocking waits forever.
func readFIFO(ctx context.Context, a *Agent, sid sdk.SessionId) error {
	dir, err := os.Getwd()
	if err != nil {
		return err
	}
	path := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, fifoWait)
	defer cancel()
	var wg sync.WaitGroup
	for range fifoReads {
		wg.Go(func() { _, _ = a.Conn.ReadTextFile(ctx, sdk.ReadTextFileRequest{SessionId: sid, Path: path}) })
	}
	wg.Wait()
	return nil
}

// sendBigMessage sends one agent message of messageBytes (lines of 80 bytes) in one update.
func sendBigMessage(ctx context.Context, a *Agent, sid sdk.SessionId) error {
	return a.Send(ctx, sid, sdk.UpdateAgentMessageText(strings.Repeat(strings.Repeat("m", 79)+"\n", messageBytes/80)))
}
