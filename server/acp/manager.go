// Package acp is Conch's ACP client runtime: it starts agent processes, speaks ACP to
// them, runs the terminals they ask for, and turns everything they report into stored
// messages and live events (bodies are stored, browsers get summaries).
package acp

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"golang.org/x/sync/semaphore"

	"conch/server/store"
	"conch/server/worktree"
	"conch/shared"
)

// Events receives what the runtime committed. Production wires *replica.Bus (this
// process's hub and the other servers of the database); the tests, a recorder of their own.
type Events interface {
	MessageAdded(shared.Message)
	MessageUpdated(shared.Message)
	SessionUpdated(shared.Session)
}

// Config wires a Manager. Only Store, Events and Profiles are required.
type Config struct {
	Store    *store.Store
	Events   Events
	Profiles []Profile // LoadProfiles' result
	DataDir  string    // fresh session directories go under DataDir/sessions
	Logger   *slog.Logger
	// Executable runs profiles without a command (the built-in shell agent) and is the
	// first process of every agent's and command's PID namespace (RunNamespaceInit);
	// default os.Executable().
	Executable string
	// Launch starts agents here; default ExecLauncher(Executable).
	Launch Launcher
	// Place chooses the machine a session's agent runs on and names it (its runner; ""
	// for this host); the manager stores the choice. was is the runner the session ran on
	// ("" for a new session, or this host): a session started again should stay on its
	// runner while that one is there and fits, since its directory and its agent's memory
	// are there; when it does not, it moves (restart). A nil Machine is this host. The
	// place is the manager's until it calls release, once the store counts the session
	// there (or it is not to be). nil Place: every session runs here (Local).
	Place func(p Profile, was string) (m Machine, runner string, release func(), err error)
	// Runner is the machine of the runner named while it is connected to this server, else
	// nil (runner.Registry.Runner): a session of a task on a repo_url that moves off a
	// runner that still answers has its work there committed and pushed first. nil Runner:
	// nothing is saved so.
	Runner func(name string) Machine
	// Now and After are the clock; tests inject a fake one. Defaults: time.Now, time.After.
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
	// FlushInterval is the longest a running command's new output waits to be stored;
	// default 1s, the period at which the UI polls an open output. Each flush is a commit
	// that writes the new output and the message's row: at least two pages of SQLite's
	// WAL however few bytes arrived, so the interval bounds what a slow printer costs
	// (BenchmarkOutputFlush in server/store: 11 bytes written per byte printed at 500ms,
	// 9 at 1s, 84 before output was appended).
	FlushInterval time.Duration
	// StartTimeout bounds initialize + session/new; default DefaultStartTimeout.
	StartTimeout time.Duration
	// RequestTimeout bounds every other request Conch sends to a live agent (a mode
	// switch); past it the person is told the agent did not answer (shared.CodeTimeout).
	// Default 10s: agents answer a switch of a setting at once, and it stays below how
	// long another server waits for this one's answer (replica's answerWait).
	RequestTimeout time.Duration
	// ReplayQuiet is how long an agent that loaded a conversation (session/load) must
	// have sent nothing before what it sends counts as new: Gemini CLI answers session/load
	// before it has replayed the conversation, and the rest of the replay would otherwise
	// land in the next turn. 0 (tests of other things) takes the answer as the end of the
	// replay, as ACP says; serve sets DefaultReplayQuiet.
	ReplayQuiet time.Duration
	// StoreOutage is how long a session's writes may keep failing (a full disk) before the
	// session is failed and its agent stopped; default 30s. The writes are retried after
	// that too, until they succeed.
	StoreOutage time.Duration
	// AgentIdle stops an agent that has had nothing to do for this long (no turn running
	// or queued, no permission request pending); its session stays, and the next prompt
	// starts a new agent. 0 keeps agents running (serve's --agent-idle, default 15m).
	AgentIdle time.Duration
	// NoSandbox runs agents and their commands unconfined (serve --no-sandbox): they can
	// reach everything the server's user can. By default each session has a sandbox
	// (sandbox.go), and a server that cannot make one starts no agent.
	NoSandbox bool
	// Version is the build's, which agents are told in initialize's clientInfo; "dev"
	// when empty (a build without the Makefile's version).
	Version string
}

