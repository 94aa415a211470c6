package acp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/google/uuid"

	"conch/server/store"
	"conch/shared"
)

// The agent's own sessions beyond one Conch session: those it lists (ACP session/list),
// which a person imports as resumable Conch sessions, and closing the live one when its
// Conch session ends for good (ACP session/close). docs/ACP.md says which agents offer what.

const (
	maxListed      = 100  // entries of one page of session/list kept; the rest are counted skipped
	maxImportPages = 10   // pages of session/list an import reads to find the ids asked for
	maxCursorBytes = 1024 // of session/list's opaque cursor, which travels through the browser
	listersAtOnce  = 2    // agents started at once to list their sessions
)

// lister is a short-lived process of an agent started only to ask about its own sessions:
// it is told of no file system or terminal, its requests are refused, and its sandbox
// (when there is one) goes with it.
type lister struct {
	m       *Manager
	mach    Machine
	release func() // the place on mach, held while the agent runs (Config.Place)
	work    Work   // its sandbox's, whose own directory close removes
	proc    *Process
	conn    *sdk.ClientSideConnection
	caps    sdk.AgentCapabilities
	guarded <-chan struct{} // closed when the agent's stdout is fully read
}

// startLister starts agent for the task in cwd and asks for initialize (and authenticate,
// as its profile says); ctx bounds it. The caller closes it.
func (m *Manager) startLister(ctx context.Context, taskID, agent, cwd string) (*lister, error) {
	if err := m.Draining(); err != nil {
		return nil, err
	}
	p, ok := m.profile(agent)
	if !ok {
		return nil, shared.Errorf(shared.CodeInvalid, "unknown agent %q", agent)
	}
	task, err := m.cfg.Store.GetTask(ctx, taskID)
	if err != nil {
		return nil, err
	}
	if !m.listers.TryAcquire(1) {
		return nil, shared.Errorf(shared.CodeConflict, "%d agents are listing their sessions already: try again in a moment", listersAtOnce)
	}
	l := &lister{m: m, work: Work{Session: "list-" + uuid.Must(uuid.NewV7()).String(), Profile: p, Dir: cwd,
		Dirs: task.AdditionalDirectories, Tree: task.Worktree}}
	l.mach, _, l.release, err = m.place(p, "")
	if err == nil {
		l.proc, err = l.mach.Agent(ctx, l.work)
	}
	if err != nil {
		l.close()
		return nil, err
	}
	l.conn, l.guarded = connect(l.proc, m.log.With("agent", agent, "listing", cwd))
	init, err := l.conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber,
		ClientInfo: &sdk.Implementation{Name: "conch", Version: cmp.Or(m.cfg.Version, "dev")}})
	if err == nil && init.ProtocolVersion != sdk.ProtocolVersionNumber {
		err = fmt.Errorf("the agent speaks ACP version %d, Conch speaks %d", init.ProtocolVersion, sdk.ProtocolVersionNumber)
	}
	if err == nil && p.AuthMethod != "" { // the agent checks the id against those it offers
		_, err = l.conn.Authenticate(ctx, sdk.AuthenticateRequest{MethodId: p.AuthMethod})
	}
	if err == nil && init.AgentCapabilities.SessionCapabilities.List == nil {
		err = shared.Errorf(shared.CodeConflict, "the agent %s does not list its sessions (it does not offer ACP session/list)", agent)
	}
	if err != nil {
		l.close()
		return nil, agentFailed("start the agent", err)
	}
	l.caps = init.AgentCapabilities
	return l, nil
}

// connect joins an agent process to an ACP client of it that offers nothing and refuses
// every request (refuser), through guard; the channel is closed once the agent's stdout
// is fully read.
func connect(proc *Process, log *slog.Logger) (*sdk.ClientSideConnection, <-chan struct{}) {
	pr, pw := io.Pipe()
	stdin := &lockedWriter{w: proc.Stdin}
	conn := sdk.NewClientSideConnection(refuser{}, stdin, pr)
	conn.SetLogger(log)
	guarded := make(chan struct{})
	go func() {
		guard(proc.Stdout, pw, agentLines, func(sdk.SessionNotification) {}, func(line []byte) { _, _ = stdin.Write(line) }, log)
		proc.Stdout.Close()
		close(guarded)
	}()
	return conn, guarded
}

// close stops the agent, removes its sandbox's directory and gives its place back.
func (l *lister) close() {
	if l.proc != nil {
		l.proc.Kill()
		<-l.proc.Exited
		select {
		case <-l.guarded:
		case <-l.m.clock.After(endGrace):
		}
	}
	if l.mach != nil {
		ctx, cancel := context.WithTimeout(context.Background(), l.m.cfg.RequestTimeout)
		defer cancel()
		if err := l.mach.Forget(ctx, l.work); err != nil {
			l.m.log.Warn("remove the sandbox of an agent that listed its sessions", "sandbox", l.work.Session, "err", err)
		}
		l.release()
	}
	l.m.listers.Release(1)
}

