package acp

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"conch/server/store"
	"conch/shared"
)

// endGrace bounds how long the end of a session waits for the last output of a killed
// agent or terminal.
const endGrace = 2 * time.Second

// session is one live agent process: it is the ACP client of that agent. What changes
// while it lives is in core, owned by its loop (loop.go); the fields here are set before
// the agent starts, or before the channel that says so is closed.
type session struct {
	m       *Manager
	id, cwd string
	dirs    []string // the task's additional directories, which the agent may work in too
	tree    string   // the task's worktree, "" for a task on no repository
	profile Profile
	mach    Machine // where its agent and commands run (Config.Place)
	runner  string  // mach's name: its runner, "" for this server
	left    *string // the runner this session moved from to mach ("": this server), nil when it did not move
	saved   string  // what was saved of its work on the runner it left (Manager.saveWork), for people
	site    Work    // what mach builds their sandbox from
	rec     *recorder
	log     *slog.Logger

	conn      *sdk.ClientSideConnection
	connected chan struct{} // closed once conn is set
	guarded   chan struct{} // closed when the agent's stdout is fully read
	resumeID  sdk.SessionId // the agent's id of the conversation to take up again ("": a new one)
	forked    bool          // resumeID is a fork of another session's conversation (fork.go)
	closable  bool          // the agent offers session/close (lifecycle.go); set before started is closed
	forks     bool          // the agent offers session/fork (fork.go); set before started is closed
	started   chan struct{} // closed when initialize + session/new (or resume, load) are over, either way
	done      chan struct{} // closed when the session has ended
	inbox     chan event    // the loop's events
	over      chan struct{} // closed when the loop has ended, after done

	// rowMu is held while the session's row is changed, stored and published (write), so
	// that what is published is in the order stored; the fields below are the row's.
	rowMu  sync.Mutex
	state  shared.SessionState
	final  bool                  // failed, closed, or stopped (recordParked): this agent writes the state no more
	modes  *shared.Modes         // what the agent offers, nil when none
	config []shared.ConfigOption // the config options the agent offers (config.go)
	models bool                  // config is the agent's model list, set by session/set_model
}

// newSession is the session sess of task, whose agent p runs on mach (named runner, "" here).
func newSession(m *Manager, sess shared.Session, task shared.Task, p Profile, mach Machine, runner string) *session {
	tree := task.Worktree
	if task.Repo != "" || task.RepoURL != "" { // its sessions run in worktrees Conch made: the task's, an attempt's (task.CreateSession), a runner's
		tree = sess.Cwd
	}
	s := &session{m: m, id: sess.ID, cwd: sess.Cwd, dirs: task.AdditionalDirectories, tree: tree, profile: p, state: sess.State,
		mach: mach, runner: runner, site: Work{Session: sess.ID, Profile: p, Dir: sess.Cwd, Dirs: task.AdditionalDirectories, Tree: tree},
		log:       m.log.With("session", sess.ID, "agent", p.Name, "runner", runner),
		connected: make(chan struct{}), guarded: make(chan struct{}), started: make(chan struct{}), done: make(chan struct{}),
		inbox: make(chan event), over: make(chan struct{})}
	s.rec = newRecorder(recorderConfig{sessionID: sess.ID, cwd: sess.Cwd, store: m.cfg.Store, events: m.cfg.Events,
		clock: m.clock, interval: m.cfg.FlushInterval, log: s.log, terminal: s.terminal,
		outage: m.cfg.StoreOutage, stuck: s.storeDown, giveUp: m.closed})
	go s.loop(&core{idle: idleRule{period: m.cfg.AgentIdle}, asks: newPending(), terms: newTermTable()})
	return s
}

// serve joins the agent's stdio to the SDK through guard, then watches for its end.
func (s *session) serve(proc *Process) {
	pr, pw := io.Pipe()
	stdin := &lockedWriter{w: proc.Stdin}
	s.conn = sdk.NewClientSideConnection(s, stdin, pr)
	s.conn.SetLogger(s.log)
	s.do(func(c *core) {
		c.proc = proc
		if c.reason != "" { // stopped (Manager.Close) before the process existed
			proc.Kill()
		}
	})
	go func() {
		reply := func(line []byte) { _, _ = stdin.Write(line) }
		guard(proc.Stdout, pw, s.m.lines, func(n sdk.SessionNotification) { s.update(n.Update) }, reply, s.log)
		proc.Stdout.Close()
		close(s.guarded)
	}()
	close(s.connected)
	select {
	case <-proc.Exited:
	case <-s.conn.Done():
	}
	proc.Kill()
	<-proc.Exited
	s.waitBounded(s.guarded)
	s.end()
}

