package acp

import (
	"context"
	"fmt"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"conch/shared"
)

// An attempt's session (shared.Attempt) runs its task's check command after each turn:
// in its worktree and its sandbox, through a terminal of Conch's own, reported to the
// recorder as a tool call as an agent's command would be, so it is a stored command
// whose output is fetched on demand like any other. The session stays running until
// the check has ended. Then the task's cost cap is applied (boundCost).

// checkCall is the prefix of the tool call ids of checks: no agent's call takes them.
const checkCall = "conch-check-"

// afterTurn runs the check of an open attempt when its turn ended (checked: not
// cancelled, no error) and records the end of the turn; nothing for another session.
func (s *session) afterTurn(checked bool) {
	ctx := context.Background()
	check, open, err := s.m.cfg.Store.AttemptCheck(ctx, s.id)
	if err != nil {
		s.log.Error("read the attempt's check", "err", err)
		return
	}
	if !open {
		return
	}
	var exit *int
	ran := false
	began := s.m.clock.Now()
	if checked && strings.TrimSpace(check) != "" {
		exit, ran = s.runCheck(ctx, check)
	}
	if err := s.m.cfg.Store.EndAttemptTurn(ctx, s.id, ran, exit, s.m.clock.Now().Sub(began)); err != nil {
		s.log.Error("record the attempt's turn", "err", err)
	}
	s.publishSession() // the compare table learns of the check with the session
	s.usageStored()
	s.m.boundCost(ctx, s.id)
}

// runCheck runs command in a terminal of the session and waits for it; it reports its
// exit code (nil when it has none: killed) and whether it ran at all.
func (s *session) runCheck(ctx context.Context, command string) (*int, bool) {
	n := 0
	s.do(func(c *core) { n = c.terms.number() }) // a fresh call id per check
	call := sdk.ToolCallId(fmt.Sprintf("%s%d", checkCall, n))
	created, err := s.CreateTerminal(ctx, sdk.CreateTerminalRequest{SessionId: s.agentSession(), Command: "sh", Args: []string{"-c", command}})
	if err != nil {
		s.say("Conch could not run the attempt's check: " + err.Error())
		return nil, false
	}
	id := created.TerminalId
	t := s.terminal(id)
	s.do(func(c *core) { c.checking = t })
	s.rec.update(sdk.StartToolCall(call, command, sdk.WithStartKind(sdk.ToolKindExecute),
		sdk.WithStartStatus(sdk.ToolCallStatusInProgress), sdk.WithStartRawInput(map[string]any{"command": command}),
		sdk.WithStartContent([]sdk.ToolCallContent{sdk.ToolTerminalRef(id)})))
	s.rec.flush()
	if msg := s.rec.messageOf(string(call)); msg != "" {
		if err := s.m.cfg.Store.StartAttemptCheck(ctx, s.id, msg); err != nil {
			s.log.Error("record the attempt's check", "err", err)
		}
		s.publishSession()
	}
	waitCtx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-s.done: // the agent stopped: its terminals go with it
			cancel()
		case <-waitCtx.Done():
		}
	}()
	st, werr := t.waitExit(waitCtx)
	cancel()
	status := sdk.ToolCallStatusCompleted
	if werr != nil || st.Code == nil || *st.Code != 0 {
		status = sdk.ToolCallStatusFailed
	}
	s.rec.update(sdk.UpdateToolCall(call, sdk.WithUpdateStatus(status)))
	_, _ = s.ReleaseTerminal(ctx, sdk.ReleaseTerminalRequest{SessionId: s.agentSession(), TerminalId: id})
	s.do(func(c *core) { c.checking = nil })
	s.rec.endTurn() // the check's call is stored and sealed
	if werr != nil || st.Code == nil {
		return nil, true
	}
	code := *st.Code
	return &code, true
}

// boundCost stops the task's other running attempts, with a note saying why, once what
// the attempts cost together has reached the least cap their requests set. An attempt
// whose agent runs on another server is marked stopped (no more checks), and its agent
// is left to that server.
func (m *Manager) boundCost(ctx context.Context, sessionID string) {
	rec, err := m.cfg.Store.GetAttempt(ctx, sessionID)
	if err != nil {
		m.log.Error("read the attempt", "session", sessionID, "err", err)
		return
	}
	spent, limit, err := m.cfg.Store.AttemptsCost(ctx, rec.TaskID)
	if err != nil || limit <= 0 {
		if err != nil {
			m.log.Error("read the attempts' cost", "task", rec.TaskID, "err", err)
		}
		return
	}
	var over *shared.Cost
	for _, c := range spent {
		if c.Amount >= limit {
			over = &c
		}
	}
	if over == nil {
		return
	}
	all, err := m.cfg.Store.Attempts(ctx, rec.TaskID)
	if err != nil {
		m.log.Error("list the attempts", "task", rec.TaskID, "err", err)
		return
	}
	note := fmt.Sprintf("Stopped by the task's cost cap: its attempts have cost %.2f %s together, and the cap is %.2f.",
		over.Amount, over.Currency, limit)
	for _, a := range all {
		if a.SessionID == sessionID || a.Outcome != shared.AttemptOpen || a.State.Ended() ||
			(a.State != shared.SessionRunning && a.State != shared.SessionStarting) {
			continue
		}
		if ended, err := m.cfg.Store.EndAttempt(ctx, a.SessionID, shared.AttemptStopped, note); err != nil || !ended {
			continue
		}
		m.mu.Lock()
		other := m.sessions[a.SessionID]
		m.mu.Unlock()
		if other != nil {
			// Not waited for: two attempts that reach the cap at once would each wait for
			// the other's end from within its own turn.
			go other.park(note)
		}
	}
}
