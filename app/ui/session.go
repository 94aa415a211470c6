package ui

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/app/client"
	"conch/shared"
	"conch/shared/poll"
)

// pageSize is how many messages the first load and each "load older" bring: as many as
// the page's boot carries.
const pageSize = shared.BootMessages

// firstPaint is how many of the newest messages the first load renders before the rest,
// and how many older ones each later step renders (olderInSteps).
const firstPaint = 20

// Live states of a session page's WebSocket.
const (
	liveConnecting   = "Connecting…"
	liveOn           = "Live"
	liveReconnecting = "Reconnecting…"
)

// SessionPage is /sessions/{id}: one session's chat with live updates.
type SessionPage struct {
	app.Compo

	id        string
	session   *shared.Session
	task      *shared.Task // the session's task, once known: the header's title, branch and Changes
	tl        timeline
	loaded    bool // the first page has arrived
	hasOlder  bool
	older     bool // loading older messages
	live      string
	offline   bool
	err       string
	draft     string
	forkDraft bool             // the draft is a fork's summary, not sent yet (fork.go)
	files     []pendingFile    // to send with the prompt (attach.go)
	pending   string           // the client message id of the prompt on its way, until the store has it
	stopping  bool             // a stop or a resume of the agent is on its way
	starting  bool             // a new session of the task is on its way (startNew)
	missing   bool             // the session does not exist
	switching bool             // a change of a mode or a config option is on its way
	readOnly  string           // why the person may not change this session, when they may not (access.go)
	kept      time.Time        // when the server read the messages shown, until the app has listed them itself
	bootHTML  string           // prerender only: the boot payload the page carries (bootScript)
	bootRest  []shared.Message // of the boot, what the app shows a frame after the newest

	ctx    context.Context // this page's work; cancelled on dismount or when the id changes
	cancel context.CancelFunc
}

func sessionIDOf(path string) string {
	return strings.TrimPrefix(path, "/sessions/")
}

// newSessionPage is the route's page. The first one in the browser starts from the boot
// payload of the page the server sent, so its first render already shows the messages
// that the prerendered page shows.
func newSessionPage() app.Composer {
	p := &SessionPage{}
	if b := takeBoot(); b != nil {
		p.boot(*b)
	}
	return p
}

// boot shows what the server read when it sent the page. The prerender renders it all;
// the app renders the newest firstPaint messages first and the rest in steps (see
// olderInSteps), so that it takes over the page sooner.
func (p *SessionPage) boot(b shared.Boot) {
	msgs := b.Messages.Messages
	if app.IsClient {
		msgs, p.bootRest = firstPaintOf(msgs)
	}
	p.id = b.Session.ID
	p.setSession(b.Session)
	p.task = b.Task
	p.tl.merge(msgs...)
	p.loaded, p.hasOlder, p.kept = true, b.Messages.HasMore, b.At
}

// OnNav also runs during server-side prerender, where the page reads its boot (the
// session and its newest messages) through the handler's BootFunc. In the browser the API
// is called from OnNav's goroutines.
func (p *SessionPage) OnNav(ctx app.Context) {
	id := sessionIDOf(ctx.Page().URL().Path)
	if id == p.id && p.ctx != nil {
		return
	}
	ctx.Page().SetTitle("Session · Conch")
	if app.IsServer {
		p.prerender(id, ctx.Page().URL().Query().Get(shared.BootParam))
		return
	}
	p.OnDismount()
	booted := id == p.id // only the boot sets the id before the page runs
	if !booted {
		p.session, p.task, p.tl, p.loaded, p.hasOlder, p.kept = nil, nil, timeline{}, false, false, time.Time{}
	}
	p.id, p.older = id, false
	p.live, p.offline, p.err, p.draft, p.pending, p.switching, p.stopping, p.missing = liveConnecting, false, "", "", "", false, false, false
	p.starting = false
	p.readOnly, p.files, p.forkDraft = "", nil, false
	ctx.SetState(stateReadOnly, "")
	p.takeForkDraft(ctx)
	p.ctx, p.cancel = context.WithCancel(context.Background())
	if booted {
		ctx.Defer(p.land)
		if rest := p.bootRest; len(rest) > 0 {
			p.bootRest = nil
			p.apply(ctx, p.ctx, func(ctx app.Context) { p.olderInSteps(ctx, p.ctx, rest) })
		}
	} else {
		keepPage(ctx.Page().URL().Path)
	}
	go p.follow(ctx, p.ctx, id, booted)
}

