package acp

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"time"

	"conch/server/store"
	"conch/shared"
)

// A console is a person's terminal into a live session (docs/API.md, "The terminal"):
// bash on a PTY in the session's directory and sandbox, the box its agent and commands
// run in, which ends with the session (its end, the idle rule, the task's deletion). A
// session has at most one. One person types at a time (the writer); everyone who may read
// the task watches. Each command line run in it is stored as a command of the session,
// like an agent's (marks.go tells where each starts and ends), with who typed it, and
// goes to the audit.

const (
	// screenLimit is how many of the latest bytes are kept to make the screen again from
	// once its model was dropped (screen.go).
	screenLimit = 64 << 10
	// behindLimit is how far a watcher may fall behind before its pending output is
	// dropped and it is redrawn from the screen instead: a flood costs each watcher this much.
	behindLimit = 1 << 20
	// eventLimit bounds a watcher's pending control messages; older ones are dropped.
	eventLimit = 16
	// recordLimit bounds the command lines waiting to be stored; past it a new one is not
	// recorded (a loop printing marks cannot fill the memory).
	recordLimit = 64
	// maxCols and maxRows bound a terminal's size, and so its screen model's memory.
	maxCols, maxRows = 500, 200
)

// Console is a session's terminal.
type Console struct {
	s      *session
	proc   Proc          // bash, on a terminal of its session's machine
	done   chan struct{} // closed once the shell has ended and its commands are stored
	marks  markReader
	wake   chan struct{} // the recorder has work
	stored chan struct{} // closed once the recorder has stored everything
	poked  chan struct{} // the screen's keeper has work

	mu      sync.Mutex
	screen  tailBuffer // the latest output, which the screen's keeper feeds its model from
	fed     int64      // how much of the output (screen.total) the model has been fed
	resized []sizeAt   // the sizes the terminal took since
	views   map[*ConsoleView]struct{}
	writer  *ConsoleView
	cols    int
	rows    int
	running *consoleCommand // between a command's C and D marks
	jobs    []consoleJob    // for the recorder
	n       int             // command lines so far, for their tool call ids
	ended   string          // why the console ended, once it has
}

// sizeAt is a size the terminal took after the first at bytes of its output.
type sizeAt struct {
	at         int64
	cols, rows int
}

// consoleCommand is one command line run in the console.
type consoleCommand struct {
	line, login, id string
	started         time.Time
	out             streams
	msgID           string    // set by the recorder once stored
	dropped         bool      // not recorded (recordLimit)
	saved           time.Time // when its output was last queued for storing
}

// consoleJob is a command line's start (neither grow nor end), its output so far while it
// runs (grow: at most once per flush interval, as an agent's), or its end.
type consoleJob struct {
	cmd       *consoleCommand
	grow, end bool
	exit      *int
	out       shared.ShellOutput
	finished  time.Time
}

// ConsoleView is one watcher of a console: a socket. What the console prints and says
// waits in it (bounded) until the socket takes it.
type ConsoleView struct {
	c       *Console
	login   string
	mayEdit bool
	ready   chan struct{}

	// under c.mu
	out    []byte
	behind bool // it waits for the screen to be drawn (it joined, or output was dropped)
	events []shared.TerminalEvent
	gone   string
}

// Console opens the session's terminal, or joins the one it has, for login; mayEdit says
// the account may type (task.CheckEdit). An editor who joins a terminal nobody types in
// becomes its writer.
func (m *Manager) Console(sessionID, login string, mayEdit bool) (*ConsoleView, error) {
	s, err := m.live(sessionID)
	if err != nil {
		return nil, err
	}
	if err := s.startedYet(); err != nil {
		return nil, err
	}
	c, err := s.console()
	if err != nil {
		return nil, err
	}
	return c.join(login, mayEdit)
}

// console returns the session's console, starting it first if it has none.
func (s *session) console() (*Console, error) {
	var con *Console
	var err error = shared.Errorf(shared.CodeConflict, "the session's agent is stopping")
	s.do(func(c *core) {
		if c.ended || c.closing || c.parked != "" {
			return
		}
		if con, err = c.con, nil; con != nil {
			select {
			case <-con.done:
			default:
				return
			}
		}
		if con, err = startConsole(s); err == nil {
			c.con = con
		}
	})
	return con, err
}

