package ui

import (
	"context"
	"net/url"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/shared"
)

// "Fork from here" on an agent's reply, and an agent's request to sign in: rows that ask
// the session page (SessionPage.OnMount) to act, through the prompt box (Fork from here:
// its startAndOpen, one start at a time) and the agent's controls (Retry).

const (
	// actionFork carries the id of the reply to fork from.
	actionFork = "conch/fork"
	// actionRetrySignIn asks for the agent to start again after a person signed in.
	actionRetrySignIn = "conch/retry-sign-in"
)

// forkDraftKey is where, in the tab's session storage, a fork's draft first prompt waits
// for the new session's page, which puts it in the prompt box (unsent) and drops it.
func forkDraftKey(sessionID string) string { return "conch.fork-draft." + sessionID }

// replyRow is an agent's reply, with "Fork from here" (shown to those who may change the
// session: .may-edit).
func replyRow(m shared.Message) app.UI {
	var tree []shared.MarkdownNode
	if m.Metadata != nil {
		tree = m.Metadata.Markdown
	}
	id := m.ID
	// The button is beside the reply, not in it: the reply's text is the agent's alone.
	return app.Div().Class("reply").Body(
		app.Div().Class("msg", "agent").DataSet("message-id", m.ID).Body(markdown(m.Content, tree, "text")),
		app.Button().Type("button").Class("fork-here").
			Title("Start a new session that takes the conversation up from this reply").
			OnClick(func(ctx app.Context, _ app.Event) { ctx.NewActionWithValue(actionFork, id) }).
			Text("Fork from here"),
	)
}

// fork starts a new session from the reply messageID and opens it: forked by the agent,
// or with a summary in its prompt box for the person to edit and send.
func (b *promptBox) fork(ctx app.Context, messageID string) {
	in := b.host.in()
	if in.readOnly != "" {
		return
	}
	id := in.id
	b.startAndOpen(ctx, "Could not fork: ", func(c context.Context) (shared.Session, string, error) {
		f, err := api.Fork(c, id, messageID)
		return f.Session, f.Draft, err
	})
}

// forkHint is what the chat of a fork says while its summary waits in the prompt box.
const forkHint = "A fork of another session: the box below holds a summary of that conversation, up to the reply " +
	"you forked from. Nothing is sent yet: edit it as you like, then send it as this session's first prompt."

// takeForkDraft puts the draft a fork left for the session id in the prompt box, once.
func (b *promptBox) takeForkDraft(ctx app.Context, id string) {
	var draft string
	if ctx.SessionStorage().Get(forkDraftKey(id), &draft) != nil || draft == "" {
		return
	}
	ctx.SessionStorage().Del(forkDraftKey(id))
	b.draft, b.forkDraft = draft, true
	ctx.Defer(func(app.Context) {
		if box := app.Window().GetElementByID("prompt-input"); box.Truthy() {
			box.Set("value", draft) // the box's text is its value, which rendering does not set
			box.Call("focus")
		}
	})
}

// signInRow is an agent's request that a person sign in before it starts: each sign-in
// it offers, with the command line to type in the session's terminal (which the link
// types there, unsent), and Retry, which starts the agent again. Once settled it says
// what became of it instead.
func signInRow(sessionID string, m shared.Message) app.UI {
	var md shared.Metadata
	if m.Metadata != nil {
		md = *m.Metadata
	}
	pending := md.Status == shared.StatusPending
	return app.Div().Class("msg", "sign-in").DataSet("message-id", m.ID).Role("group").Aria("label", "The agent asks you to sign in").Body(
		app.P().Class("sign-in-text").Text(m.Content),
		app.Range(md.SignIn).Slice(func(i int) app.UI {
			s := md.SignIn[i]
			return app.Div().Class("sign-in-method").Body(
				app.P().Class("sign-in-name").Text(s.Name),
				app.If(s.Description != "", func() app.UI { return app.P().Class("sign-in-desc").Text(s.Description) }),
				app.Pre().Class("sign-in-command").Body(app.Code().Text(s.Command)),
				app.If(pending, func() app.UI {
					return app.A().Class("sign-in-run").Href("/web/terminal.html?session_id=" + url.QueryEscape(sessionID) + "&type=" + url.QueryEscape(s.Command)).
						Target("_blank").Rel("noopener").Text("Type it in the terminal")
				}),
			)
		}),
		app.If(pending, func() app.UI {
			return app.Div().Body(
				app.P().Class("sign-in-then").Text("Press Enter there and sign in; then:"),
				app.Button().Type("button").Class("sign-in-retry").
					OnClick(func(ctx app.Context, _ app.Event) { ctx.NewAction(actionRetrySignIn) }).Text("Retry"),
			)
		}).Else(func() app.UI {
			return app.P().Class("sign-in-then").Text(map[bool]string{
				true:  "Taken up: the agent started again after the sign-in.",
				false: "The agent stopped before the sign-in. Your next prompt starts it again; it asks again if it still needs you to sign in.",
			}[md.Status == shared.StatusCompleted])
		}),
	)
}