// keepPage asks the service worker to keep the page at path for reading offline: it keeps
// the pages the browser navigates to by itself, but a page opened inside the app is no
// navigation.
func keepPage(path string) {
	sw := app.Window().Get("navigator").Get("serviceWorker")
	if !sw.Truthy() || !sw.Get("controller").Truthy() {
		return
	}
	sw.Get("controller").Call("postMessage", map[string]any{"type": "conch:keep-page", "path": path})
}

// prerender takes the boot the server loaded for the page (under key), to render the
// session's messages and carry them.
func (p *SessionPage) prerender(id, key string) {
	p.id = id
	if loadBoot == nil {
		return
	}
	b, err := loadBoot(key)
	switch {
	case err == nil && b.Session.ID != id:
		app.Log("prerendering session", id, "without the boot of another")
	case err == nil:
		p.boot(b)
		p.bootHTML = bootScript(b)
	case shared.ErrorCode(err) == shared.CodeNotFound:
		p.err = "This session does not exist."
	default: // the app lists the messages itself once it runs
		app.Log("prerendering session", id, "without its messages:", err)
	}
}

// apply runs f on the UI goroutine unless c, the work of an earlier session shown by
// this page, has been cancelled meanwhile: late answers never land in another session.
func (p *SessionPage) apply(ctx app.Context, c context.Context, f func(app.Context)) {
	ctx.Dispatch(func(ctx app.Context) {
		if c.Err() == nil {
			f(ctx)
		}
	})
}

// OnMount takes the messages components hand over (an answered permission request), so
// the page shows them without waiting for the WebSocket.
func (p *SessionPage) OnMount(ctx app.Context) {
	ctx.Handle(actionMessage, func(ctx app.Context, a app.Action) {
		if m, ok := a.Value.(shared.Message); ok && m.SessionID == p.id {
			p.show(ctx, []shared.Message{m})
		}
	})
	ctx.Handle(actionFork, func(ctx app.Context, a app.Action) {
		if id, ok := a.Value.(string); ok {
			p.fork(ctx, id)
		}
	})
	ctx.Handle(actionRetrySignIn, func(ctx app.Context, _ app.Action) { p.agentAction(ctx, api.Resume, "Retry failed: ") })
}

// setSession shows s unless the page already shows a newer version of the session: an
// answer to a request (a mode switch) may arrive after notifications of later changes.
// Every session on its way to the page enters here, and is kept as shown (Visible).
func (p *SessionPage) setSession(s shared.Session) {
	if p.session == nil || !s.UpdatedAt.Before(p.session.UpdatedAt) {
		s = s.Visible()
		p.session = &s
	}
}

// OnDismount stops the page's requests and WebSocket.
func (p *SessionPage) OnDismount() {
	if p.cancel != nil {
		p.cancel()
	}
}

// follow keeps the page in sync: a WebSocket subscription, and after each reconnect (and
// after a boot: loaded) a re-list so that nothing missed is lost and nothing is doubled
// (the timeline merges by id).
func (p *SessionPage) follow(ctx app.Context, c context.Context, id string, loaded bool) {
	go p.refreshSession(ctx, c, id) // meanwhile, the messages
	failures := 0
	for c.Err() == nil {
		synced, err := p.connect(ctx, c, id, loaded)
		if c.Err() != nil {
			return
		}
		if shared.ErrorCode(err) == shared.CodeNotFound {
			p.apply(ctx, c, p.notFound)
			return // retrying cannot help
		}
		if synced {
			loaded, failures = true, 0
		}
		failures++
		p.apply(ctx, c, func(ctx app.Context) {
			p.live = liveReconnecting
			p.offline = errors.Is(err, client.ErrUnreachable)
			if !p.offline {
				p.err = err.Error()
			}
		})
		select {
		case <-c.Done():
			return
		case <-time.After(poll.Backoff(failures)):
		}
	}
}

func (p *SessionPage) refreshSession(ctx app.Context, c context.Context, id string) {
	s, err := api.GetSession(c, id)
	if c.Err() != nil {
		return
	}
	p.apply(ctx, c, func(ctx app.Context) {
		switch {
		case err == nil:
			p.setSession(s)
			go p.checkAccess(ctx, c, s.TaskID)
		case shared.ErrorCode(err) == shared.CodeNotFound:
			p.notFound(ctx)
		case errors.Is(err, client.ErrUnreachable):
			p.offline = true
		default:
			p.err = err.Error()
		}
	})
}

