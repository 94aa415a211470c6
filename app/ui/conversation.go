package ui

import (
	"context"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/shared"
)

// pageSize is how many messages the first load and each "load older" bring: as many as
// the page's boot carries.
const pageSize = shared.BootMessages

// firstPaint is how many of the newest messages the first load renders before the rest,
// and how many older ones each later step renders (olderInSteps).
const firstPaint = 20

// conversation is the session page's chat: its messages (the timeline), the first page
// and the older ones loaded on demand, and landing at a message a link names (search.go).
// The rows themselves are drawn by Chunk (rows.go).
type conversation struct {
	host sessionHost // the page: its state, passed down, and where outcomes go

	tl       timeline
	loaded   bool // the first page has arrived
	hasOlder bool
	older    bool             // loading older messages
	bootHTML string           // prerender only: the boot payload the page carries (bootScript)
	bootRest []shared.Message // of the boot, what the app shows a frame after the newest
}

// boot shows the newest page of messages the server read when it sent the page. The
// prerender renders it all; the app renders the newest firstPaint messages first and the
// rest in steps (see paintBoot), so that it takes over the page sooner.
func (v *conversation) boot(page shared.MessagePage) {
	msgs := page.Messages
	if app.IsClient {
		msgs, v.bootRest = firstPaintOf(msgs)
	}
	v.tl.merge(msgs...)
	v.loaded, v.hasOlder = true, page.HasMore
}

// begin starts a conversation the page follows: an empty one, unless the page shows what
// came with it (booted).
func (v *conversation) begin(booted bool) {
	if !booted {
		*v = conversation{host: v.host}
	}
	v.older = false
}

// paintBoot renders the rest of the boot, in steps, while c lasts.
func (v *conversation) paintBoot(ctx app.Context, c context.Context) {
	rest := v.bootRest
	v.bootRest = nil
	v.paint(ctx, c, rest)
}

// paint renders msgs, older than what is shown (newest first), in steps (olderInSteps),
// while c lasts.
func (v *conversation) paint(ctx app.Context, c context.Context, msgs []shared.Message) {
	if len(msgs) > 0 {
		dispatchIn(ctx, c, func(ctx app.Context) { v.olderInSteps(ctx, c, msgs) })
	}
}

// carry is the boot the prerendered page carries for the app (bootScript).
func (v *conversation) carry(html string) { v.bootHTML = html }

// merge adds or replaces messages (see timeline.merge).
func (v *conversation) merge(msgs []shared.Message) { v.tl.merge(msgs...) }

// last is the id of the newest message shown, "" when there is none.
func (v *conversation) last() string { return v.tl.last() }

// listed takes the first listing of the conversation (hasMore: older messages are there
// to load): the page lands (land) once it is drawn. Later listings change nothing here.
func (v *conversation) listed(ctx app.Context, hasMore bool) {
	if !v.loaded {
		v.loaded, v.hasOlder = true, hasMore
		ctx.Defer(v.land)
	}
}

// shown reports whether the conversation has messages, listed.
func (v *conversation) shown() bool { return v.loaded && v.tl.len() > 0 }

// olderInSteps shows msgs, older than what is shown (newest first), firstPaint at a time:
// each step is rendered in a frame of its own, and the next is dispatched once it is, so
// that the browser paints and handles input between them. A click kept from before the app
// ran (web/conch.js) is answered after the first step, not after mounting the whole page.
// A page of older messages loaded in the meantime is no harm: addOlder skips what is shown.
func (v *conversation) olderInSteps(ctx app.Context, c context.Context, msgs []shared.Message) {
	n := min(firstPaint, len(msgs))
	v.tl.addOlder(msgs[:n])
	if rest := msgs[n:]; len(rest) > 0 {
		ctx.Defer(func(ctx app.Context) { v.paint(ctx, c, rest) })
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

func (v *conversation) loadOlder(ctx app.Context, _ app.Event) {
	in := v.host.in()
	if v.older || in.c == nil {
		return
	}
	v.older = true
	c, id, first := in.c, in.id, v.tl.first()
	ctx.Async(func() {
		page, err := api.ListMessages(c, shared.ListRequest{SessionID: id, Before: first, Limit: new(pageSize), Sort: shared.SortDesc})
		dispatchIn(ctx, c, func(ctx app.Context) {
			v.older = false
			if err != nil {
				v.host.fail("Could not load older messages: ", err)
				return
			}
			v.tl.addOlder(page.Messages)
			v.hasOlder = page.HasMore
			ctx.Defer(v.landOlder)
		})
	})
}

func scrollToEnd(app.Context) {
	w := app.Window()
	w.Call("scrollTo", 0, w.Get("document").Get("documentElement").Get("scrollHeight"))
}

// render draws the chat (offline: the server cannot be reached, so nothing is loading;
// forkDraft: the prompt box holds a fork's summary, which an empty chat explains).
func (v *conversation) render(offline, forkDraft bool) app.UI {
	in := v.host.in()
	return app.Main().Class("chat").Body(
		app.Div().Class("chat-start").Body(
			app.If(v.hasOlder, func() app.UI {
				return disabled(app.Button().Type("button").Class("older"), v.older).OnClick(v.loadOlder).
					Text(map[bool]string{true: "Loading…", false: "Load older messages"}[v.older])
			}),
			app.If(!v.loaded && !offline, func() app.UI {
				return app.P().Class("empty").Text("Loading messages…")
			}),
			app.If(v.loaded && v.tl.len() == 0, func() app.UI {
				if forkDraft {
					return app.P().Class("empty").Text(forkHint)
				}
				return app.P().Class("empty").Text(emptyHint(in.session))
			}),
			app.If(v.bootHTML != "", func() app.UI { return app.Raw(v.bootHTML) }),
		),
		app.Div().Class("messages").Role("log").Aria("label", "Conversation").Body(
			&Chunk{SessionID: in.id, Cwd: in.cwd(), Chunks: views(v.tl.older)},
			app.Range(v.tl.newer).Slice(func(i int) app.UI {
				return &Chunk{SessionID: in.id, Cwd: in.cwd(), Chunks: views(v.tl.newer[i : i+1])}
			}),
		),
	)
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