type clock struct {
	now   func() time.Time
	after func(time.Duration) <-chan time.Time
}

func (c clock) Now() time.Time                         { return c.now() }
func (c clock) After(d time.Duration) <-chan time.Time { return c.after(d) }

// Manager runs the agent sessions of one server.
type Manager struct {
	cfg   Config
	clock clock
	log   *slog.Logger

	mu       sync.Mutex
	sessions map[string]*session
	homeless map[string]bool // sessions whose runner went away and that wait for one with room (rehome)
	closing  bool
	draining bool          // Drain: no new agents or turns start
	working  int           // sessions with turns running or queued (session.work)
	drained  chan struct{} // closed once working is 0 while draining
	closed   chan struct{} // closed by Close: writes that fail are no longer retried
	wg       sync.WaitGroup
	local    *local              // this host as a machine
	listers  *semaphore.Weighted // agents started to list their sessions (lifecycle.go)
	lines    lineLimits          // what guard lets through of an agent's lines: agentLines (tests: less)
	broken   func(error)         // tests: told when a session's state breaks what always holds of it (core.check)
}

// NewManager checks cfg and fills its defaults.
func NewManager(cfg Config) (*Manager, error) {
	if cfg.Store == nil || cfg.Events == nil {
		return nil, errors.New("acp: Store and Events are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.After == nil {
		cfg.After = time.After
	}
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = time.Second
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 10 * time.Second
	}
	if cfg.StoreOutage <= 0 {
		cfg.StoreOutage = 30 * time.Second
	}
	if cfg.DataDir == "" {
		cfg.DataDir = os.TempDir()
	}
	if cfg.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("acp: find the conch binary: %w", err)
		}
		cfg.Executable = exe
	}
	l := newLocal(LocalConfig{DataDir: cfg.DataDir, Executable: cfg.Executable, NoSandbox: cfg.NoSandbox, Launch: cfg.Launch, Logger: cfg.Logger})
	return &Manager{cfg: cfg, clock: clock{cfg.Now, cfg.After}, log: cfg.Logger, sessions: map[string]*session{}, homeless: map[string]bool{},
		closed: make(chan struct{}), local: l, listers: semaphore.NewWeighted(listersAtOnce), lines: agentLines}, nil
}

// place chooses the machine of a session of p (Config.Place), held until release is
// called. A nil machine from Place is this server's.
func (m *Manager) place(p Profile, was string) (mach Machine, runner string, release func(), err error) {
	if m.cfg.Place == nil {
		return m.local, "", func() {}, nil
	}
	if mach, runner, release, err = m.cfg.Place(p, was); err != nil {
		return nil, "", nil, err
	}
	if mach == nil {
		mach = m.local
	}
	return mach, runner, release, nil
}

// Agents lists the profiles for GET /api/v1/agents.
func (m *Manager) Agents() []shared.Agent {
	out := make([]shared.Agent, 0, len(m.cfg.Profiles))
	for _, p := range m.cfg.Profiles {
		out = append(out, shared.Agent{Name: p.Name, Description: p.Description})
	}
	return out
}

func (m *Manager) profile(name string) (Profile, bool) {
	for _, p := range m.cfg.Profiles {
		if p.Name == name {
			return p, true
		}
	}
	return Profile{}, false
}

// StartSession creates a session of the task, starts the agent and waits (bounded) for
// initialize and session/new. It returns the session ready, or failed with its error. An
// unknown agent or a relative or missing cwd is shared.CodeInvalid; an unknown task is
// shared.CodeNotFound. An empty cwd gets a fresh directory under DataDir/sessions.
func (m *Manager) StartSession(ctx context.Context, taskID, agent, cwd string) (shared.Session, error) {
	return m.startSession(ctx, taskID, agent, cwd, "")
}

