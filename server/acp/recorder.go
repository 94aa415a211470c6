package acp

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"conch/server/store"
	"conch/shared"
)

// The recorder turns a session's updates into stored messages without ever making the
// agent's reader wait for the database. Updates change in-memory items at once (cheap,
// bounded memory); one writer goroutine per session stores them in order. A new message
// and any change besides output growth are stored at once; output growth of one message
// is stored at most once per interval, latest state wins; a flush stores everything.
// Events are published after each commit.
//
// A write that fails for the database's sake (a full disk) is not dropped: its item goes
// back to the front of the queue, the flushes waiting for it keep waiting, and the writer
// tries again after a growing delay (backoff). When the session's writes have failed for
// the whole outage limit, stuck is called once (the session fails and says why); the
// writes go on being retried until they succeed, or until the manager stops while they
// fail (the next start's recovery then ends what was left open). A refused write (a
// session deleted meanwhile) is logged and dropped.

type itemKind int

const (
	kindText itemKind = iota
	kindThought
	kindTool
	kindPlan
)

type item struct {
	kind  itemKind
	text  strings.Builder    // kindText, kindThought
	tool  *toolCall          // kindTool
	plan  []shared.PlanEntry // kindPlan
	term  *terminal          // the client terminal the tool call shows
	msgID string             // set once stored

	dirty, major, queued bool
	sealed               bool      // the turn ended and its final state is stored
	written              string    // the path of Conch's own call for a write no agent call claimed yet
	saved                time.Time // last write
}

type job struct {
	it      *item
	create  bool
	msgID   string
	typ     shared.MessageType
	content string
	md      *shared.Metadata
	out     *shared.ShellOutput
	tool    []shared.ToolContentItem // a tool call's content, when it changed
}

// recorderConfig is what a recorder is given: its session, where it writes, how often,
// and when it gives up.
type recorderConfig struct {
	sessionID, cwd string
	store          *store.Store
	events         Events
	clock          clock
	interval       time.Duration // output growth is written at most this often
	log            *slog.Logger
	terminal       func(id string) *terminal // a live terminal of the session, or nil
	outage         time.Duration             // how long writes may fail before stuck
	stuck          func(error)               // called once when they have failed that long
	giveUp         <-chan struct{}           // closed when the manager stops
}

type recorder struct {
	recorderConfig
	abandoned bool // gave up: failed writes are dropped (writer only)

	mu            sync.Mutex
	queue         []*item // items to store, in order of their first change
	tools         map[string]*item
	byTerm        map[string][]*item
	text, thought *item // the open text segments of the turn
	plan          *item // the turn's plan
	writes        int   // writes through the client so far, for their tool call ids
	flushes       []chan struct{}
	wake          chan struct{}
	stop          chan struct{}
	done          chan struct{}
}

func newRecorder(cfg recorderConfig) *recorder {
	r := &recorder{recorderConfig: cfg, tools: map[string]*item{}, byTerm: map[string][]*item{},
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go r.run()
	return r
}

// update applies one session/update. It never blocks on the store.
func (r *recorder) update(u sdk.SessionUpdate) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case u.AgentMessageChunk != nil:
		if t := u.AgentMessageChunk.Content.Text; t != nil {
			r.appendText(&r.text, kindText, t.Text)
		}
	case u.AgentThoughtChunk != nil:
		if t := u.AgentThoughtChunk.Content.Text; t != nil {
			r.appendText(&r.thought, kindThought, t.Text)
		}
	case u.ToolCall != nil:
		r.applyTool(string(u.ToolCall.ToolCallId), fromToolCall(u.ToolCall))
	case u.ToolCallUpdate != nil:
		r.applyTool(string(u.ToolCallUpdate.ToolCallId), fromToolCallUpdate(u.ToolCallUpdate))
	case u.Plan != nil:
		r.applyPlan(u.Plan.Entries)
	}
}

// permission records the tool call shown in a permission request (some agents show a
// call there first, or only there) and returns its title as known so far. Text after the
// request is a new message, so the transcript keeps its order.
func (r *recorder) permission(tc sdk.ToolCallUpdate) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := string(tc.ToolCallId)
	r.applyTool(id, fromPermission(&tc))
	r.text, r.thought = nil, nil
	if it := r.tools[id]; it != nil {
		if it.tool.Title != "" {
			return it.tool.Title
		}
		return it.tool.Command
	}
	return ""
}