// abandon records a session whose agent could not be started.
func (s *session) abandon(err error) (shared.Session, error) {
	s.do(func(c *core) {
		c.ended = true
		c.terms.close()
	})
	s.rec.close()
	s.m.forget(s.id)
	close(s.started)
	close(s.done)
	return s.setState(shared.SessionFailed, err.Error())
}

// start runs initialize and session/new, bounded by StartTimeout. Turns wait for it.
func (s *session) start() (shared.Session, error) {
	defer close(s.started)
	<-s.connected
	// Not the request's context: the agent must not die because a browser went away.
	ctx, cancel := context.WithTimeout(context.Background(), s.m.cfg.StartTimeout)
	defer cancel()
	err := s.handshake(ctx)
	if err != nil && !s.askSignIn(err) {
		s.fail(err.Error())
		<-s.done
		return s.m.cfg.Store.GetSession(context.Background(), s.id)
	}
	s.do(func(c *core) {
		c.up = true
		c.idle.touch(s.m.clock.Now())
		if c.idle.period > 0 {
			c.tick = s.m.clock.After(c.idle.period)
		}
	})
	return s.setState(shared.SessionReady, "")
}

func (s *session) handshake(ctx context.Context) error {
	init, err := s.conn.Initialize(ctx, sdk.InitializeRequest{
		ProtocolVersion: sdk.ProtocolVersionNumber,
		ClientCapabilities: sdk.ClientCapabilities{Terminal: true,
			Fs: sdk.FileSystemCapabilities{ReadTextFile: !s.profile.NoReadTextFile, WriteTextFile: true}, // inside the cwd only (fs.go)
			// Agents that run commands themselves then report their output (ACP-NOTES.md).
			Meta:        map[string]any{"terminal_output": true},
			Elicitation: s.profile.elicitationCapabilities(),
			Auth:        sdk.AuthCapabilities{Terminal: true}}, // signin.go
		ClientInfo: &sdk.Implementation{Name: "conch", Version: cmp.Or(s.m.cfg.Version, "dev")},
	})
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	if init.ProtocolVersion != sdk.ProtocolVersionNumber {
		return fmt.Errorf("initialize: the agent speaks ACP version %d, Conch speaks %d", init.ProtocolVersion, sdk.ProtocolVersionNumber)
	}
	if err := s.authenticate(ctx, init.AuthMethods); err != nil {
		return err
	}
	caps := init.AgentCapabilities
	pc := shared.PromptCapabilities{Image: caps.PromptCapabilities.Image, EmbeddedContext: caps.PromptCapabilities.EmbeddedContext}
	if _, err := s.m.cfg.Store.SetPromptCapabilities(ctx, s.id, pc); err != nil {
		return fmt.Errorf("record what the agent takes in a prompt: %w", err)
	}
	mcp, left := s.profile.mcpServers(caps.McpCapabilities)
	if len(left) > 0 {
		s.say("This agent cannot use the MCP servers " + strings.Join(left, ", ") + " of its profile: it does not offer their transport.")
	}
	var dirs []string
	if caps.SessionCapabilities.AdditionalDirectories != nil {
		dirs = s.dirs
	} else if len(s.dirs) > 0 {
		s.say("This agent was not told of the task's other directories (" + strings.Join(s.dirs, ", ") + "): it does not offer additionalDirectories. Its file requests still reach them.")
	}
	s.closable = caps.SessionCapabilities.Close != nil
	s.forks = caps.SessionCapabilities.Fork != nil
	by := ""
	switch {
	case caps.SessionCapabilities.Resume != nil:
		by = store.ResumeBy
	case caps.LoadSession:
		by = store.LoadBy
	}
	s.do(func(c *core) { c.resumeBy = by })
	if s.resumeID != "" {
		o, err := s.takeUp(ctx, by, mcp, dirs)
		if err == nil {
			s.do(func(c *core) { c.acpID = s.resumeID })
			s.offered(o)
			s.say(map[bool]string{true: forkNote, false: s.movedNote() + "The agent resumed this conversation."}[s.forked])
			return nil
		}
		s.log.Warn("the agent did not take the conversation up again", "err", err)
		s.say("The agent started again with no memory of the earlier turns: " + takeUpFailure(err))
	}
	if err := s.open(ctx, mcp, dirs); err != nil {
		return s.needSignIn(init.AuthMethods, err, mcp, dirs)
	}
	if s.left != nil {
		s.recapHere(init.AgentInfo, pc.EmbeddedContext)
	}
	return nil
}

// machineName names where a session's agent runs, for people.
func machineName(runner string) string {
	if runner == "" {
		return "this server"
	}
	return "runner " + runner
}