// startSession is StartSession, whose agent takes up the fork of another session's
// conversation (fork.go) when fork is not "".
func (m *Manager) startSession(ctx context.Context, taskID, agent, cwd string, fork sdk.SessionId) (shared.Session, error) {
	if err := m.Draining(); err != nil {
		return shared.Session{}, err
	}
	p, ok := m.profile(agent)
	if !ok {
		return shared.Session{}, shared.Errorf(shared.CodeInvalid, "unknown agent %q", agent)
	}
	if cwd != "" {
		if !filepath.IsAbs(cwd) {
			return shared.Session{}, shared.Errorf(shared.CodeInvalid, "cwd must be an absolute path")
		}
		cwd = filepath.Clean(cwd)
	}
	task, err := m.cfg.Store.GetTask(ctx, taskID)
	if err != nil {
		return shared.Session{}, err
	}
	mach, runner, release, err := m.place(p, "")
	if err != nil {
		return shared.Session{}, err
	}
	cwd, err = sessionDir(ctx, task, mach, runner, cwd)
	var sess shared.Session
	if err == nil {
		sess, err = m.cfg.Store.CreateSessionOn(ctx, taskID, agent, cwd, runner)
	}
	release() // the store counts it there now
	if err != nil {
		return shared.Session{}, err
	}
	m.cfg.Events.SessionUpdated(sess)

	m.mu.Lock()
	if m.closing || m.draining {
		m.mu.Unlock()
		return m.closeUnstarted(sess.ID)
	}
	s := newSession(m, sess, task, p, mach, runner)
	s.resumeID, s.forked = fork, fork != ""
	m.sessions[sess.ID] = s
	m.wg.Add(1)
	m.mu.Unlock()
	return m.launch(s)
}

// launch starts the agent of s, registered and counted in wg, and waits (bounded) for
// initialize and session/new.
func (m *Manager) launch(s *session) (shared.Session, error) {
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.StartTimeout) // bounds a runner's answer, not the agent
	defer cancel()
	err := m.sandbox(ctx, s)
	var proc *Process
	if err == nil {
		proc, err = s.mach.Agent(ctx, s.site)
	}
	if err != nil {
		defer m.wg.Done()
		return s.abandon(err)
	}
	go func() {
		defer m.wg.Done()
		s.serve(proc)
	}()
	return s.start()
}

// sandbox makes the sandbox of s's agent and commands on its machine, and stores what it is.
func (m *Manager) sandbox(ctx context.Context, s *session) error {
	info, err := s.mach.Sandbox(ctx, s.site)
	if err != nil {
		return err
	}
	// Published with the session's next state (ready, or failed).
	_, err = m.cfg.Store.SetSandbox(ctx, s.id, info)
	return err
}

