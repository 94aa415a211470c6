package ui

import (
	"context"
	"strconv"
	"strings"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/shared"
)

// ReplayPage is /sessions/{id}/replay: a session's conversation stepped through in time
// order, one message a step (buttons, the slider, or the arrow keys), read-only. It shows
// the messages up to the step, the step's last; a command's output is fetched only when
// its disclosure is opened, as in the chat. Messages are listed a page at a time, as far
// as the step needs.
type ReplayPage struct {
	app.Compo

	id      string
	cwd     string // the session's directory, which paths are shown relative to
	task    *shared.Task
	msgs    []shared.Message // listed so far, oldest first
	total   int64
	cursor  string // after which the next page starts, while there is more
	step    int    // the index in msgs of the message shown last
	want    int    // the step asked for, which may wait for its page
	loading bool
	missing bool
	err     string

	ctx      context.Context // cancelled on dismount
	cancel   context.CancelFunc
	stopKeys func()
}

// replayWindow is how many messages before the step stay on screen.
const replayWindow = 40

// replayPage is how many messages one list asks for.
const replayPage = 200

func newReplayPage() app.Composer { return &ReplayPage{} }

// OnNav lists the session's first page, in the browser only (OnNav runs in the prerender too).
func (p *ReplayPage) OnNav(ctx app.Context) {
	p.id = sessionIDOf(strings.TrimSuffix(ctx.Page().URL().Path, "/replay"))
	ctx.Page().SetTitle("Replay · Conch")
	if app.IsServer {
		return
	}
	if p.cancel != nil { // the listing of the page before
		p.cancel()
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.msgs, p.cursor, p.total, p.step, p.want, p.missing, p.err = nil, "", 0, 0, 0, false, ""
	// The rows answer nothing here.
	ctx.SetState(stateReadOnly, "This is a replay: it changes nothing.")
	c, id := p.ctx, p.id
	ctx.Async(func() {
		sess, err := api.GetSession(c, id)
		var task shared.Task
		if err == nil {
			task, err = api.GetTask(c, sess.TaskID)
		}
		ctx.Dispatch(func(ctx app.Context) {
			if c.Err() != nil {
				return
			}
			switch {
			case shared.ErrorCode(err) == shared.CodeNotFound:
				p.missing = true
			case err != nil:
				p.err = whyNot("Could not open the session", err)
			default:
				p.task, p.cwd = &task, sess.Cwd
				ctx.Page().SetTitle("Replay · " + shared.Visible(task.Title) + " · Conch")
			}
		})
	})
	p.load(ctx)
}

// OnMount steps with the arrow keys (and Home, End), unless a field has the focus.
func (p *ReplayPage) OnMount(ctx app.Context) {
	keys := app.FuncOf(func(_ app.Value, args []app.Value) any {
		e := args[0]
		if tag := e.Get("target").Get("tagName").String(); tag == "INPUT" || tag == "TEXTAREA" || tag == "SELECT" ||
			e.Get("ctrlKey").Bool() || e.Get("metaKey").Bool() || e.Get("altKey").Bool() {
			return nil
		}
		step := map[string]func() int{
			"ArrowRight": func() int { return p.want + 1 }, "ArrowLeft": func() int { return p.want - 1 },
			"Home": func() int { return 0 }, "End": func() int { return int(p.total) - 1 },
		}[e.Get("key").String()]
		if step != nil {
			e.Call("preventDefault")
			ctx.Dispatch(func(ctx app.Context) { p.goTo(ctx, step()) })
		}
		return nil
	})
	app.Window().Call("addEventListener", "keydown", keys)
	p.stopKeys = func() {
		app.Window().Call("removeEventListener", "keydown", keys)
		keys.Release()
	}
}

// OnDismount drops what is being listed, and the keys.
func (p *ReplayPage) OnDismount() {
	if p.cancel != nil {
		p.cancel()
	}
	if p.stopKeys != nil {
		p.stopKeys()
		p.stopKeys = nil
	}
}

// goTo asks for step i (clamped to the session's messages), listing what it needs.
func (p *ReplayPage) goTo(ctx app.Context, i int) {
	p.want = max(0, min(i, int(p.total)-1))
	if p.want < len(p.msgs) {
		p.step = p.want
		ctx.Defer(p.scrollToStep)
		return
	}
	p.load(ctx)
}

// load lists the next page, and on until the step asked for is listed.
func (p *ReplayPage) load(ctx app.Context) {
	if p.loading {
		return
	}
	p.loading = true
	c, q := p.ctx, shared.ListRequest{SessionID: p.id, After: p.cursor, Limit: new(replayPage)}
	ctx.Async(func() {
		page, err := api.ListMessages(c, q)
		ctx.Dispatch(func(ctx app.Context) {
			if c.Err() != nil {
				return
			}
			p.loading = false
			if err != nil {
				if shared.ErrorCode(err) == shared.CodeNotFound {
					p.missing = true
				} else {
					p.err = whyNot("Could not list the messages", err)
				}
				return
			}
			p.msgs, p.total = append(p.msgs, page.Messages...), page.Total
			p.cursor = page.Cursor
			if !page.HasMore {
				p.total = int64(len(p.msgs)) // what there is now, whatever was counted
			}
			switch {
			case p.want < len(p.msgs):
				p.step = p.want
				ctx.Defer(p.scrollToStep)
			case page.HasMore:
				p.load(ctx)
			default:
				p.want, p.step = max(len(p.msgs)-1, 0), max(len(p.msgs)-1, 0)
			}
		})
	})
}

// scrollToStep brings the step's message into view.
func (p *ReplayPage) scrollToStep(app.Context) {
	if el := app.Window().GetElementByID("replay-step"); el.Truthy() {
		el.Call("scrollIntoView", map[string]any{"block": "nearest"})
	}
}

func (p *ReplayPage) onSlide(ctx app.Context, e app.Event) {
	if n, err := strconv.Atoi(ctx.JSSrc().Get("value").String()); err == nil {
		p.goTo(ctx, n-1)
	}
}

// Render draws the controls, then the messages up to the step.
func (p *ReplayPage) Render() app.UI {
	back := app.A().Class("back").Href("/sessions/" + p.id).Text("← Session")
	if p.missing {
		return app.Div().Class("page", "replay-page").Body(
			app.Header().Class("bar").Body(app.A().Class("back").Href("/").Text("← Tasks"), app.H1().Text("Session not found")),
			app.Main().Class("chat").Body(app.P().Class("empty").Text("There is no session "+p.id+" to replay.")),
		)
	}
	title := "Replay"
	var export app.UI = app.Span()
	if p.task != nil {
		title = "Replay · " + shared.Visible(p.task.Title)
		export = app.A().Class("export").Href(api.ExportURL(p.task.ID, true)).Attr("download", "").
			Title("The task as an archive, with secret-like strings replaced").Text("Export (redacted)")
	}
	var shown []shared.Message
	if len(p.msgs) > 0 {
		shown = p.msgs[max(0, p.step+1-replayWindow) : p.step+1]
	}
	at, when := "", ""
	if len(shown) > 0 {
		at = "Message " + count(p.step+1) + " of " + count(int(p.total))
		when = clockLabel(shown[len(shown)-1].CreatedAt)
	}
	return app.Div().Class("page", "replay-page").Body(
		app.Header().Class("bar").Body(
			back,
			app.H1().Text(title),
			app.Span().Class("badge").Text("read-only"),
			export,
		),
		app.Div().Class("replay-controls").Body(
			app.Div().Class("replay-buttons").Body(
				disabled(app.Button().Type("button").Class("secondary").Title("First message (Home)").Aria("label", "First message"), p.step == 0).
					OnClick(func(ctx app.Context, _ app.Event) { p.goTo(ctx, 0) }).Text("«"),
				disabled(app.Button().Type("button").Class("secondary").Title("Previous message (←)").Aria("label", "Previous message"), p.step == 0).
					OnClick(func(ctx app.Context, _ app.Event) { p.goTo(ctx, p.want-1) }).
					Body(app.Text("◀"), app.Span().Class("step-word").Text(" Previous")),
				app.Span().Class("replay-at").Aria("live", "polite").Body(
					app.Span().Text(at),
					app.If(when != "", func() app.UI { return app.Span().Class("replay-when").Text(when) }),
				),
				disabled(app.Button().Type("button").Class("secondary").Title("Next message (→)").Aria("label", "Next message"), p.step+1 >= int(p.total)).
					OnClick(func(ctx app.Context, _ app.Event) { p.goTo(ctx, p.want+1) }).
					Body(app.Span().Class("step-word").Text("Next "), app.Text("▶")),
				disabled(app.Button().Type("button").Class("secondary").Title("Last message (End)").Aria("label", "Last message"), p.step+1 >= int(p.total)).
					OnClick(func(ctx app.Context, _ app.Event) { p.goTo(ctx, int(p.total)-1) }).Text("»"),
			),
			app.Input().Type("range").Class("replay-slider").Min(1).Max(max(p.total, 1)).Value(p.step+1).
				Aria("label", "Message").OnChange(p.onSlide),
		),
		app.Div().Class("alerts").Body(
			app.If(p.err != "", func() app.UI { return app.P().Class("alert").Text(p.err) }),
		),
		app.Main().Class("chat").Body(
			app.If(p.loading && len(p.msgs) <= p.want, func() app.UI { return app.P().Class("empty").Text("Loading messages…") }),
			app.If(!p.loading && p.total == 0 && p.err == "", func() app.UI { return app.P().Class("empty").Text("This session has no messages.") }),
			app.If(p.step+1 > replayWindow, func() app.UI {
				return app.P().Class("empty", "replay-earlier").Text(count(p.step+1-replayWindow) + " earlier messages are before these.")
			}),
			app.Div().Class("messages").Role("log").Aria("label", "Conversation up to this message").Body(
				app.Range(shown).Slice(func(i int) app.UI {
					return &ReplayRow{SessionID: p.id, Cwd: p.cwd, Msg: shown[i], Current: i == len(shown)-1}
				}),
			),
		),
	)
}

// ReplayRow is one message of a replay, marked when it is the step's. The window of
// messages slides as the replay steps: its identity is its message's, so that a row's own
// state (an open output, a diff) never moves to another message.
type ReplayRow struct {
	app.Compo

	SessionID, Cwd string
	Msg            shared.Message
	Current        bool
}

// CompoID binds the row to its message.
func (r *ReplayRow) CompoID() string { return r.Msg.ID }

func (r *ReplayRow) Render() app.UI {
	row := app.Div().Class("replay-row").Body(renderMessage(r.SessionID, r.Cwd, r.Msg))
	if r.Current {
		row = row.ID("replay-step").Class("replay-current")
	}
	return row
}

// count writes n with thousands separated: 10,000.
func count(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