// connect runs one WebSocket connection until it ends; synced reports whether the
// messages were listed on it.
func (p *SessionPage) connect(ctx app.Context, c context.Context, id string, loaded bool) (synced bool, err error) {
	conn, err := api.Dial(c)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	stop := context.AfterFunc(c, func() { conn.Close() })
	defer stop()

	if err := conn.Subscribe(c, id); err != nil {
		return false, err
	}
	// Subscribed first, listed second: whatever happens in between arrives twice, and
	// merging by id keeps one copy.
	var msgs []shared.Message
	latest, err := conn.List(c, shared.ListRequest{SessionID: id, Limit: new(pageSize), Sort: shared.SortDesc})
	if err != nil {
		return false, err
	}
	if loaded {
		if msgs, err = p.catchUp(ctx, c, conn, id); err != nil {
			return false, err
		}
	}
	// The session too, once subscribed: a change between the first fetch (started before
	// the WebSocket, for a quicker header) and the subscription would be missed otherwise.
	// The newer version wins (setSession).
	p.refreshSession(ctx, c, id)
	// The first load shows the newest messages at once and the rest of the page in steps
	// (olderInSteps), as older chunks: the end of the chat, where the reader starts, paints sooner.
	var rest []shared.Message
	if !loaded {
		latest.Messages, rest = firstPaintOf(latest.Messages)
	}
	msgs = append(msgs, latest.Messages...)
	p.apply(ctx, c, func(ctx app.Context) {
		p.show(ctx, msgs)
		if !p.loaded {
			p.loaded, p.hasOlder = true, latest.HasMore
			ctx.Defer(p.land)
		}
		p.live, p.offline, p.err, p.kept = liveOn, false, "", time.Time{}
	})
	if len(rest) > 0 {
		p.apply(ctx, c, func(ctx app.Context) { p.olderInSteps(ctx, c, rest) })
	}

	for env := range conn.Notifications() {
		p.notify(ctx, c, id, env)
	}
	return true, conn.Err()
}

// olderInSteps shows msgs, older than what is shown (newest first), firstPaint at a time:
// each step is rendered in a frame of its own, and the next is dispatched once it is, so
// that the browser paints and handles input between them. A click kept from before the app
// ran (web/conch.js) is answered after the first step, not after mounting the whole page.
// A page of older messages loaded in the meantime is no harm: addOlder skips what is shown.
func (p *SessionPage) olderInSteps(ctx app.Context, c context.Context, msgs []shared.Message) {
	n := min(firstPaint, len(msgs))
	p.tl.addOlder(msgs[:n])
	if rest := msgs[n:]; len(rest) > 0 {
		ctx.Defer(func(ctx app.Context) { p.apply(ctx, c, func(ctx app.Context) { p.olderInSteps(ctx, c, rest) }) })
	}
}

// firstPaintOf splits a page of messages, newest first, into what a first render shows
// and the rest, which goes in later, in steps, as older chunks.
func firstPaintOf(msgs []shared.Message) (first, rest []shared.Message) {
	if len(msgs) > firstPaint {
		return msgs[:firstPaint], msgs[firstPaint:]
	}
	return msgs, nil
}

// catchUp lists every message newer than the newest one shown, page by page.
func (p *SessionPage) catchUp(ctx app.Context, c context.Context, conn *client.Conn, id string) ([]shared.Message, error) {
	lastCh := make(chan string, 1)
	p.apply(ctx, c, func(app.Context) { lastCh <- p.tl.last() })
	var after string
	select {
	case after = <-lastCh:
	case <-c.Done():
		return nil, c.Err()
	}
	var msgs []shared.Message
	for after != "" {
		page, err := conn.List(c, shared.ListRequest{SessionID: id, After: after, Limit: new(shared.MaxPageLimit)})
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, page.Messages...)
		if !page.HasMore || page.Cursor == "" {
			break
		}
		after = page.Cursor
	}
	return msgs, nil
}