// movedNote says where the session moved, "" when it did not.
func (s *session) movedNote() string {
	if s.left == nil {
		return ""
	}
	return fmt.Sprintf("This session moved from %s to %s, in a new directory %s. %s", machineName(*s.left), machineName(s.runner), s.cwd, s.saved)
}

// shellAgentInfo is the name the built-in shell agent gives in its initialize answer
// (server/shellagent): it runs each prompt's text as a command, so it is told no recap.
const shellAgentInfo = "conch-shell"

// recapHere tells people that the agent of a moved session (info, from its initialize
// answer) starts with no memory of the conversation, and has the next prompt carry a
// recap of it (store.Recap): an embedded resource when the agent takes them (embedded),
// else text after the person's.
func (s *session) recapHere(info *sdk.Implementation, embedded bool) {
	if info != nil && info.Name == shellAgentInfo {
		s.say(s.movedNote() + "The shell agent there runs your next prompt as before.")
		return
	}
	page, err := s.m.cfg.Store.ListMessages(context.Background(), shared.ListRequest{SessionID: s.id, Limit: new(store.RecapLookBack), Sort: shared.SortDesc})
	if err != nil {
		s.log.Error("read the conversation for its recap", "err", err)
		s.say(s.movedNote() + "The agent there starts with no memory of this conversation.")
		return
	}
	slices.Reverse(page.Messages)
	recap := store.Recap(fmt.Sprintf("(From Conch: this conversation moved to another machine, from %s to %s, and you start it with no memory of it. "+
		"Files in your directory are not those of before. Here is what was said before the move.)\n\n", machineName(*s.left), machineName(s.runner)), page.Messages, page.HasMore)
	block := sdk.TextBlock(recap)
	if embedded {
		mime := "text/markdown"
		block = sdk.ResourceBlock(sdk.EmbeddedResourceResource{TextResourceContents: &sdk.TextResourceContents{
			Uri: "conch://session/" + s.id + "/recap", MimeType: &mime, Text: recap}})
	}
	s.do(func(c *core) { c.recap = &block })
	s.say(s.movedNote() + "The agent there starts with no memory of this conversation: your next prompt carries a recap of it (its prompts and replies).")
}

// open asks the agent for a new session (ACP session/new) and records it.
func (s *session) open(ctx context.Context, mcp []sdk.McpServer, dirs []string) error {
	ns, err := s.conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: s.cwd, McpServers: mcp, AdditionalDirectories: dirs})
	if err != nil {
		return fmt.Errorf("session/new: %w", err)
	}
	by := ""
	s.do(func(c *core) { c.acpID, c.signIn, by = ns.SessionId, nil, c.resumeBy }) // a sign-in it waited for is taken
	s.offered(offer{ns.Modes, ns.ConfigOptions, ns.Models})
	if _, err := s.m.cfg.Store.SetAgentSession(context.Background(), s.id, string(ns.SessionId), by); err != nil {
		s.do(func(c *core) { c.resumeBy = "" }) // a hostile or broken id: this conversation cannot be taken up again
		s.log.Warn("the agent's session id is not kept", "err", err)
	}
	return nil
}

// authenticate asks the agent for the sign-in method its profile names (ACP authenticate),
// one of those it listed in its initialize answer (offered: hostile text, named bounded).
func (s *session) authenticate(ctx context.Context, offered []sdk.AuthMethod) error {
	want := s.profile.AuthMethod
	if want == "" {
		return nil
	}
	var ids []string
	for _, m := range offered {
		if id := authMethodID(m); id == want {
			if _, err := s.conn.Authenticate(ctx, sdk.AuthenticateRequest{MethodId: want}); err != nil {
				return fmt.Errorf("authenticate as %s: %w", want, err)
			}
			return nil
		} else if len(ids) < 10 {
			ids = append(ids, store.CutText(id, 100))
		}
	}
	return fmt.Errorf("the profile's auth_method %q is not one the agent offers (%s)", want, strings.Join(ids, ", "))
}

// authMethodID is a sign-in method's id, whichever of ACP's kinds it is.
func authMethodID(m sdk.AuthMethod) string {
	switch {
	case m.Agent != nil:
		return m.Agent.Id
	case m.EnvVar != nil:
		return m.EnvVar.Id
	case m.Terminal != nil:
		return m.Terminal.Id
	}
	return ""
}