func startConsole(s *session) (*Console, error) {
	c := &Console{s: s, done: make(chan struct{}), wake: make(chan struct{}, 1), stored: make(chan struct{}),
		poked: make(chan struct{}, 1), screen: tailBuffer{max: screenLimit}, views: map[*ConsoleView]struct{}{}, cols: 80, rows: 24}
	ctx, cancel := context.WithTimeout(context.Background(), s.m.cfg.RequestTimeout) // bounds a runner's answer
	defer cancel()
	proc, err := s.mach.Start(ctx, Command{Work: s.site, Path: "bash", Args: []string{"--noprofile", "--norc", "-i"},
		Env: append([]string{"TERM=xterm-256color"}, consolePrompt...), Dir: s.cwd, TTY: &Size{Cols: c.cols, Rows: c.rows}})
	if err != nil {
		return nil, fmt.Errorf("terminal: %w", err)
	}
	c.proc = proc
	go c.record()
	go c.keep(newScreenModel(c.cols, c.rows))
	go c.read()
	return c, nil
}

// read copies the shell's output to the screen's model, the watchers and the running
// command, until the shell has ended.
func (c *Console) read() {
	buf := make([]byte, 32<<10)
	out := c.proc.Stdout()
	for {
		n, err := out.Read(buf)
		if n > 0 {
			c.mu.Lock()
			c.output(buf[:n])
			c.mu.Unlock()
		}
		if err != nil {
			break
		}
	}
	// The PTY reads EIO once the shell and everything it started have closed it.
	c.proc.Signal(syscall.SIGKILL)
	_, _ = c.proc.Wait()
	out.Close()
	c.mu.Lock()
	c.finish(nil) // a command cut short
	if c.ended == "" {
		c.ended = "The shell ended."
	}
	for v := range c.views {
		v.end(c.ended)
	}
	c.mu.Unlock()
	c.signal()
	<-c.stored
	close(c.done)
}

// output takes what the shell printed (under c.mu).
func (c *Console) output(p []byte) {
	c.screen.write(p)
	if c.screen.total-c.fed <= screenLimit {
		c.poke() // the model can follow: a flood it fell behind does not wake it for each read
	}
	for v := range c.views {
		v.print(p)
	}
	c.marks.feed(p, c.commandText, c.marked)
}

// commandText is output of the running command (under c.mu); what it printed so far is
// stored at most once per flush interval while it runs.
func (c *Console) commandText(p []byte) {
	cmd := c.running
	if cmd == nil {
		return
	}
	cmd.out.stdout.write(p)
	if now := c.s.m.clock.Now(); now.Sub(cmd.saved) >= c.s.m.cfg.FlushInterval {
		cmd.saved = now
		c.queue(consoleJob{cmd: cmd, grow: true, out: cmd.out.capture(true)})
	}
}

// marked takes a mark (under c.mu).
func (c *Console) marked(m mark) {
	switch m.kind {
	case markCommand:
		c.finish(nil)
		now := c.s.m.clock.Now()
		login := ""
		if c.writer != nil {
			login = c.writer.login
		}
		c.n++
		c.running = &consoleCommand{line: m.line, login: login, id: fmt.Sprintf("console-%d", c.n), started: now, saved: now, out: newStreams()}
		c.queue(consoleJob{cmd: c.running})
	case markEnd:
		c.finish(m.exit)
	}
}

// finish ends the running command, if any, with exit (nil: unknown).
func (c *Console) finish(exit *int) {
	cmd := c.running
	if cmd == nil {
		return
	}
	c.running = nil
	c.queue(consoleJob{cmd: cmd, end: true, exit: exit, out: cmd.out.capture(false), finished: c.s.m.clock.Now()})
}

func (c *Console) queue(j consoleJob) {
	switch {
	case j.cmd.dropped, j.grow && len(c.jobs) > 0: // a growth waits for no one: the end, or the next, stores it
		return
	case !j.end && len(c.jobs) >= recordLimit:
		j.cmd.dropped = true
		c.s.log.Warn("terminal: command lines come faster than they are stored; one is not recorded")
		return
	}
	c.jobs = append(c.jobs, j)
	c.signal()
}

func (c *Console) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// record stores the command lines in order, until the console has ended.
func (c *Console) record() {
	defer close(c.stored)
	for range c.wake {
		c.mu.Lock()
		jobs := c.jobs
		c.jobs = nil
		over := c.ended != "" && c.running == nil
		c.mu.Unlock()
		for _, j := range jobs {
			if err := c.store(j); err != nil {
				c.s.log.Error("terminal: command not stored", "err", err)
			}
		}
		if over {
			c.mu.Lock()
			left := len(c.jobs)
			c.mu.Unlock()
			if left == 0 {
				return
			}
		}
	}
}