func (p *SessionPage) notify(ctx app.Context, c context.Context, id string, env shared.Envelope) {
	switch env.Action {
	case shared.ActionMessageAdded, shared.ActionMessageUpdated:
		var m shared.Message
		if env.Decode(&m) != nil || m.SessionID != id {
			return
		}
		p.apply(ctx, c, func(ctx app.Context) {
			if env.Action == shared.ActionMessageAdded {
				notifyHidden(ctx, m)
			}
			p.show(ctx, []shared.Message{m})
		})
	case shared.ActionSessionUpdated:
		var s shared.Session
		if env.Decode(&s) != nil || s.ID != id {
			return
		}
		p.apply(ctx, c, func(app.Context) { p.setSession(s) })
	case shared.ActionSessionDeleted:
		p.apply(ctx, c, func(app.Context) {
			p.live, p.err = "", "This session was deleted with its task."
			p.cancel() // nothing more will come of it: stop following
		})
	}
}

// show merges messages (the page follows the end of the chat while the reader is there:
// web/conch.js). The prompt on its way is sent once its stored message is among them, whichever way it
// came (the WebSocket, or the POST's answer, which may come long after: it waits until the
// turn is queued).
func (p *SessionPage) show(ctx app.Context, msgs []shared.Message) {
	if len(msgs) == 0 {
		return
	}
	p.tl.merge(msgs...)
	for _, m := range msgs {
		if p.pending != "" && m.Metadata != nil && m.Metadata.ClientMessageID == p.pending {
			p.pending, p.draft, p.forkDraft = "", "", false
			if box := app.Window().GetElementByID("prompt-input"); box.Truthy() {
				box.Set("value", "") // the box's text is its value, which rendering does not reset
			}
			ctx.Defer(scrollToEnd) // the person's own prompt: back to the end, to follow its turn
		}
	}
}

func scrollToEnd(app.Context) {
	w := app.Window()
	w.Call("scrollTo", 0, w.Get("document").Get("documentElement").Get("scrollHeight"))
}

func (p *SessionPage) loadOlder(ctx app.Context, _ app.Event) {
	if p.older || p.ctx == nil {
		return
	}
	p.older = true
	c, id, first := p.ctx, p.id, p.tl.first()
	ctx.Async(func() {
		page, err := api.ListMessages(c, shared.ListRequest{SessionID: id, Before: first, Limit: new(pageSize), Sort: shared.SortDesc})
		p.apply(ctx, c, func(ctx app.Context) {
			p.older = false
			if err != nil {
				p.offline = errors.Is(err, client.ErrUnreachable)
				if !p.offline {
					p.err = "Could not load older messages: " + err.Error()
				}
				return
			}
			p.tl.addOlder(page.Messages)
			p.hasOlder = page.HasMore
			ctx.Defer(p.landOlder)
		})
	})
}

func (p *SessionPage) onInput(ctx app.Context, _ app.Event) {
	p.draft = ctx.JSSrc().Get("value").String()
}

// send posts the prompt box (Enter submits it: see formScript).
func (p *SessionPage) send(ctx app.Context, _ app.Event) {
	content := strings.TrimSpace(p.draft)
	if (content == "" && len(p.files) == 0) || p.pending != "" || p.ctx == nil {
		return
	}
	c, id, cmid, files := p.ctx, p.id, newClientMessageID(), p.files
	p.pending, p.err = cmid, ""
	ctx.Async(func() {
		ids, err := upload(c, id, files)
		var m shared.Message
		if err == nil {
			m, err = api.SendMessage(c, id, content, cmid, ids...)
		}
		p.apply(ctx, c, func(ctx app.Context) {
			for i := range min(len(ids), len(p.files)) { // sent again, they are not uploaded again
				p.files[i].id = ids[i]
			}
			if err == nil {
				p.files = nil
				p.show(ctx, []shared.Message{m})
				return
			}
			if p.pending == cmid { // not stored: the prompt stays in the box
				p.pending = ""
			}
			p.offline = errors.Is(err, client.ErrUnreachable)
			if !p.offline {
				p.err = "Not sent: " + err.Error()
			}
		})
	})
}

// notFound shows that the session does not exist (never was, or was deleted before the
// page opened): there is nothing to load or follow.
func (p *SessionPage) notFound(ctx app.Context) {
	p.live, p.missing, p.err = "", true, ""
	ctx.Page().SetTitle("Session not found · Conch")
}

// stopAgent stops the session's agent; the session stays, and the chat says what the next
// prompt does (the server's status message).
func (p *SessionPage) stopAgent(ctx app.Context, _ app.Event) {
	p.agentAction(ctx, api.StopAgent, "Stop failed: ")
}