// takeUp asks the new agent for the conversation of resumeID in the same directory: by
// session/resume, or else session/load, whose replay is dropped (it is stored already).
// It returns the modes and options the agent answered with. by is how the agent takes a
// conversation up; mcp are the MCP servers and dirs the additional directories, as for a
// new one.
func (s *session) takeUp(ctx context.Context, by string, mcp []sdk.McpServer, dirs []string) (offer, error) {
	switch by {
	case store.ResumeBy:
		r, err := s.conn.ResumeSession(ctx, sdk.ResumeSessionRequest{SessionId: s.resumeID, Cwd: s.cwd, McpServers: mcp, AdditionalDirectories: dirs})
		return offer{r.Modes, r.ConfigOptions, r.Models}, err
	case store.LoadBy:
		s.setReplaying(true)
		defer s.setReplaying(false)
		r, err := s.conn.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: s.resumeID, Cwd: s.cwd, McpServers: mcp, AdditionalDirectories: dirs})
		if err == nil {
			s.replayTail()
		}
		return offer{r.Modes, r.ConfigOptions, r.Models}, err
	}
	return offer{}, errors.New("it no longer offers session/resume nor session/load")
}

// takeUpFailure is what people read of why the agent did not resume: the agent's own
// words, bounded (they are hostile text, shown as text).
func takeUpFailure(err error) string {
	return store.CutText(turnError(err), 500)
}

// replayTail waits, after session/load answered, until the agent has sent nothing for
// ReplayQuiet (at most replayLimit, or until the session ends): what it sends meanwhile
// is the rest of its replay, stored already.
func (s *session) replayTail() {
	quiet := s.m.cfg.ReplayQuiet
	if quiet <= 0 {
		return
	}
	clock := s.m.clock
	s.do(func(c *core) { c.replayHeard = clock.Now() })
	deadline := clock.Now().Add(replayLimit)
	for {
		var last time.Time
		s.do(func(c *core) { last = c.replayHeard })
		now := clock.Now()
		wait := min(last.Add(quiet).Sub(now), deadline.Sub(now))
		if wait <= 0 {
			return
		}
		select {
		case <-clock.After(wait):
		case <-s.done:
			return
		}
	}
}

func (s *session) setReplaying(on bool) {
	s.do(func(c *core) { c.replaying = on })
}

// say adds and publishes a status message for people.
func (s *session) say(text string) { s.m.say(s.id, text) }

// fail ends the session with reason: the agent is killed, and its end is recorded by serve.
func (s *session) fail(reason string) {
	s.do(func(c *core) { c.fail(reason) })
}

// stop ends the session as closed (the server is stopping) and waits until it has ended.
func (s *session) stop(reason string) {
	s.do(func(c *core) {
		c.closing = true
		c.fail(reason)
	})
	<-s.done
}

// park stops the agent while the session stays, and returns once it is gone: a running
// turn ends, and the session is recorded ready and stopped with note for people (end).
func (s *session) park(note string) {
	s.do(func(c *core) { c.park(note) })
	<-s.done
}

// touch tells the idle rule that a person works in the session (its terminal).
func (s *session) touch() {
	s.do(func(c *core) { c.idle.touch(s.m.clock.Now()) })
}

// restartNote tells people what a stopped agent means for their next prompt.
const restartNote = "Your next prompt starts it again, in the same directory, with no memory of the earlier turns."

// resumeNote is restartNote for an agent that can take the conversation up again.
const resumeNote = "Your next prompt starts it again, in the same directory, and it resumes this conversation."

// restartNote is what a stop of this agent means for the next prompt.
func (s *session) restartNote() string {
	note := restartNote
	s.do(func(c *core) { note = c.restartNote() })
	return note
}