// store writes one command line's start or end, publishes it, and audits its start.
func (c *Console) store(j consoleJob) error {
	ctx := context.Background()
	st, events := c.s.m.cfg.Store, c.s.m.cfg.Events
	cmd := j.cmd
	md := &shared.Metadata{ToolCallID: cmd.id, Title: cmd.line, Kind: "execute", Status: shared.StatusRunning, Author: cmd.login,
		Normalized: &shared.Normalized{Kind: shared.NormalizedShellExec, ShellExec: &shared.ShellExec{Command: cmd.line, WorkDir: c.s.cwd}}}
	if !j.end && !j.grow {
		started := cmd.started
		m, err := st.CreateMessage(ctx, store.NewMessage{SessionID: c.s.id, AuthorType: shared.AuthorUser, Type: shared.TypeToolExecute,
			Content: cmd.line, Metadata: md, Output: &shared.ShellOutput{StartedAt: &started}})
		if err != nil {
			return err
		}
		cmd.msgID = m.ID
		events.MessageAdded(m)
		return st.Record(ctx, shared.AuditEvent{Login: cmd.login, Action: shared.ActionTerminalCommand, SessionID: c.s.id,
			MessageID: m.ID, Detail: cmd.line})
	}
	if cmd.msgID == "" {
		return nil // its start was not stored
	}
	out := j.out
	started, finished := cmd.started, j.finished
	out.StartedAt = &started
	switch {
	case j.end && j.exit == nil:
		md.Status = shared.StatusCancelled
	case j.end:
		md.Status = shared.StatusCompleted
	}
	if j.end {
		out.ExitCode, out.FinishedAt = j.exit, &finished
	}
	m, changed, err := st.UpdateMessage(ctx, cmd.msgID, store.Update{Metadata: md, Output: &out})
	if err != nil {
		return err
	}
	if changed {
		events.MessageUpdated(m)
	}
	return nil
}

// join adds a watcher.
func (c *Console) join(login string, mayEdit bool) (*ConsoleView, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended != "" {
		return nil, shared.Errorf(shared.CodeConflict, "%s", c.ended)
	}
	v := &ConsoleView{c: c, login: login, mayEdit: mayEdit, ready: make(chan struct{}, 1)}
	c.views[v] = struct{}{}
	v.behind = true // it draws from the screen first
	c.poke()
	v.event(shared.TerminalEvent{Type: shared.TerminalSize, Cols: c.cols, Rows: c.rows})
	if mayEdit && c.writer == nil {
		c.writer = v
		c.tellWriter()
	} else {
		v.event(c.writerEvent(v))
	}
	return v, nil
}

// tellWriter tells every watcher who types now (under c.mu).
func (c *Console) tellWriter() {
	for v := range c.views {
		v.event(c.writerEvent(v))
	}
}

func (c *Console) writerEvent(v *ConsoleView) shared.TerminalEvent {
	e := shared.TerminalEvent{Type: shared.TerminalWriter, Editing: c.writer == v, MayEdit: v.mayEdit}
	if c.writer != nil {
		e.Writer = c.writer.login
	}
	return e
}

// close ends the shell and everything it started, and returns once its commands are
// stored (or endGrace has passed).
func (c *Console) close(reason string) {
	c.mu.Lock()
	if c.ended == "" {
		c.ended = reason
	}
	c.mu.Unlock()
	c.proc.Signal(syscall.SIGKILL)
	select {
	case <-c.done:
	case <-time.After(endGrace):
		c.s.log.Warn("terminal: the shell's end is not yet stored")
	}
}

// Ready is signalled when Take has something.
func (v *ConsoleView) Ready() <-chan struct{} { return v.ready }

// Take returns what waits for the watcher, in order: output as TerminalOutput events.
// A last TerminalEnd says the view is over.
func (v *ConsoleView) Take() []shared.TerminalEvent {
	c := v.c
	c.mu.Lock()
	defer c.mu.Unlock()
	out := v.events
	if len(v.out) > 0 {
		out = append(out, shared.TerminalEvent{Type: shared.TerminalOutput, Output: v.out})
	}
	if v.gone != "" {
		out = append(out, shared.TerminalEvent{Type: shared.TerminalEnd, Reason: v.gone})
	}
	v.out, v.events = nil, nil
	return out
}

// print adds output for the watcher (under c.mu).
func (v *ConsoleView) print(p []byte) {
	if v.behind || v.gone != "" {
		return
	}
	if len(v.out)+len(p) > behindLimit {
		v.out, v.behind = nil, true
		v.c.poke()
	} else {
		v.out = append(v.out, p...)
	}
	v.wakeUp()
}

func (v *ConsoleView) event(e shared.TerminalEvent) {
	if len(v.events) == eventLimit {
		v.events = v.events[1:]
	}
	v.events = append(v.events, e)
	v.wakeUp()
}

func (v *ConsoleView) end(reason string) {
	if v.gone == "" {
		v.gone = reason
	}
	v.wakeUp()
}

func (v *ConsoleView) wakeUp() {
	select {
	case v.ready <- struct{}{}:
	default:
	}
}

var errNotWriter = shared.Errorf(shared.CodeForbidden, "someone else types in this terminal: take it over first")