// resumeAgent starts a stopped agent that can take the conversation up again, with no
// prompt; the chat says whether it resumed.
func (p *SessionPage) resumeAgent(ctx app.Context, _ app.Event) {
	p.agentAction(ctx, api.Resume, "Resume failed: ")
}

// agentAction runs a stop or a resume of the session's agent, one at a time, and shows
// the session it answers.
func (p *SessionPage) agentAction(ctx app.Context, call func(context.Context, string) (shared.Session, error), failed string) {
	if p.stopping || p.ctx == nil {
		return
	}
	p.stopping, p.err = true, ""
	c, id := p.ctx, p.id
	ctx.Async(func() {
		s, err := call(c, id)
		p.apply(ctx, c, func(app.Context) {
			p.stopping = false
			if err != nil {
				p.offline = errors.Is(err, client.ErrUnreachable)
				if !p.offline {
					p.err = failed + err.Error()
				}
				return
			}
			p.setSession(s)
		})
	})
}

func (p *SessionPage) cancelTurn(ctx app.Context, _ app.Event) {
	c, id := p.ctx, p.id
	ctx.Async(func() {
		if err := api.Cancel(c, id); err != nil && c.Err() == nil {
			p.apply(ctx, c, func(app.Context) { p.err = "Cancel failed: " + err.Error() })
		}
	})
}

// newClientMessageID makes a prompt idempotent: a retried POST returns the first message.
func newClientMessageID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// startNew starts a new session of the task with this session's agent, where this one
// worked (nextCwd), and opens it: the way on from a session that ended.
func (p *SessionPage) startNew(ctx app.Context, _ app.Event) {
	if p.session == nil {
		return
	}
	s := *p.session
	cwd := nextCwd(p.task, s.Cwd)
	p.startAndOpen(ctx, "Could not start a new session: ", func(c context.Context) (shared.Session, string, error) {
		next, err := api.StartSession(c, s.TaskID, s.Agent, cwd)
		return next, "", err
	})
}

// startAndOpen runs start (a new session of the task), one at a time, and opens the
// session it gives; a draft it gives waits for that page's prompt box (fork.go).
func (p *SessionPage) startAndOpen(ctx app.Context, failed string, start func(context.Context) (shared.Session, string, error)) {
	if p.starting || p.ctx == nil {
		return
	}
	p.starting, p.err = true, ""
	c := p.ctx
	ctx.Async(func() {
		next, draft, err := start(c)
		p.apply(ctx, c, func(ctx app.Context) {
			p.starting = false
			if err != nil {
				p.offline = errors.Is(err, client.ErrUnreachable)
				if !p.offline {
					p.err = failed + err.Error()
				}
				return
			}
			if draft != "" {
				ctx.SessionStorage().Set(forkDraftKey(next.ID), draft)
			}
			ctx.Navigate("/sessions/" + next.ID)
		})
	})
}

// nextCwd is the directory to ask for a task's next session that should work where cwd
// (an earlier session's) did: none for a task on a repository, whose sessions all work in
// its worktree (the server refuses another), else cwd.
func nextCwd(task *shared.Task, cwd string) string {
	if task != nil && task.Repo != "" {
		return ""
	}
	return cwd
}

// endedReason says in a sentence why a session that ended (failed or closed) takes no
// more prompts.
func endedReason(s shared.Session) string {
	switch {
	case s.State == shared.SessionFailed:
		return "This session failed (the error is above): its agent cannot take another prompt here."
	case s.Error != "":
		return "This session was closed: " + strings.TrimSuffix(s.Error, ".") + ". It takes no more prompts."
	}
	return "This session was closed when its server stopped. It takes no more prompts."
}