// end records the end of the agent: terminals are killed, open tool calls cancelled with
// their output, and the session becomes failed (the agent died), closed (server stop) or
// stays ready with its agent stopped (park). A session whose agent can take the
// conversation up again stays so when the agent dies on its own or the server stops:
// resumable, released to any server on a stop.
func (s *session) end() {
	var terms []*terminal
	var con *Console
	var proc *Process
	var closing, resumable, busy bool
	var reason, parked string
	s.do(func(c *core) {
		c.ended = true
		busy = c.running != nil || c.broke
		terms, con, proc = c.terms.close(), c.con, c.proc
		closing, reason, parked = c.closing, c.reason, c.parked
		resumable = c.up && c.resumeBy != ""
	})
	// The runner went away under the agent (its lease lapsed, its connection ended): the
	// session moves to another machine, whatever the agent.
	lost := !closing && reason == "" && parked == "" && errors.Is(proc.ExitErr(), ErrRunnerGone)
	if con != nil {
		con.close("The session's agent stopped, and its terminal with it.")
	}
	for _, t := range terms {
		t.kill()
	}
	for _, t := range terms {
		s.waitBounded(t.done)
	}
	s.rec.endTurn()
	s.rec.close()
	msgs, err := persist(s.m, func() ([]shared.Message, error) {
		return s.m.cfg.Store.CancelActiveToolCalls(context.Background(), s.id)
	})
	if err != nil {
		s.log.Error("cancel tool calls", "err", err)
	}
	for _, m := range msgs {
		s.m.cfg.Events.MessageUpdated(m)
	}
	switch {
	case parked != "" && !closing:
		s.recordParked(parked, false)
	case resumable && closing && reason == serverStopped:
		s.recordParked(store.ResumableNote, true)
	case lost:
		s.log.Warn("the session's runner is gone: the session moves", "runner", s.runner)
		s.recordParked(lostNote(s.runner, busy, len(terms), resumable), false)
	case resumable && !closing && reason == "": // it exited, or broke the connection
		s.log.Warn("the agent stopped unexpectedly; the session stays resumable", "why", failure(proc, ""))
		s.recordParked(crashNote(proc.ExitErr()), false)
	default:
		state, errText := shared.SessionClosed, ""
		if !closing {
			state, errText = shared.SessionFailed, failure(proc, reason)
		}
		if _, err = persist(s.m, func() (shared.Session, error) { return s.setState(state, errText) }); err != nil {
			s.log.Error("record session end", "err", err)
		}
	}
	s.m.forget(s.id)
	close(s.done)
	if lost && resumable {
		s.m.rehome(s.id)
	}
}

// lostNote tells people that the runner of a session went away, what was lost with it,
// and what comes next: busy says a turn was running, commands how many of the agent's
// commands were.
func lostNote(runner string, busy bool, commands int, resumable bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Runner %s stopped answering (its connection ended, or it missed its heartbeats)", runner)
	if busy {
		b.WriteString(" during a turn: the agent's reply to the last prompt was cut off")
	}
	if commands > 0 {
		fmt.Fprintf(&b, "; %d of its commands were running, and their output up to then is kept", commands)
	}
	b.WriteString(". What the agent changed on that machine and did not push is not here. ")
	if resumable {
		b.WriteString("Conch moves this session to another runner with room and resumes the agent there.")
	} else {
		b.WriteString("Your next prompt starts the agent again on another runner with room.")
	}
	return b.String()
}

// serverStopped is why the sessions of a server that stops end (Manager.Close).
const serverStopped = "the server stopped"

// crashNote tells people that an agent that can resume stopped on its own, and what their
// next prompt does.
func crashNote(exit error) string {
	why := ""
	if exit != nil {
		why = " (" + exit.Error() + ")"
	}
	return "The agent stopped unexpectedly" + why + ". " + resumeNote
}

// recordParked stores and publishes a session whose agent was stopped while it stays;
// released, no server owns it any more (the server is stopping: any may resume it).
func (s *session) recordParked(note string, release bool) {
	type parked struct {
		sess   shared.Session
		status *shared.Message
	}
	s.keep(func() (shared.Session, error) {
		p, err := persist(s.m, func() (parked, error) {
			sess, status, err := s.m.cfg.Store.StopSession(context.Background(), s.id, note, release)
			return parked{sess, status}, err
		})
		if err == nil {
			// A turn of this agent that ends after this (its prompt failed as the agent
			// went, before the connection said so) must not make the session look live:
			// the next agent, maybe already starting on another machine, owns the row.
			s.final = true
		}
		if err == nil && p.status != nil {
			s.m.cfg.Events.MessageAdded(*p.status)
		}
		return p.sess, err
	})
}

// storeDown fails the session whose writes have failed for the whole StoreOutage, so
// that nothing more happens unrecorded. The person is told at once, from what the store
// still reads; the stored state follows when the store takes writes again.
func (s *session) storeDown(err error) {
	for next := errors.Unwrap(err); next != nil; next = errors.Unwrap(err) {
		err = next // the database's own words, without the store's context
	}
	reason := fmt.Sprintf("Conch could not save this session's work for %s (%v), so it stopped the agent. "+
		"What was not saved yet is saved once the database takes writes again.", s.m.cfg.StoreOutage, err)
	s.log.Error("the store refuses writes: failing the session", "err", err)
	_, _ = s.write(func() (shared.Session, error) {
		sess, err := s.m.cfg.Store.GetSession(context.Background(), s.id)
		sess.State, sess.Error = shared.SessionFailed, reason
		return sess, err
	})
	s.fail(reason)
}

// persist runs write until the store takes it: a failing store is retried with the
// writer's backoff, until the manager stops (the next start's recovery then ends what
// was left open). Any other error is returned at once.
func persist[T any](m *Manager, write func() (T, error)) (T, error) {
	var retry backoff
	for {
		v, err := write()
		if err == nil || shared.ErrorCode(err) != shared.CodeInternal {
			return v, err
		}
		select {
		case <-m.clock.After(retry.next()):
		case <-m.closed:
			return v, err
		}
	}
}