// Input types p into the terminal: only its writer may.
func (v *ConsoleView) Input(p []byte) error {
	c := v.c
	c.mu.Lock()
	writer := c.writer == v
	c.mu.Unlock()
	if !writer {
		return errNotWriter
	}
	c.s.touch() // a person at work: the session is not idle
	_, err := c.proc.Stdin().Write(p)
	if err != nil {
		return shared.Errorf(shared.CodeConflict, "the terminal has ended")
	}
	return nil
}

// Resize sets the terminal's size: only its writer may; every watcher is told.
func (v *ConsoleView) Resize(cols, rows int) error {
	if cols < 1 || rows < 1 || cols > maxCols || rows > maxRows {
		return shared.Errorf(shared.CodeInvalid, "a terminal is 1 to %d columns and 1 to %d rows, not %dx%d", maxCols, maxRows, cols, rows)
	}
	c := v.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.writer != v {
		return errNotWriter
	}
	if err := c.proc.Resize(Size{Cols: cols, Rows: rows}); err != nil {
		return shared.Errorf(shared.CodeConflict, "the terminal has ended")
	}
	c.cols, c.rows = cols, rows
	if len(c.resized) == eventLimit { // a storm of resizes: the oldest are not replayed
		c.resized = c.resized[1:]
	}
	c.resized = append(c.resized, sizeAt{at: c.screen.total, cols: cols, rows: rows})
	c.poke()
	for w := range c.views {
		w.event(shared.TerminalEvent{Type: shared.TerminalSize, Cols: cols, Rows: rows})
	}
	return nil
}

// TakeOver makes the watcher the writer, if it may edit; every watcher is told.
func (v *ConsoleView) TakeOver() error {
	if !v.mayEdit {
		return shared.Errorf(shared.CodeForbidden, "%s may watch this terminal, not type in it", v.login)
	}
	c := v.c
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writer = v
	c.tellWriter()
	return nil
}

// Close lets the watcher go; a writer that goes leaves the keyboard to nobody.
func (v *ConsoleView) Close() {
	c := v.c
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.views, v)
	if c.writer == v {
		c.writer = nil
		c.tellWriter()
	}
}

// poke wakes the screen's keeper (under c.mu).
func (c *Console) poke() {
	select {
	case c.poked <- struct{}{}:
	default:
	}
}

// keep feeds the screen's model the output and sizes it has not seen, and redraws the
// watchers that wait for it, until the console has ended. Once it fell further behind
// than the kept output (a flood), it waits until someone needs the screen and then makes
// it again from the last lines: during a flood it costs nothing.
func (c *Console) keep(m *screenModel) {
	defer func() { m.close() }()
	for {
		select {
		case <-c.poked:
		case <-c.done:
			return
		}
		c.mu.Lock()
		tail, _ := c.screen.tail()
		fed, waiting, sizes := c.fed, c.waiting(), c.resized
		behind := c.screen.total - fed
		c.fed, c.resized = c.screen.total, nil
		var out []byte
		switch {
		case behind <= int64(len(tail)):
			out = slices.Clone(tail[len(tail)-int(behind):])
		case waiting:
			out, fed, sizes = slices.Clone(lastLines(tail, scrollbackLines+c.rows)), c.screen.total, nil
			m.close()
			m = newScreenModel(c.cols, c.rows)
		default:
			c.fed, c.resized = fed, sizes // still lost: nobody needs it yet
			c.mu.Unlock()
			continue
		}
		c.mu.Unlock()
		for _, s := range sizes {
			if s.at > fed { // output came at the size before
				n := int(s.at - fed)
				m.write(out[:n])
				out, fed = out[n:], s.at
			}
			m.resize(s.cols, s.rows)
		}
		m.write(out)
		if waiting {
			c.redraw(m)
		}
	}
}

// waiting says whether a watcher waits for the screen (under c.mu).
func (c *Console) waiting() bool {
	for v := range c.views {
		if v.behind {
			return true
		}
	}
	return false
}

// redraw gives the watchers that wait for it the screen: the model's, followed by the
// output the model has not been fed yet, so what comes next continues it.
func (c *Console) redraw(m *screenModel) {
	screen := m.redraw()
	cols, rows := m.size()
	c.mu.Lock()
	defer c.mu.Unlock()
	if cols != c.cols || rows != c.rows {
		c.poke() // it is drawn again at the new size
		return
	}
	tail, _ := c.screen.tail()
	// In a flood the output since the model may be more than is kept: the watcher misses
	// the lines between.
	since := tail[len(tail)-int(min(c.screen.total-c.fed, int64(len(tail)))):]
	for v := range c.views {
		if v.behind {
			v.behind = false
			v.event(shared.TerminalEvent{Type: shared.TerminalSize, Cols: cols, Rows: rows})
			v.out = slices.Concat(screen, since)
		}
	}
}