// Render draws the page. On the server (prerender) it is the empty shell of a chat.
func (p *SessionPage) Render() app.UI {
	state := shared.SessionState("")
	title := "Session"
	stopped, resumable := false, false
	if s := p.session; s != nil {
		state, stopped, resumable = s.State, s.Stopped, s.Resumable
	}
	if p.task != nil {
		title = shared.Visible(p.task.Title)
	}
	if p.missing {
		return app.Div().Class("page", "session-page").Body(
			app.Header().Class("bar").Body(app.A().Class("back").Href("/").Text("← Tasks"), app.H1().Text("Session not found")),
			app.Main().Class("chat").Body(app.P().Class("empty").Text("There is no session "+p.id+
				": it never existed, or it was deleted with its task. The task list has the sessions there are.")),
		)
	}
	mayEdit := ""
	if p.readOnly == "" {
		mayEdit = "may-edit" // shows Fork from here (fork.go)
	}
	return app.Div().Class("page", "session-page", mayEdit).Body(
		app.Header().Class("bar").Body(
			app.A().Class("back").Href("/").Text("← Tasks"),
			app.H1().Text(title),
			app.If(state != "", func() app.UI {
				return app.Span().Class("badge", "state-"+string(state)).Text(string(state))
			}),
			app.If(p.loaded && p.tl.len() > 0, func() app.UI {
				return app.A().Class("replay-link").Href("/sessions/" + p.id + "/replay").Title("Step through this conversation, read-only").Text("Replay")
			}),
			app.If(stopped, func() app.UI {
				return app.Span().Class("badge", "agent-stopped").Title("The next prompt starts the agent again").Text("agent stopped")
			}),
			app.If(stopped && resumable && p.readOnly == "", func() app.UI {
				return disabled(app.Button().Type("button").Class("secondary", "resume"), p.stopping).OnClick(p.resumeAgent).
					Title("Start the agent again in the same directory; it resumes this conversation").
					Text(map[bool]string{true: "Resuming…", false: "Resume"}[p.stopping])
			}).ElseIf(stopped && state == shared.SessionReady, func() app.UI {
				return app.Span().Class("no-resume").Text(shared.NoResume)
			}),
			app.If(p.readOnly == "", p.modeSelect),
			app.If(p.readOnly == "", p.configControls),
			usageView(p.session),
			app.If(p.session != nil && !state.Ended() && !stopped, func() app.UI {
				// A page of its own (web/terminal.html, xterm.js), in a tab of its own: the
				// person watches the chat and types in the terminal side by side.
				return app.A().Class("terminal-link").Href("/web/terminal.html?session_id=" + p.id).Target("_blank").Rel("noopener").
					Title("A shell in the session's directory and sandbox; its commands are recorded here").Text("Terminal")
			}),
			app.If(p.live != "", func() app.UI {
				return app.Span().Class("live", "live-"+map[bool]string{true: "on", false: "off"}[p.live == liveOn]).Text(p.live)
			}),
			sessionContext(p.session, p.task),
			sandboxView(p.session),
		),
		&Notices{Offline: p.offline, Kept: p.kept},
		// What comes and goes sits in boxes that stay: go-app matches children by position,
		// so a banner appearing before the chat would replace the chat, and every open
		// output in it would close and forget its search.
		app.Div().Class("alerts").Body(
			app.If(p.session != nil && p.session.Error != "" && state != shared.SessionClosed, func() app.UI {
				return errorAlert(p.session.Error) // a closed session's reason is where the prompt box was (ended)
			}),
			app.If(p.err != "", func() app.UI { return app.P().Class("alert").Text(p.err) }),
		),
		app.Main().Class("chat").Body(
			app.Div().Class("chat-start").Body(
				app.If(p.hasOlder, func() app.UI {
					return disabled(app.Button().Type("button").Class("older"), p.older).OnClick(p.loadOlder).
						Text(map[bool]string{true: "Loading…", false: "Load older messages"}[p.older])
				}),
				app.If(!p.loaded && !p.offline, func() app.UI {
					return app.P().Class("empty").Text("Loading messages…")
				}),
				app.If(p.loaded && p.tl.len() == 0, func() app.UI {
					if p.forkDraft {
						return app.P().Class("empty").Text(forkHint)
					}
					return app.P().Class("empty").Text(emptyHint(p.session))
				}),
				app.If(p.bootHTML != "", func() app.UI { return app.Raw(p.bootHTML) }),
			),
			app.Div().Class("messages").Role("log").Aria("label", "Conversation").Body(
				&Chunk{SessionID: p.id, Cwd: p.cwd(), Chunks: views(p.tl.older)},
				app.Range(p.tl.newer).Slice(func(i int) app.UI {
					return &Chunk{SessionID: p.id, Cwd: p.cwd(), Chunks: views(p.tl.newer[i : i+1])}
				}),
			),
		),
		p.promptForm(state, stopped, resumable),
	)
}