// failure is the session's error: why it ended, and the tail of the agent's stderr.
func failure(proc *Process, reason string) string {
	if reason == "" {
		reason = "the agent exited"
		if err := proc.ExitErr(); err != nil {
			reason += ": " + err.Error()
		}
	}
	if tail := strings.TrimSpace(proc.Stderr()); tail != "" {
		reason += "\nstderr:\n" + tail
	}
	return reason
}

func (s *session) waitBounded(ch <-chan struct{}) {
	t := time.NewTimer(endGrace)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	}
}

// setState records and publishes a state change. Once failed or closed, a session stays so.
func (s *session) setState(state shared.SessionState, errText string) (shared.Session, error) {
	s.rowMu.Lock()
	defer s.rowMu.Unlock()
	if s.final || s.state == state && errText == "" {
		return s.m.cfg.Store.GetSession(context.Background(), s.id)
	}
	sess, err := s.m.cfg.Store.SetSessionState(context.Background(), s.id, state, errText)
	if err != nil {
		return shared.Session{}, err
	}
	s.state = state
	s.final = state.Ended()
	s.m.cfg.Events.SessionUpdated(sess)
	return sess, nil
}

// ending reports whether the agent is on its way out (ended, or parked by a stop or a
// crash): its session takes no more turns from it, and done closes soon.
func (s *session) ending() bool {
	ending := true
	s.do(func(c *core) { ending = c.ended || c.parked != "" })
	return ending
}

// errEnded is enqueue's answer once the agent is ending: the caller waits for its end.
var errEnded = shared.Errorf(shared.CodeConflict, "the session has ended")

func (s *session) enqueue(prompt []sdk.ContentBlock) error {
	var err error = errEnded
	s.do(func(c *core) {
		if c.ended || c.parked != "" {
			return
		}
		err = nil
		if c.turns.add(prompt) {
			s.m.turnsBegin()
			go s.work()
		}
	})
	return err
}

func (s *session) work() {
	defer s.m.turnsEnd()
	<-s.started
	for {
		var prompt []sdk.ContentBlock
		ok := false
		s.do(func(c *core) {
			if prompt, ok = c.turns.take(c.ended); ok && c.recap != nil {
				prompt, c.recap = append(slices.Clone(prompt), *c.recap), nil
			}
		})
		if !ok {
			return
		}
		s.turn(prompt)
	}
}

// agentSession is the agent's id of its session: "" while it waits for a sign-in (signin.go).
func (s *session) agentSession() sdk.SessionId {
	var id sdk.SessionId
	s.do(func(c *core) { id = c.acpID })
	return id
}

// busy reports whether a turn runs or waits.
func (s *session) busy() bool {
	busy := false
	s.do(func(c *core) { busy = c.turns.working })
	return busy
}

// liveTurn is a turn under way: withdraw ends Conch's wait for its session/prompt, done is
// closed when that wait is over; cancelled (the loop's) is set by a Cancel.
type liveTurn struct {
	withdraw  context.CancelCauseFunc
	done      chan struct{}
	watched   sync.Once
	cancelled bool
}

// errNotEnded is why Conch stopped waiting for a turn: the agent did not end it within
// RequestTimeout of session/cancel.
var errNotEnded = errors.New("the turn did not end after session/cancel")