// reject records that the person or the policy refused the tool call id.
func (r *recorder) reject(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if it := r.tools[id]; it != nil && !it.sealed {
		it.tool.reject()
		r.mark(it, true)
	}
}

// applyPlan replaces the turn's plan (ACP sends the whole plan each time): the first plan
// of a turn is a new message, every later one updates it.
func (r *recorder) applyPlan(entries []sdk.PlanEntry) {
	if r.plan == nil {
		r.plan = &item{kind: kindPlan}
		r.text, r.thought = nil, nil // text after it is a new message, so order is kept
	}
	r.plan.plan = make([]shared.PlanEntry, 0, len(entries))
	for _, e := range entries {
		r.plan.plan = append(r.plan.plan, shared.PlanEntry{Content: e.Content, Priority: string(e.Priority), Status: string(e.Status)})
	}
	r.mark(r.plan, true)
}

// written records a write through the client (fs/write_text_file) as its diff (oldText
// nil for a new file). An agent that reports the edit as its own tool call (Gemini CLI
// does, before it writes) gets the diff there, so one edit is one diff; other writes are
// completed edits, tool calls of their own until the agent reports a call of that path
// later in the turn (applyTool).
func (r *recorder) written(path string, oldText *string, newText string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if it := r.editing(path); it != nil {
		it.tool.setDiff(path, oldText, newText)
		r.mark(it, true)
		return
	}
	r.writes++
	diff := sdk.ToolDiffContent(path, newText)
	diff.Diff.OldText = oldText
	title, kind, status := "Write "+path, string(sdk.ToolKindEdit), string(sdk.ToolCallStatusCompleted)
	id := fmt.Sprintf("conch-write-%d", r.writes)
	r.newTool(id).written = path // made here, so it never claims an earlier write of the path
	r.applyTool(id, toolUpdate{Title: &title, Kind: &kind, Status: &status, Content: []sdk.ToolCallContent{diff}})
}

// claim returns the item of this turn's write through the client that a new tool call of
// the agent's reports after the fact (a call whose diff or location is the written path,
// not a command), taking it out of Conch's name; nil when there is none.
func (r *recorder) claim(u toolUpdate) *item {
	if u.Kind != nil && *u.Kind == string(sdk.ToolKindExecute) {
		return nil
	}
	var paths []string
	for _, c := range u.Content {
		if c.Diff != nil {
			paths = append(paths, c.Diff.Path)
		}
	}
	for _, l := range u.Locations {
		paths = append(paths, l.Path)
	}
	for id, it := range r.tools {
		if it.written != "" && !it.sealed && slices.Contains(paths, it.written) {
			delete(r.tools, id)
			it.written = ""
			return it
		}
	}
	return nil
}

// editing returns the agent's unfinished tool call a write of path belongs to: the one
// whose diff is of path, else the one edit; nil when there is none, or no single one.
func (r *recorder) editing(path string) *item {
	var withDiff, edits []*item
	for _, it := range r.tools {
		tc := it.tool
		if it.sealed || tc.Shell || tc.Status.IsTerminal() {
			continue
		}
		if slices.ContainsFunc(tc.content, func(c shared.ToolContentItem) bool { return c.Type == shared.ContentDiff && c.Path == path }) {
			withDiff = append(withDiff, it)
		}
		if tc.Kind == string(sdk.ToolKindEdit) {
			edits = append(edits, it)
		}
	}
	for _, found := range [][]*item{withDiff, edits} {
		if len(found) == 1 {
			return found[0]
		}
	}
	return nil
}

// appendText adds to the open text segment. A segment holds at most store.MaxTextBytes,
// what the store keeps of one message's text; the text goes on in a new message, split
// between characters, so no message, and no rewrite of one, grows without bound and the
// store never has to cut one.
func (r *recorder) appendText(cur **item, kind itemKind, text string) {
	for text != "" {
		if *cur == nil || (*cur).text.Len() >= store.MaxTextBytes {
			*cur = &item{kind: kind}
		}
		part := text
		if room := store.MaxTextBytes - (*cur).text.Len(); len(part) > room {
			part = store.CutText(part, room)
			if part == "" { // not even one character fits: it starts the next segment
				*cur = nil
				continue
			}
		}
		(*cur).text.WriteString(part)
		r.mark(*cur, false)
		text = text[len(part):]
	}
}