// restart starts a new agent for a session whose agent was stopped (StopAgent, the idle
// rule, a sweep of a server that stopped), in the same directory; its turns wait for the
// start. An agent that can takes the conversation up again (session/resume or
// session/load); another starts with no memory of it.
func (m *Manager) restart(id string) (*session, error) {
	ctx := context.Background()
	sess, err := m.cfg.Store.GetSession(ctx, id)
	if err != nil {
		return nil, err
	}
	if !sess.Stopped || sess.State.Ended() {
		m.mu.Lock()
		s := m.sessions[id] // another prompt restarted it since this one found it stopped
		m.mu.Unlock()
		if s != nil {
			return s, nil
		}
		return nil, shared.Errorf(shared.CodeConflict, "session is %s", sess.State)
	}
	p, ok := m.profile(sess.Agent)
	if !ok {
		return nil, shared.Errorf(shared.CodeConflict, "the agent %q of this session is no longer configured", sess.Agent)
	}
	if err := m.cfg.Store.ClaimSession(ctx, id); err != nil {
		return nil, err
	}
	agentSession, by, err := m.cfg.Store.AgentSession(ctx, id)
	if err != nil {
		return nil, err
	}
	task, err := m.cfg.Store.GetTask(ctx, sess.TaskID)
	if err != nil {
		return nil, err
	}
	mach, runner, release, err := m.place(p, sess.Runner)
	if err != nil {
		return nil, err
	}
	defer release() // the store counts it there once it is starting, below
	var left *string
	var saved string
	if runner != sess.Runner { // a new directory there: the old one is on the machine it left
		saved = m.saveWork(ctx, task, sess.Runner)
		if sess.Cwd, err = sessionDir(ctx, task, mach, runner, ""); err != nil {
			return nil, err
		}
		if err := m.cfg.Store.MoveSession(ctx, id, runner, sess.Cwd); err != nil {
			return nil, err
		}
		left = &sess.Runner
	}
	m.mu.Lock()
	if s := m.sessions[id]; s != nil { // another prompt restarted it meanwhile
		m.mu.Unlock()
		return s, nil
	}
	if m.closing || m.draining {
		m.mu.Unlock()
		return nil, errDraining
	}
	s := newSession(m, sess, task, p, mach, runner)
	s.left, s.saved = left, saved
	if by != "" {
		s.resumeID = sdk.SessionId(agentSession)
	}
	m.sessions[id] = s
	m.wg.Add(1)
	m.mu.Unlock()
	if _, err := s.setState(shared.SessionStarting, ""); err != nil {
		s.log.Error("record the agent's restart", "err", err)
	}
	go func() {
		if _, err := m.launch(s); err != nil {
			s.log.Error("restart the agent", "err", err)
		}
	}()
	return s, nil
}

// closeUnstarted records a session created while the server was stopping: it never ran.
func (m *Manager) closeUnstarted(id string) (shared.Session, error) {
	sess, err := m.cfg.Store.SetSessionState(context.Background(), id, shared.SessionClosed, "")
	if err != nil {
		return shared.Session{}, err
	}
	m.cfg.Events.SessionUpdated(sess)
	return sess, nil
}

// saveWork commits the work in progress in the worktree that task, on a repo_url, has on
// runner, which a session of it leaves while that runner still answers, and pushes the
// task's branch, so that the session's new worktree starts from it. It returns what it did,
// for people ("" when there was nothing to save, or no runner to save it on). It gives up
// after saveWait: a runner that answers its heartbeats but not this would hold the prompt.
func (m *Manager) saveWork(ctx context.Context, task shared.Task, runner string) string {
	var old Machine
	if task.RepoURL != "" && runner != "" && m.cfg.Runner != nil {
		old = m.cfg.Runner(runner)
	}
	if old == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, saveWait)
	defer cancel()
	op := worktree.Op{Op: worktree.OpCommit, URL: task.RepoURL, Base: task.BaseBranch, Branch: task.Branch,
		Message: "Work in progress, committed by Conch as a session moved off runner " + runner}
	_, err := old.Workspace(ctx, op)
	committed := err == nil
	if err != nil && shared.ErrorCode(err) != shared.CodeConflict { // a conflict: nothing to commit
		return fmt.Sprintf("Conch could not commit the work in progress on runner %s (%v): the new directory starts from the branch as last pushed. ", runner, err)
	}
	op.Op, op.Message = worktree.OpPush, ""
	if _, err := old.Workspace(ctx, op); err != nil {
		return fmt.Sprintf("Conch could not push the branch %s from runner %s (%v): the new directory starts from it as last pushed. ", task.Branch, runner, err)
	}
	if committed {
		return fmt.Sprintf("The work in progress on runner %s was committed and the branch %s pushed: the new directory starts from it. ", runner, task.Branch)
	}
	return fmt.Sprintf("The branch %s was pushed from runner %s: the new directory starts from it. ", task.Branch, runner)
}