// page asks for one page of the agent's sessions in cwd from cursor ("" for the first).
// Everything in the answer is hostile: an entry whose id is not acceptable
// (agentSessionID), whose directory is another, or past maxListed is counted skipped;
// titles are bounded plain text, times RFC 3339 or left out, a cursor that is not short
// plain text ends the list.
func (l *lister) page(ctx context.Context, cwd, cursor string) (shared.AgentSessionPage, error) {
	req := sdk.ListSessionsRequest{Cwd: &cwd}
	if cursor != "" {
		req.Cursor = &cursor
	}
	r, err := l.conn.ListSessions(ctx, req)
	if err != nil {
		return shared.AgentSessionPage{}, agentFailed("session/list", err)
	}
	page := shared.AgentSessionPage{Cwd: cwd, Sessions: []shared.AgentSession{}}
	seen := map[sdk.SessionId]bool{}
	for _, e := range r.Sessions {
		if len(page.Sessions) == maxListed || !agentSessionID(string(e.SessionId)) || seen[e.SessionId] || filepath.Clean(e.Cwd) != cwd {
			page.Skipped++
			continue
		}
		seen[e.SessionId] = true
		page.Sessions = append(page.Sessions, shared.AgentSession{ID: string(e.SessionId), Title: agentTitle(e.Title), UpdatedAt: agentTime(e.UpdatedAt)})
	}
	if r.NextCursor != nil && shared.PlainText(*r.NextCursor, maxCursorBytes) {
		page.NextCursor = *r.NextCursor
	}
	return page, nil
}

// ListAgentSessions starts the agent and returns one page of its own earlier sessions in
// cwd, the task's directory (ACP session/list), from cursor ("" for the first); each that
// a session of the task holds already names it. The agent is stopped before it returns.
// An agent that does not offer session/list is shared.CodeConflict.
func (m *Manager) ListAgentSessions(ctx context.Context, taskID, agent, cwd, cursor string) (shared.AgentSessionPage, error) {
	if cursor != "" && !shared.PlainText(cursor, maxCursorBytes) {
		return shared.AgentSessionPage{}, shared.Errorf(shared.CodeInvalid, "cursor is not one the agent gave: over %d bytes or not plain text", maxCursorBytes)
	}
	ctx, cancel := context.WithTimeout(ctx, m.cfg.StartTimeout)
	defer cancel()
	l, err := m.startLister(ctx, taskID, agent, cwd)
	if err != nil {
		return shared.AgentSessionPage{}, err
	}
	defer l.close()
	page, err := l.page(ctx, cwd, cursor)
	if err != nil {
		return shared.AgentSessionPage{}, err
	}
	held, err := m.cfg.Store.HeldAgentSessions(ctx, taskID, agent)
	if err != nil {
		return shared.AgentSessionPage{}, err
	}
	for i, s := range page.Sessions {
		page.Sessions[i].SessionID = held[s.ID]
	}
	page.Agent = agent
	return page, nil
}

// ImportAgentSessions makes a Conch session of the task for each of ids, the agent's own
// sessions in cwd, which it lists (ListAgentSessions): ready with the agent stopped, so
// that its first prompt or a resume starts the agent, which takes the conversation up
// again (session/resume, else session/load), as it does after a stop. Every id is checked
// first (plain, listed by the agent, held by no session of the task), and one that is
// not changes nothing.
func (m *Manager) ImportAgentSessions(ctx context.Context, taskID, agent, cwd string, ids []string) ([]shared.Session, error) {
	if len(ids) == 0 || len(ids) > shared.MaxAgentSessionImports {
		return nil, shared.Errorf(shared.CodeInvalid, "session_ids must name 1 to %d of the agent's sessions", shared.MaxAgentSessionImports)
	}
	want := map[string]*shared.AgentSession{}
	for _, id := range ids {
		if !agentSessionID(id) {
			return nil, shared.Errorf(shared.CodeInvalid, "%q is not an agent's session id: 1 to %d letters, digits and ._:-", store.CutText(id, 100), store.MaxAgentSessionBytes)
		}
		if _, twice := want[id]; twice {
			return nil, shared.Errorf(shared.CodeInvalid, "session_ids names %s twice", id)
		}
		want[id] = nil
	}
	ctx, cancel := context.WithTimeout(ctx, m.cfg.StartTimeout)
	defer cancel()
	l, err := m.startLister(ctx, taskID, agent, cwd)
	if err != nil {
		return nil, err
	}
	by, method := store.ResumeBy, sdk.AgentMethodSessionResume
	if l.caps.SessionCapabilities.Resume == nil {
		by, method = store.LoadBy, sdk.AgentMethodSessionLoad
		if !l.caps.LoadSession {
			l.close()
			return nil, shared.Errorf(shared.CodeConflict, "the agent %s lists its sessions but cannot take one up again: it offers neither session/resume nor session/load", agent)
		}
	}
	found, cursor := 0, ""
	for range maxImportPages {
		page, err := l.page(ctx, cwd, cursor)
		if err != nil {
			l.close()
			return nil, err
		}
		for _, s := range page.Sessions {
			if e, ok := want[s.ID]; ok && e == nil {
				want[s.ID] = &s
				found++
			}
		}
		if cursor = page.NextCursor; found == len(want) || cursor == "" {
			break
		}
	}
	l.close()
	held, err := m.cfg.Store.HeldAgentSessions(ctx, taskID, agent)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if want[id] == nil {
			return nil, shared.Errorf(shared.CodeInvalid, "the agent %s does not list a session %s in %s", agent, id, cwd)
		}
		if held[id] != "" {
			return nil, shared.Errorf(shared.CodeConflict, "the session %s of this task holds the agent's session %s already", held[id], id)
		}
	}
	out := make([]shared.Session, 0, len(ids))
	for _, id := range ids {
		sess, note, err := m.cfg.Store.ImportAgentSession(ctx, taskID, agent, cwd, id, by, importNote(*want[id], method))
		if err != nil {
			return out, err
		}
		m.cfg.Events.SessionUpdated(sess)
		m.cfg.Events.MessageAdded(note)
		out = append(out, sess)
	}
	return out, nil
}