// promptForm is the prompt box with the turn's and the agent's controls; for a person who
// may not change the session, the line that says why.
func (p *SessionPage) promptForm(state shared.SessionState, stopped, resumable bool) app.UI {
	jump := app.Button().Type("button").Class("jump").OnClick(func(ctx app.Context, _ app.Event) { scrollToEnd(ctx) }).Text("↓ Jump to newest")
	if state.Ended() {
		return app.Form().Class("prompt", "ended").Body(jump,
			app.P().Role("status").Text(endedReason(*p.session)),
			app.If(p.readOnly == "", func() app.UI {
				return disabled(app.Button().Type("button").Class("start-new"), p.starting).OnClick(p.startNew).
					Title(attrText("A new session of this task, with the " + p.session.Agent + " agent, " + p.where())).
					Text(map[bool]string{true: "Starting…", false: "Start a new session"}[p.starting])
			}),
		)
	}
	if p.readOnly != "" {
		return app.Form().Class("prompt", "read-only").Body(jump, app.P().Role("status").Text(p.readOnly))
	}
	return app.Form().Class("prompt").OnSubmit(p.send).
		OnDragOver(func(_ app.Context, e app.Event) { e.PreventDefault() }).OnDrop(p.onDrop).Body(
		jump,
		app.Label().For("prompt-input").Class("sr-only").Text("Prompt"),
		app.Textarea().ID("prompt-input").Rows(map[bool]int{true: 10, false: 2}[p.forkDraft]).Placeholder(promptHint(p.session)).
			Text(p.draft).OnInput(p.onInput).OnPaste(p.onPaste),
		p.commandList(),
		p.attachRow(),
		app.Div().Class("prompt-actions").Body(
			p.attachButton(),
			app.If(state == shared.SessionRunning, func() app.UI {
				return app.Button().Type("button").Class("secondary", "cancel-turn").OnClick(p.cancelTurn).Text("Cancel turn")
			}),
			app.If((state == shared.SessionReady || state == shared.SessionRunning) && !stopped, func() app.UI {
				return disabled(app.Button().Type("button").Class("secondary"), p.stopping).OnClick(p.stopAgent).
					Title(map[bool]string{true: "End the agent's process; the next prompt starts it again, and it resumes this conversation",
						false: "End the agent's process; the next prompt starts it again, without the earlier turns"}[resumable]).
					Text(map[bool]string{true: "Stopping…", false: "Stop agent"}[p.stopping])
			}),
			disabled(app.Button().Type("submit"), p.pending != "").
				Text(map[bool]string{true: "Sending…", false: "Send"}[p.pending != ""]),
		),
	)
}

// usageView is the agent's latest usage report on the session bar: a gauge of its
// context window and what the session cost. The numbers are the agent's, checked by the
// store (bounded, a three-letter currency); nil when it sent none.
func usageView(s *shared.Session) app.UI {
	if s == nil || s.Usage == nil {
		return nil
	}
	u := s.Usage
	var cost []shared.Cost
	if u.Cost != nil {
		cost = []shared.Cost{*u.Cost}
	}
	return app.Span().Class("usage").Body(
		app.If(u.ContextSize > 0, func() app.UI {
			label := fmt.Sprintf("Context window: %s of %s tokens", tokensLabel(u.ContextUsed), tokensLabel(u.ContextSize))
			return app.Span().Class("context").Title(label).Body(
				app.Meter().Min(0).Max(float64(u.ContextSize)).High(0.8*float64(u.ContextSize)).Value(float64(min(u.ContextUsed, u.ContextSize))).Aria("label", label),
				app.Span().Text(fmt.Sprintf("%d%%", min(100, u.ContextUsed*100/u.ContextSize))),
			)
		}),
		app.If(len(cost) > 0, func() app.UI {
			return app.Span().Class("cost").Title("What the agent reports this session cost").Text(costLabel(cost))
		}),
	)
}

// noSandbox says what a session without a sandbox means.
const noSandbox = "The server runs with --no-sandbox: the agent and its commands can reach everything the server's user can"

// sandboxView is what the session's agent and its commands may reach, as it was when the
// agent last started (shared.Sandbox), on a line of its own at the foot of the session
// bar. A narrow screen cuts the directories short before the network; the whole line is in
// the DOM, and in its title with the private home. Nothing for an agent not started since
// sessions had sandboxes.
func sandboxView(s *shared.Session) app.UI {
	if s == nil || s.Sandbox == nil {
		return nil
	}
	if s.Sandbox.Off {
		return app.Span().Class("badge", "attention", "sandbox-off").Title(noSandbox).Text("Not sandboxed")
	}
	dirs, network, title := sandboxLabel(*s.Sandbox)
	return app.Span().Class("sandbox").Title(attrText(title)).Body(
		app.Span().Text(dirs),
		// A no-break space: a space that starts a line's text is not drawn.
		app.Span().Class("sandbox-network").Text("\u00a0· "+network),
	)
}