// saveWait bounds saveWork (a var for its test).
var saveWait = worktree.OpTimeout

// say adds and publishes a status message for people in session id.
func (m *Manager) say(id, text string) {
	msg, err := m.cfg.Store.CreateMessage(context.Background(), store.NewMessage{SessionID: id,
		AuthorType: shared.AuthorSystem, Type: shared.TypeStatus, Content: text})
	if err != nil {
		m.log.Error("store a status message", "session", id, "err", err, "text", text)
		return
	}
	m.cfg.Events.MessageAdded(msg)
}

// rehome moves session id, whose runner went away, to another machine (Config.Place)
// and resumes its agent there, in the background. When no runner fits now, the session
// waits, stopped, for the next runner that joins (RunnerJoined), a Resume or a prompt.
func (m *Manager) rehome(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closing || m.draining {
		return // the session stays resumable, for whichever server takes it
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), m.cfg.StartTimeout)
		defer cancel()
		_, err := m.Resume(ctx, id)
		if err == nil || shared.ErrorCode(err) != shared.CodeConflict || m.Draining() != nil {
			if err != nil {
				m.log.Warn("move a session whose runner went away", "session", id, "err", err)
			}
			return
		}
		m.mu.Lock()
		m.homeless[id] = true
		m.mu.Unlock()
		m.say(id, "The session could not move yet ("+err.Error()+"). It moves when a runner joins; Resume or your next prompt tries again.")
	}()
}

// RunnerJoined moves the sessions that wait for a runner (rehome) once one joins.
func (m *Manager) RunnerJoined() {
	m.mu.Lock()
	waiting := slices.Collect(maps.Keys(m.homeless))
	clear(m.homeless)
	m.mu.Unlock()
	for _, id := range waiting {
		m.rehome(id)
	}
}

func (m *Manager) forget(id string) {
	m.mu.Lock()
	delete(m.sessions, id)
	m.mu.Unlock()
}

func (m *Manager) live(id string) (*session, error) {
	m.mu.Lock()
	s := m.sessions[id]
	m.mu.Unlock()
	if s != nil {
		return s, nil
	}
	sess, err := m.cfg.Store.GetSession(context.Background(), id)
	if err != nil {
		return nil, err
	}
	return nil, shared.Errorf(shared.CodeConflict, "session is %s", sess.State)
}

// Prompt queues one turn; turns of a session run in order, in the background. A session
// whose agent was stopped gets a new agent first; one that ended (failed, closed) is
// shared.CodeConflict. The files the prompt messageID carries (stored attachments, which
// the store let through only for an agent that takes them) follow the text as ACP image
// or resource blocks; then each of files (an absolute path) as an ACP resource_link,
// which every agent must take. A prompt of files alone has no text block.
func (m *Manager) Prompt(sessionID, messageID, content string, files ...string) error {
	if err := m.Draining(); err != nil {
		return err
	}
	var prompt []sdk.ContentBlock
	if content != "" {
		prompt = append(prompt, sdk.TextBlock(content))
	}
	if messageID != "" {
		attached, err := m.cfg.Store.PromptAttachments(context.Background(), messageID)
		if err != nil {
			return err
		}
		for _, a := range attached {
			prompt = append(prompt, attachmentBlock(a))
		}
	}
	for _, f := range files {
		prompt = append(prompt, sdk.ResourceLinkBlock(filepath.Base(f), (&url.URL{Scheme: "file", Path: f}).String()))
	}
	for {
		s, err := m.live(sessionID)
		if shared.ErrorCode(err) == shared.CodeConflict {
			s, err = m.restart(sessionID)
		}
		if err != nil {
			return err
		}
		if err := s.enqueue(prompt); err != errEnded {
			return err
		}
		<-s.done // the agent is being stopped: once it is, the session says what comes next
	}
}