// importNote is the first status message of an imported session.
func importNote(s shared.AgentSession, method string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Imported the agent's own session %s", s.ID)
	if s.Title != "" {
		fmt.Fprintf(&b, ", %q", s.Title)
	}
	if s.UpdatedAt != nil {
		fmt.Fprintf(&b, ", last active %s", s.UpdatedAt.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(&b, ". Its first prompt, or Resume, starts the agent, which takes the conversation up again (ACP %s).", method)
	return b.String()
}

// agentSessionID reports whether an agent's session id may be stored and shown: 1 to
// store.MaxAgentSessionBytes of ASCII letters, digits and ._:- (UUIDs and the like).
func agentSessionID(id string) bool {
	return id != "" && len(id) <= store.MaxAgentSessionBytes && !strings.ContainsFunc(id, func(r rune) bool {
		return r > unicode.MaxASCII || !(unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("._:-", r))
	})
}

// agentTitle is an agent's title as people read it: valid UTF-8, control characters as
// spaces, at most shared.MaxAgentTitleBytes.
func agentTitle(t *string) string {
	if t == nil {
		return ""
	}
	s := strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(store.CutText(*t, 4*shared.MaxAgentTitleBytes), "\uFFFD"))
	return strings.TrimSpace(store.CutText(s, shared.MaxAgentTitleBytes))
}

// agentTime is an agent's ISO 8601 timestamp, nil when it is not RFC 3339.
func agentTime(t *string) *time.Time {
	if t == nil {
		return nil
	}
	v, err := time.Parse(time.RFC3339Nano, *t)
	if err != nil {
		return nil
	}
	return &v
}

// agentFailed is what people read when an agent did not answer a request of the above:
// a timeout, or the agent's words, bounded (hostile text, shown as text).
func agentFailed(what string, err error) error {
	switch {
	case shared.ErrorCode(err) != shared.CodeInternal:
		return err
	case errors.Is(err, context.DeadlineExceeded):
		return shared.Errorf(shared.CodeTimeout, "%s: the agent did not answer in time", what)
	}
	return shared.Errorf(shared.CodeConflict, "%s: %s", what, takeUpFailure(err))
}

// closeAgentSession asks a live agent that offered ACP session/close to close its
// session, and waits at most RequestTimeout: its Conch session ends for good (Stop). A
// failure is logged; the agent is stopped after it either way.
func (s *session) closeAgentSession() {
	select {
	case <-s.started: // s.closable is set
	default:
		return
	}
	closable, id := false, sdk.SessionId("")
	s.do(func(c *core) {
		closable, id = s.closable && c.up && !c.ended && c.reason == "" && c.acpID != "", c.acpID
	})
	if !closable {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.m.cfg.RequestTimeout)
	defer cancel()
	if _, err := s.conn.CloseSession(ctx, sdk.CloseSessionRequest{SessionId: id}); err != nil {
		s.log.Warn("the agent did not close its session", "err", err)
		return
	}
	s.log.Debug("the agent closed its session")
}

// refuser is the ACP client of a lister: it offered nothing, and refuses what is asked.
type refuser struct{}

var errRefused = sdk.NewMethodNotFound("Conch only lists sessions in this process")

func (refuser) ReadTextFile(context.Context, sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	return sdk.ReadTextFileResponse{}, errRefused
}
func (refuser) WriteTextFile(context.Context, sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	return sdk.WriteTextFileResponse{}, errRefused
}
func (refuser) RequestPermission(context.Context, sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeCancelled()}, nil
}
func (refuser) SessionUpdate(context.Context, sdk.SessionNotification) error { return nil }
func (refuser) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, errRefused
}
func (refuser) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, errRefused
}
func (refuser) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, errRefused
}
func (refuser) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, errRefused
}
func (refuser) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, errRefused
}