// turn runs one prompt: running while it runs, ready after (unless more are queued).
// The turn is Cancel's from before the session says running: a client that cancels as
// soon as it sees the turn cancels this one, and one cancelled before it is sent is not
// sent at all.
func (s *session) turn(prompt []sdk.ContentBlock) {
	ctx, withdraw := context.WithCancelCause(context.Background())
	r := &liveTurn{withdraw: withdraw, done: make(chan struct{})}
	s.do(func(c *core) { c.running = r })
	if _, err := s.setState(shared.SessionRunning, ""); err != nil {
		s.log.Error("record turn start", "err", err)
	}
	cancelled := false
	s.do(func(c *core) { cancelled = r.cancelled })
	resp := sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}
	var err error
	if !cancelled {
		if err = s.signedIn(ctx); err == nil {
			resp, err = s.conn.Prompt(ctx, sdk.PromptRequest{SessionId: s.agentSession(), Prompt: prompt})
		}
	}
	s.do(func(c *core) { c.running, c.broke = nil, err != nil })
	close(r.done)
	withdraw(nil)
	s.rec.endTurn()
	select {
	case <-s.conn.Done():
		return // the agent is gone; serve records the end
	default:
	}
	stopped := false // the session changed: a stop reason was stored
	switch {
	case err != nil && errors.Is(context.Cause(ctx), errNotEnded):
		s.say(fmt.Sprintf("The agent did not end its turn within %s of Cancel: Conch stopped waiting for it.", s.m.cfg.RequestTimeout))
		stopped = s.recordStop(sdk.StopReasonCancelled)
	case err != nil:
		m, serr := s.m.cfg.Store.CreateMessage(context.Background(), store.NewMessage{SessionID: s.id,
			AuthorType: shared.AuthorAgent, Type: shared.TypeError, Content: "The agent's turn failed: " + unescape(turnError(err))})
		if serr != nil {
			s.log.Error("store turn error", "err", serr, "turn_err", err)
		} else {
			s.m.cfg.Events.MessageAdded(m)
		}
	default:
		stopped = s.recordStop(resp.StopReason)
	}
	s.afterTurn(err == nil && resp.StopReason != sdk.StopReasonCancelled)
	more := false
	s.do(func(c *core) {
		more = c.turns.waiting()
		c.idle.touch(s.m.clock.Now()) // before the session says ready: the idle rule counts from here
	})
	switch {
	case !more: // the session as published with its new state carries the stop reason
		if _, err := s.setState(shared.SessionReady, ""); err != nil {
			s.log.Error("record turn end", "err", err)
		}
	case stopped:
		s.publishSession()
	}
}

// recordStop stores how a turn ended, and a status message for people unless it simply
// ended, which it publishes. It reports whether the stop reason was stored.
func (s *session) recordStop(reason sdk.StopReason) bool {
	if reason == "" { // ACP requires a stop reason; an agent that leaves it out simply ended
		reason = sdk.StopReasonEndTurn
	}
	status, err := s.m.cfg.Store.EndTurn(context.Background(), s.id, shared.StopReason(reason))
	if err != nil {
		s.log.Error("record turn end", "err", err, "stop_reason", reason)
		return false
	}
	if status != nil {
		s.m.cfg.Events.MessageAdded(*status)
	}
	return true
}

// publishSession publishes the session as stored.
func (s *session) publishSession() {
	s.keep(func() (shared.Session, error) { return s.m.cfg.Store.GetSession(context.Background(), s.id) })
}

// turnError is the agent's own words for a failed turn: a JSON-RPC error's message and
// the text of its data, rather than the JSON of the whole error.
func turnError(err error) string {
	var re *sdk.RequestError
	if !errors.As(err, &re) {
		return err.Error()
	}
	detail := ""
	switch d := re.Data.(type) {
	case nil:
	case string:
		detail = d
	case map[string]any:
		for _, k := range []string{"error", "details", "message"} {
			if v, ok := d[k].(string); ok && v != "" {
				detail = v
				break
			}
		}
		if detail == "" {
			raw, _ := json.Marshal(d)
			detail = string(raw)
		}
	default:
		raw, _ := json.Marshal(d)
		detail = string(raw)
	}
	switch {
	case detail == "" || detail == re.Message:
		return re.Message
	case re.Message == "":
		return detail
	}
	return re.Message + ": " + detail
}