func (r *recorder) applyTool(id string, u toolUpdate) {
	if id == "" {
		return
	}
	it, renamed := r.tools[id], false
	if it == nil {
		// A write reported late keeps its row, now the agent's call: one edit, one row.
		if it = r.claim(u); it != nil {
			it.tool.ID, renamed = id, true
			r.tools[id] = it
		} else {
			it = r.newTool(id)
		}
	}
	if it.sealed {
		r.log.Debug("update for a finished tool call ignored", "session", r.sessionID, "tool_call", id)
		return
	}
	prevTerm := it.tool.TerminalID
	major := it.tool.apply(u) || renamed
	if id := it.tool.TerminalID; id != prevTerm {
		it.term = r.terminal(id)
		r.byTerm[id] = append(r.byTerm[id], it)
	}
	r.mark(it, major)
}

// newTool adds the tool call id. Text after a new tool call is a new message, so the
// transcript keeps its order.
func (r *recorder) newTool(id string) *item {
	it := &item{kind: kindTool, tool: newToolCall(id)}
	r.tools[id] = it
	r.text, r.thought = nil, nil
	return it
}

// terminalChanged is called by a terminal when its output grew or it exited.
func (r *recorder) terminalChanged(id string, exited bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, it := range r.byTerm[id] {
		if !it.sealed {
			r.mark(it, exited)
		}
	}
}