// attachmentBlock is a stored file as the agent takes it: an image, a text resource or a
// blob resource. Its URI names it (the file is on no disk the agent shares).
func attachmentBlock(a store.AttachmentBody) sdk.ContentBlock {
	if shared.IsImage(a.MimeType) {
		return sdk.ImageBlock(base64.StdEncoding.EncodeToString(a.Data), a.MimeType)
	}
	uri := (&url.URL{Scheme: "attachment", Host: a.ID, Path: "/" + a.Name}).String()
	if shared.IsText(a.MimeType) {
		return sdk.ResourceBlock(sdk.EmbeddedResourceResource{TextResourceContents: &sdk.TextResourceContents{
			Uri: uri, MimeType: &a.MimeType, Text: string(a.Data)}})
	}
	return sdk.ResourceBlock(sdk.EmbeddedResourceResource{BlobResourceContents: &sdk.BlobResourceContents{
		Uri: uri, MimeType: &a.MimeType, Blob: base64.StdEncoding.EncodeToString(a.Data)}})
}

// StopAgent stops the session's agent and its commands while the session stays (ready and
// stopped, with a status message saying so), and returns the session once the agent is
// gone. A running turn ends. A session whose agent is stopped already is answered as it
// is; one that ended is shared.CodeConflict.
func (m *Manager) StopAgent(ctx context.Context, sessionID string) (shared.Session, error) {
	s, err := m.live(sessionID)
	if err == nil {
		s.park("The agent was stopped. " + s.restartNote())
	} else if shared.ErrorCode(err) != shared.CodeConflict {
		return shared.Session{}, err
	}
	sess, err := m.cfg.Store.GetSession(ctx, sessionID)
	if err == nil && !sess.Stopped {
		return shared.Session{}, shared.Errorf(shared.CodeConflict, "session is %s", sess.State)
	}
	return sess, err
}

// Resume starts the agent of a stopped session that can take its conversation up again,
// with no prompt, and returns the session once the agent has answered (resumed, or
// started afresh when it refused: the chat says which). A session whose agent runs is
// answered as it is; one whose agent cannot resume, or that ended, is
// shared.CodeConflict, saying why. An agent that waits for a person to sign in is
// started again, whether or not it can resume (signin.go).
func (m *Manager) Resume(ctx context.Context, sessionID string) (shared.Session, error) {
	signIn := false
	if s, err := m.live(sessionID); shared.ErrorCode(err) != shared.CodeConflict {
		if err != nil {
			return shared.Session{}, err
		}
		if signIn = s.retrySignIn(); !signIn && !s.ending() {
			return m.cfg.Store.GetSession(ctx, sessionID)
		}
		select { // an agent on its way out (a crash, a stop): resume once it is gone
		case <-s.done:
		case <-ctx.Done():
			return shared.Session{}, ctx.Err()
		}
	}
	sess, err := m.cfg.Store.GetSession(ctx, sessionID)
	if err != nil {
		return shared.Session{}, err
	}
	if sess.Stopped && !sess.Resumable && !signIn {
		return shared.Session{}, shared.Errorf(shared.CodeConflict, "%s", shared.NoResume)
	}
	s, err := m.restart(sessionID)
	if err != nil {
		return shared.Session{}, err
	}
	select {
	case <-s.started:
	case <-ctx.Done():
		return shared.Session{}, ctx.Err()
	}
	return m.cfg.Store.GetSession(ctx, sessionID)
}

// Cancel asks the agent to cancel the running turn (ACP session/cancel).
func (m *Manager) Cancel(sessionID string) error {
	s, err := m.live(sessionID)
	if err != nil {
		return err
	}
	return s.cancel()
}