// jsonEscapes turns a JSON string's escapes back into what they stand for. The escaped
// backslash comes first, so that `\\n` reads as a backslash and an n.
var jsonEscapes = strings.NewReplacer(`\\`, `\`, `\n`, "\n", `\t`, "\t", `\r`, "", `\"`, `"`, `\/`, "/")

// unescape undoes the escaping of text an agent quoted as JSON, maybe more than once (an
// error message that embeds a JSON answer that embeds a prompt): text that shows `\n`
// where it means a new line reads as lines again.
func unescape(s string) string {
	for range 3 {
		if !strings.Contains(s, `\n`) {
			break
		}
		s = jsonEscapes.Replace(s)
	}
	return s
}

// startedYet refuses a request to an agent that is still starting.
func (s *session) startedYet() error {
	select {
	case <-s.started:
		return nil
	default:
		return shared.Errorf(shared.CodeConflict, "the session is still starting")
	}
}

func (s *session) cancel() error {
	if err := s.startedYet(); err != nil {
		return err
	}
	s.withdrawAsks() // ACP: the client answers its pending permission requests cancelled
	if err := s.conn.Cancel(context.Background(), sdk.CancelNotification{SessionId: s.agentSession()}); err != nil {
		return err
	}
	var r *liveTurn
	s.do(func(c *core) {
		if r = c.running; r != nil {
			r.cancelled = true
		}
		if c.checking != nil { // Cancel stops an attempt's check as it would the agent's command
			c.checking.stop()
		}
	})
	if r != nil {
		r.watched.Do(func() { go s.withdrawUnended(r) })
	}
	return nil
}

// withdrawUnended stops waiting for a cancelled turn that the agent has not ended within
// RequestTimeout: the SDK then sends ACP $/cancel_request for its session/prompt, and the
// session takes prompts again.
func (s *session) withdrawUnended(r *liveTurn) {
	select {
	case <-r.done:
	case <-s.m.clock.After(s.m.cfg.RequestTimeout):
		s.log.Warn("the agent did not end a cancelled turn in time", "timeout", s.m.cfg.RequestTimeout)
		r.withdraw(errNotEnded)
	}
}

// terminal finds a live terminal of the session.
func (s *session) terminal(id string) *terminal {
	var t *terminal
	s.do(func(c *core) { t = c.terms.get(id) })
	return t
}

func (s *session) liveTerminal(id string) (*terminal, error) {
	if t := s.terminal(id); t != nil {
		return t, nil
	}
	return nil, sdk.NewInvalidParams(map[string]any{"error": "unknown terminal " + id})
}

// The ACP client methods.

// SessionUpdate is reached only by an update guard did not take; it goes the same way.
func (s *session) SessionUpdate(_ context.Context, n sdk.SessionNotification) error {
	s.update(n.Update)
	return nil
}

func (s *session) CreateTerminal(ctx context.Context, p sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	cwd := s.cwd
	if p.Cwd != nil && *p.Cwd != "" {
		cwd = *p.Cwd
		if !filepath.IsAbs(cwd) {
			cwd = filepath.Join(s.cwd, cwd)
		}
	}
	env := make([]string, 0, len(p.Env))
	for _, e := range p.Env {
		env = append(env, e.Name+"="+e.Value)
	}
	id, err := "", errSessionEnded
	s.do(func(c *core) { id, err = c.terms.reserve() })
	switch {
	case errors.Is(err, errSessionEnded):
		return sdk.CreateTerminalResponse{}, err
	case err != nil:
		return sdk.CreateTerminalResponse{}, sdk.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	t, err := startTerminal(ctx, id, p.Command, p.Args, env, cwd, p.OutputByteLimit, s.mach, s.site, s.m.clock,
		func(exited bool) { s.rec.terminalChanged(id, exited) })
	kept := false
	s.do(func(c *core) { kept = c.terms.started(id, t) })
	switch {
	case err != nil:
		return sdk.CreateTerminalResponse{}, sdk.NewInternalError(map[string]any{"error": err.Error()})
	case !kept:
		t.kill()
		return sdk.CreateTerminalResponse{}, errSessionEnded
	}
	return sdk.CreateTerminalResponse{TerminalId: id}, nil
}

func (s *session) TerminalOutput(_ context.Context, p sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	t, err := s.liveTerminal(p.TerminalId)
	if err != nil {
		return sdk.TerminalOutputResponse{}, err
	}
	text, truncated, st := t.output()
	resp := sdk.TerminalOutputResponse{Output: text, Truncated: truncated}
	if st != nil {
		resp.ExitStatus = &sdk.TerminalExitStatus{ExitCode: st.Code, Signal: signalPtr(st.Signal)}
	}
	return resp, nil
}

func (s *session) WaitForTerminalExit(ctx context.Context, p sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	t, err := s.liveTerminal(p.TerminalId)
	if err != nil {
		return sdk.WaitForTerminalExitResponse{}, err
	}
	st, err := t.waitExit(ctx)
	if err != nil {
		return sdk.WaitForTerminalExitResponse{}, err
	}
	return sdk.WaitForTerminalExitResponse{ExitCode: st.Code, Signal: signalPtr(st.Signal)}, nil
}

func (s *session) KillTerminal(_ context.Context, p sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	t, err := s.liveTerminal(p.TerminalId)
	if err != nil {
		return sdk.KillTerminalResponse{}, err
	}
	t.stop()
	return sdk.KillTerminalResponse{}, nil
}

// ReleaseTerminal stops the command if it still runs (terminal.stop) and forgets the id;
// a tool call showing the terminal keeps its output. It answers once the command is gone
// (within a bound past stop's last signal), so that how it ended (the signal that stopped
// a cancelled command) is known before the agent ends its turn and the turn's messages
// are sealed.
func (s *session) ReleaseTerminal(_ context.Context, p sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	t, err := s.liveTerminal(p.TerminalId)
	if err != nil {
		return sdk.ReleaseTerminalResponse{}, err
	}
	t.stop()
	<-t.stopped
	s.waitBounded(t.done)
	s.do(func(c *core) { c.terms.release(p.TerminalId) })
	return sdk.ReleaseTerminalResponse{}, nil
}

func signalPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