// sandboxLabel renders a sandbox that is on: the line "Sandboxed: /work/repo, /data ·
// network: all" in its two parts, the directories (those it may only read too, when
// there are) and the network, and the title: the line and the private home. The session
// was marked on its way in (Session.Visible): a directory may be named anything.
func sandboxLabel(b shared.Sandbox) (dirs, network, title string) {
	list := func(items []string, none string) string {
		if len(items) == 0 {
			return none
		}
		return strings.Join(items, ", ")
	}
	network = "network: " + b.Network
	if b.Network == shared.NetworkHosts {
		network = "network: " + list(b.Hosts, "no host")
	}
	dirs = "Sandboxed: " + list(b.Dirs, "no directory")
	if len(b.Read) > 0 {
		dirs += " · read-only: " + list(b.Read, "")
	}
	title = dirs + " · " + network
	if b.Home != "" {
		title += "\nhome: " + b.Home
	}
	return dirs, network, title + "\nBesides these, the agent and its commands see the system read-only, and no other file on this machine."
}

// tokensLabel renders a token count short: 950, 52k, 1.2M.
func tokensLabel(n int64) string {
	switch {
	case n < 1000:
		return strconv.FormatInt(n, 10)
	case n < 1_000_000:
		return strconv.FormatInt((n+500)/1000, 10) + "k"
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1e6), ".0") + "M"
}

// costLabel renders costs per currency: "0.25 USD", "1.20 EUR + 0.03 USD"; a cost below a
// cent keeps four decimals.
func costLabel(costs []shared.Cost) string {
	parts := make([]string, 0, len(costs))
	for _, c := range costs {
		format := "%.2f %s"
		if c.Amount > 0 && c.Amount < 0.01 {
			format = "%.4f %s"
		}
		parts = append(parts, fmt.Sprintf(format, c.Amount, c.Currency))
	}
	return strings.Join(parts, " + ")
}

// cwd is the session's directory, once the session is known.
func (p *SessionPage) cwd() string {
	if p.session == nil {
		return ""
	}
	return p.session.Cwd
}

// sessionContext is the header's line under the title: the session's agent, where it
// works (its task's branch, or its directory) and, for a task with a worktree, a link to
// the task's Changes.
func sessionContext(s *shared.Session, task *shared.Task) app.UI {
	if s == nil {
		return nil
	}
	return app.Div().Class("session-context").Body(
		app.Span().Class("session-agent").Text(s.Agent+" session"),
		app.If(task != nil && task.Worktree != "", func() app.UI {
			return app.Span().Class("where").Title(attrText("Worktree: "+shared.Visible(task.Worktree))).Body(
				app.Text("on branch "), app.Code().Text(shared.Visible(task.Branch)))
		}).Else(func() app.UI {
			return app.Span().Class("where").Title(attrText("Working directory: "+s.Cwd)).Body(
				app.Text("in "), app.Code().Text(s.Cwd))
		}),
		app.If(task != nil && task.Worktree != "", func() app.UI {
			return app.A().Class("changes-link").Href("/tasks/" + task.ID + "/changes").Text("Changes")
		}),
	)
}

// where says where a new session of the task would work (nextCwd), for the Start a new
// session button.
func (p *SessionPage) where() string {
	if p.task != nil && p.task.Repo != "" {
		return "in the task's worktree"
	}
	return "in " + p.cwd()
}

// promptHint is the prompt box's placeholder in the words of the session's agent.
func promptHint(s *shared.Session) string {
	if s == nil {
		return "A prompt"
	}
	if s.Agent == "shell" {
		return "A shell command"
	}
	return "A prompt for the agent"
}

// emptyHint invites the first prompt in the words of the session's agent: the built-in
// shell agent takes a command, any other agent a request; a session that ended takes none.
func emptyHint(s *shared.Session) string {
	if s != nil && s.State.Ended() {
		return "This session has no messages."
	}
	if s == nil || s.Agent == "shell" {
		return "No messages yet. Type a shell command below."
	}
	return "No messages yet. Tell the agent what to do below."
}
