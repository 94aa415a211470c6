package ui

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/app/client"
	"conch/shared"
)

// SessionPage is /sessions/{id}: one session's chat with live updates. It owns the
// session shown and who may change it (access.go), follows it (follow.go) and says how
// that goes (status.go). It composes pieces that own the rest: the bar (header.go, no
// state of its own), the chat (conversation.go), the prompt box (prompt.go, attach.go)
// and the agent's controls (controls.go, modes.go). A piece sees the page as a
// sessionHost; the page tells a piece what it takes through the piece's methods
// (TestPieceBoundaries).
type SessionPage struct {
	app.Compo

	id       string
	session  *shared.Session
	task     *shared.Task // the session's task, once known: the header's title, branch and Changes
	missing  bool         // the session does not exist
	readOnly string       // why the person may not change this session, when they may not (access.go)

	live    string    // the live indicator: liveConnecting, liveOn, liveReconnecting; "" with nothing to follow
	offline bool      // the server cannot be reached
	err     string    // the alert line
	kept    time.Time // when the server read the messages shown, until the app has listed them itself

	conv     conversation
	prompt   promptBox
	controls agentControls

	ctx    context.Context // this page's work; cancelled on dismount or when the id changes
	cancel context.CancelFunc
}

// sessionHost is the page as its pieces see it: the state it passes down, read when a
// piece renders and when it handles an event (so a handler drawn for an earlier session
// acts on the session shown now), and where a piece reports what came of its requests.
type sessionHost interface {
	in() sessionIn
	say(text string)                             // the page's alert line ("" clears it)
	fail(prefix string, err error)               // the offline notice, or the alert line
	setSession(shared.Session)                   // a version of the session a request answered
	show(ctx app.Context, msgs []shared.Message) // messages a request answered
}

// sessionIn is the page's state its pieces read.
type sessionIn struct {
	id       string
	session  *shared.Session // nil until known
	task     *shared.Task    // nil until known
	readOnly string          // why the person may not change the session, "" when they may
	c        context.Context // the page's work (nil before it runs): cancelled when it shows another session
}

// cwd is the session's directory, once the session is known.
func (in sessionIn) cwd() string {
	if in.session == nil {
		return ""
	}
	return in.session.Cwd
}

func (p *SessionPage) in() sessionIn {
	return sessionIn{id: p.id, session: p.session, task: p.task, readOnly: p.readOnly, c: p.ctx}
}

// say puts text on the alert line.
func (p *SessionPage) say(text string) { p.err = text }

// fail reports a request that failed: the offline notice when the server cannot be
// reached, else the alert line with prefix and the error.
func (p *SessionPage) fail(prefix string, err error) {
	p.offline = errors.Is(err, client.ErrUnreachable)
	if !p.offline {
		p.err = prefix + err.Error()
	}
}

func sessionIDOf(path string) string {
	return strings.TrimPrefix(path, "/sessions/")
}

// newSessionPage is the route's page. The first one in the browser starts from the boot
// payload of the page the server sent, so its first render already shows the messages
// that the prerendered page shows.
func newSessionPage() app.Composer {
	p := &SessionPage{}
	p.conv, p.prompt, p.controls = conversation{host: p}, promptBox{host: p}, agentControls{host: p}
	if b := takeBoot(); b != nil {
		p.boot(*b)
	}
	return p
}

// boot shows what the server read when it sent the page (see conversation.boot).
func (p *SessionPage) boot(b shared.Boot) {
	p.id = b.Session.ID
	p.setSession(b.Session)
	p.task = b.Task
	p.conv.boot(b.Messages)
	p.kept = b.At
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
		p.session, p.task, p.kept = nil, nil, time.Time{}
	}
	p.conv.begin(booted)
	p.live, p.offline, p.err = liveConnecting, false, ""
	p.prompt.reset()
	p.controls.reset()
	p.id, p.missing, p.readOnly = id, false, ""
	ctx.SetState(stateReadOnly, "")
	p.prompt.takeForkDraft(ctx, id)
	p.ctx, p.cancel = context.WithCancel(context.Background())
	if booted {
		ctx.Defer(p.conv.land)
		p.conv.paintBoot(ctx, p.ctx)
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
		p.conv.carry(bootScript(b))
	case shared.ErrorCode(err) == shared.CodeNotFound:
		p.err = "This session does not exist."
	default: // the app lists the messages itself once it runs
		app.Log("prerendering session", id, "without its messages:", err)
	}
}

// dispatchIn runs f on the UI goroutine unless c, the work of an earlier session shown by
// the page, has been cancelled meanwhile: late answers never land in another session.
func dispatchIn(ctx app.Context, c context.Context, f func(app.Context)) {
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
			p.prompt.fork(ctx, id)
		}
	})
	ctx.Handle(actionRetrySignIn, func(ctx app.Context, _ app.Action) { p.controls.agentAction(ctx, api.Resume, "Retry failed: ") })
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

// show merges messages (the page follows the end of the chat while the reader is there:
// web/conch.js), and hands them to the prompt box, whose prompt on its way may be among
// them.
func (p *SessionPage) show(ctx app.Context, msgs []shared.Message) {
	if len(msgs) == 0 {
		return
	}
	p.conv.merge(msgs)
	p.prompt.stored(ctx, msgs)
}

// notFound shows that the session does not exist (never was, or was deleted before the
// page opened): there is nothing to load or follow.
func (p *SessionPage) notFound(ctx app.Context) {
	p.live, p.missing, p.err = "", true, ""
	ctx.Page().SetTitle("Session not found · Conch")
}

// Render draws the page. On the server (prerender) it is the empty shell of a chat.
func (p *SessionPage) Render() app.UI {
	if p.missing {
		return app.Div().Class("page", "session-page").Body(
			app.Header().Class("bar").Body(app.A().Class("back").Href("/").Text("← Tasks"), app.H1().Text("Session not found")),
			app.Main().Class("chat").Body(app.P().Class("empty").Text("There is no session "+p.id+
				": it never existed, or it was deleted with its task. The task list has the sessions there are.")),
		)
	}
	in := p.in()
	body := []app.UI{sessionBar(in, barParts{replay: p.conv.shown(), controls: p.controls.barViews(), live: liveView(p.live)})}
	body = append(body, statusViews(p.offline, p.kept, p.session, p.err)...)
	mayEdit := ""
	if p.readOnly == "" {
		mayEdit = "may-edit" // shows Fork from here (fork.go)
	}
	return app.Div().Class("page", "session-page", mayEdit).Body(append(body,
		p.conv.render(p.offline, p.prompt.holdsForkDraft()),
		p.prompt.render(p.controls.turnViews()),
	)...)
}