// Stop ends one session's agent for good (its task is deleted, its attempt closed): an
// agent that offers ACP session/close is asked to close its session first (bounded by
// RequestTimeout), then it is ended as Close does. It returns once the agent is gone; a
// session without a live agent is left as it is.
func (m *Manager) Stop(sessionID, reason string) {
	m.mu.Lock()
	s := m.sessions[sessionID]
	m.mu.Unlock()
	if s != nil {
		s.closeAgentSession()
	}
	m.Leave(sessionID, reason)
}

// Leave ends one session's agent as Close does, and leaves its agent's session open for
// whoever resumes it (another server, when this one lost its lease).
func (m *Manager) Leave(sessionID, reason string) {
	m.mu.Lock()
	s := m.sessions[sessionID]
	m.mu.Unlock()
	if s != nil {
		s.stop(reason)
	}
}

// Running lists the sessions whose agents run here.
func (m *Manager) Running() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Collect(maps.Keys(m.sessions))
}

// DefaultReplayQuiet is serve's ReplayQuiet: Gemini CLI writes its replay at once after
// answering (a few milliseconds on a loaded machine), and a resumed conversation's first
// turn waits this long once.
const DefaultReplayQuiet = 300 * time.Millisecond

// replayLimit bounds how long a replay may go on after session/load answered.
const replayLimit = 10 * time.Second

// errDraining answers a prompt, a new session or a resume on a stopping server.
var errDraining = shared.Errorf(shared.CodeDraining,
	"this server is stopping: send it again in a moment (Retry-After), and another server, or this one once restarted, takes it")

// Draining is errDraining once Drain has begun (no new agents or turns start), else nil.
func (m *Manager) Draining() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.draining || m.closing {
		return errDraining
	}
	return nil
}

// Drain lets the running turns finish for up to d: from now on no agent starts and no
// turn is taken (shared.CodeDraining), and a turn queued already still runs. Past d, the
// turns left are cancelled (ACP session/cancel, waited for a moment). It returns how many
// sessions still had turns at d; Close then ends the agents, and leaves the sessions of
// agents that can resume resumable.
func (m *Manager) Drain(d time.Duration) int {
	m.mu.Lock()
	if !m.draining {
		m.draining, m.drained = true, make(chan struct{})
		if m.working == 0 {
			close(m.drained)
		}
	}
	drained := m.drained
	m.mu.Unlock()
	select {
	case <-drained:
		return 0
	case <-m.clock.After(d):
	}
	m.mu.Lock()
	left := make([]*session, 0, len(m.sessions))
	for _, s := range m.sessions {
		left = append(left, s)
	}
	m.mu.Unlock()
	busy := 0
	for _, s := range left {
		if s.busy() {
			busy++
			if err := s.cancel(); err != nil {
				s.log.Warn("cancel a turn at the end of the drain", "err", err)
			}
		}
	}
	select { // the agents' answers to the cancel are stored if they come at once
	case <-drained:
	case <-m.clock.After(endGrace):
	}
	return busy
}

// turnsBegin counts a session whose turns start running (session.work).
func (m *Manager) turnsBegin() {
	m.mu.Lock()
	m.working++
	m.mu.Unlock()
}

// turnsEnd counts a session whose turns have all run; the last one ends a drain.
func (m *Manager) turnsEnd() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.working--
	if m.working == 0 && m.drained != nil {
		select {
		case <-m.drained:
		default:
			close(m.drained)
		}
	}
}

// Close ends every session: agents and their terminals' process groups are killed,
// open tool calls end cancelled with their output, and the sessions are closed.
func (m *Manager) Close() {
	m.mu.Lock()
	if !m.closing {
		close(m.closed)
	}
	m.closing = true
	live := make([]*session, 0, len(m.sessions))
	for _, s := range m.sessions {
		live = append(live, s)
	}
	m.mu.Unlock()
	for _, s := range live {
		s.stop(serverStopped)
	}
	m.wg.Wait()
}

// DefaultStartTimeout is how long an agent may take to start and answer initialize and
// session/new (Config.StartTimeout, serve --agent-start).
const DefaultStartTimeout = 30 * time.Second