func (r *recorder) mark(it *item, major bool) {
	it.dirty = true
	it.major = it.major || major
	if !it.queued {
		it.queued = true
		r.queue = append(r.queue, it)
	}
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// endTurn closes the turn: its text segments end, and a tool call still open can no
// longer finish (ACP sends every update of a turn before the turn's answer), so it is
// cancelled with its output kept. Everything is stored before endTurn returns; then the
// turn's items are sealed and their buffers and terminals let go.
func (r *recorder) endTurn() {
	r.mu.Lock()
	r.text, r.thought, r.plan = nil, nil, nil
	for _, it := range r.tools {
		if !it.sealed && !it.tool.Status.IsTerminal() {
			it.tool.Status = shared.StatusCancelled
			r.mark(it, true)
		}
	}
	r.mu.Unlock()
	r.flush()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, it := range r.tools {
		if !it.sealed && !it.dirty {
			it.sealed, it.term = true, nil
			it.tool.replace(rankNone, "", "")
			it.tool.content = nil // stored; the sealed call is never rendered again
		}
	}
	clear(r.byTerm)
}

// messageOf is the id of the stored message of the tool call id, "" before it is stored.
func (r *recorder) messageOf(id string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if it := r.tools[id]; it != nil {
		return it.msgID
	}
	return ""
}

// flush stores every pending change and returns when it is committed.
func (r *recorder) flush() {
	ch := make(chan struct{})
	r.mu.Lock()
	r.flushes = append(r.flushes, ch)
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
	select {
	case <-ch:
	case <-r.done:
	}
}

// close stores what is pending and stops the writer.
func (r *recorder) close() {
	r.flush()
	close(r.stop)
	<-r.done
}

func (r *recorder) run() {
	defer close(r.done)
	var timer <-chan time.Time
	var retry backoff
	var failingSince time.Time // zero while writes succeed
	stuck := false
	for {
		wake, giveUp := r.wake, (<-chan struct{})(nil)
		if !failingSince.IsZero() {
			wake, giveUp = nil, r.giveUp // only the backoff timer retries
		}
		select {
		case <-wake:
		case <-timer:
		case <-giveUp:
			r.abandoned = true
			r.log.Error("the server stops while the store refuses writes: changes of this session are lost; the next start closes what was open", "session", r.sessionID)
		case <-r.stop:
			return
		}
		jobs, waiters, next := r.collect()
		if failed, err := r.writeAll(jobs); err != nil {
			r.requeue(failed, waiters)
			now := r.clock.Now()
			if failingSince.IsZero() {
				failingSince = now
			}
			r.log.Error("store refuses the session's writes; retrying", "session", r.sessionID, "since", failingSince, "err", err)
			if !stuck && now.Sub(failingSince) >= r.outage {
				stuck = true
				r.stuck(err)
			}
			timer = r.clock.After(retry.next())
			continue
		}
		failingSince, retry = time.Time{}, backoff{}
		for _, w := range waiters {
			close(w)
		}
		timer = nil
		if !next.IsZero() {
			timer = r.clock.After(next.Sub(r.clock.Now()))
		}
	}
}

// writeAll stores jobs in order. When the store fails, it stops and returns the jobs from
// the failed one on, to be retried in order.
func (r *recorder) writeAll(jobs []job) ([]job, error) {
	for i, j := range jobs {
		err := r.write(j)
		switch {
		case err == nil:
		case shared.ErrorCode(err) == shared.CodeInternal && !r.abandoned:
			return jobs[i:], err
		default:
			r.log.Error("agent update not stored", "session", r.sessionID, "err", err)
		}
	}
	return nil, nil
}

// requeue puts the items of failed jobs back at the front of the queue, in order and with
// their latest state, and the flushes back in front of newer ones.
func (r *recorder) requeue(failed []job, waiters []chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	queue := make([]*item, 0, len(failed)+len(r.queue))
	retried := make(map[*item]bool, len(failed))
	for _, j := range failed {
		j.it.dirty, j.it.major, j.it.queued = true, true, true
		queue = append(queue, j.it)
		retried[j.it] = true
	}
	for _, it := range r.queue {
		if !retried[it] {
			queue = append(queue, it)
		}
	}
	r.queue = queue
	r.flushes = append(waiters, r.flushes...)
}

// backoff is the delay before each retry of a failing store: 100 ms, doubling, at most 5 s.
type backoff struct{ last time.Duration }

func (b *backoff) next() time.Duration {
	b.last = min(max(2*b.last, 100*time.Millisecond), 5*time.Second)
	return b.last
}

// collect takes the items due for storing and when the next deferred one is due.
func (r *recorder) collect() (jobs []job, waiters []chan struct{}, next time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	waiters, r.flushes = r.flushes, nil
	force := len(waiters) > 0
	now := r.clock.Now()
	keep := r.queue[:0]
	for _, it := range r.queue {
		due := it.saved.Add(r.interval)
		if it.msgID != "" && !it.major && !force && now.Before(due) {
			keep = append(keep, it)
			if next.IsZero() || due.Before(next) {
				next = due
			}
			continue
		}
		it.queued, it.dirty, it.major, it.saved = false, false, false, now
		jobs = append(jobs, r.snapshot(it))
	}
	clear(r.queue[len(keep):])
	r.queue = keep
	return jobs, waiters, next
}

func (r *recorder) snapshot(it *item) job {
	j := job{it: it, create: it.msgID == "", msgID: it.msgID}
	switch it.kind {
	case kindText, kindThought:
		j.typ, j.content = shared.TypeMessage, it.text.String()
		if it.kind == kindThought {
			j.typ = shared.TypeThinking
		}
	case kindPlan:
		j.typ, j.content, j.md = shared.TypePlan, planSummary(it.plan), &shared.Metadata{Entries: it.plan}
	case kindTool:
		var term *shared.ShellOutput
		if it.term != nil {
			o := it.term.shellOutput()
			term = &o
		}
		j.typ, j.content, j.md, j.out, j.tool = it.tool.render(r.cwd, term)
	}
	return j
}

func (r *recorder) write(j job) error {
	// The store outlives a cancelled request: a commit must not be cut short.
	ctx := context.Background()
	if j.create {
		m, err := r.store.CreateMessage(ctx, store.NewMessage{SessionID: r.sessionID, AuthorType: shared.AuthorAgent,
			Type: j.typ, Content: j.content, Metadata: j.md, Output: j.out, ToolContent: j.tool})
		if err != nil {
			return fmt.Errorf("store agent message: %w", err)
		}
		r.mu.Lock()
		j.it.msgID = m.ID
		r.mu.Unlock()
		r.events.MessageAdded(m)
		return nil
	}
	m, changed, err := r.store.UpdateMessage(ctx, j.msgID, store.Update{Content: &j.content, Metadata: j.md, Output: j.out, ToolContent: j.tool})
	if err != nil {
		return fmt.Errorf("update agent message %s: %w", j.msgID, err)
	}
	if changed {
		r.events.MessageUpdated(m)
	}
	return nil
}

// planSummary is a plan message's content: how far the plan has come, in words.
func planSummary(entries []shared.PlanEntry) string {
	done := 0
	for _, e := range entries {
		if e.Status == string(sdk.PlanEntryStatusCompleted) {
			done++
		}
	}
	return fmt.Sprintf("Plan: %d of %d steps done", done, len(entries))
}
