package ui

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/shared"
)

// promptBox is the session page's prompt box: the draft, the files to send with it
// (attach.go), the prompt on its way, and the agent's slash commands as completions. Where
// the session ended, it says why and offers a new session; for a person who may not
// change the session, it says why.
type promptBox struct {
	host sessionHost // the page: its state, passed down, and where outcomes go

	draft     string
	forkDraft bool          // the draft is a fork's summary, not sent yet (fork.go)
	files     []pendingFile // to send with the prompt (attach.go)
	pending   string        // the client message id of the prompt on its way, until the store has it
	starting  bool          // a new session of the task is on its way (startNew)
}

// holdsForkDraft reports whether the box holds a fork's summary, not sent yet.
func (b *promptBox) holdsForkDraft() bool { return b.forkDraft }

// reset empties the box: the page shows another session.
func (b *promptBox) reset() { *b = promptBox{host: b.host} }

// stored takes messages the page shows: the prompt on its way is sent once its stored
// message is among them, whichever way it came (the WebSocket, or the POST's answer,
// which may come long after: it waits until the turn is queued).
func (b *promptBox) stored(ctx app.Context, msgs []shared.Message) {
	for _, m := range msgs {
		if b.pending != "" && m.Metadata != nil && m.Metadata.ClientMessageID == b.pending {
			b.pending, b.draft, b.forkDraft = "", "", false
			if box := app.Window().GetElementByID("prompt-input"); box.Truthy() {
				box.Set("value", "") // the box's text is its value, which rendering does not reset
			}
			ctx.Defer(scrollToEnd) // the person's own prompt: back to the end, to follow its turn
		}
	}
}

func (b *promptBox) onInput(ctx app.Context, _ app.Event) {
	b.draft = ctx.JSSrc().Get("value").String()
}

// send posts the prompt box (Enter submits it: see formScript).
func (b *promptBox) send(ctx app.Context, _ app.Event) {
	in := b.host.in()
	content := strings.TrimSpace(b.draft)
	if (content == "" && len(b.files) == 0) || b.pending != "" || in.c == nil {
		return
	}
	c, id, cmid, files := in.c, in.id, newClientMessageID(), b.files
	b.pending = cmid
	b.host.say("")
	ctx.Async(func() {
		ids, err := upload(c, id, files)
		var m shared.Message
		if err == nil {
			m, err = api.SendMessage(c, id, content, cmid, ids...)
		}
		dispatchIn(ctx, c, func(ctx app.Context) {
			for i := range min(len(ids), len(b.files)) { // sent again, they are not uploaded again
				b.files[i].id = ids[i]
			}
			if err == nil {
				b.files = nil
				b.host.show(ctx, []shared.Message{m})
				return
			}
			if b.pending == cmid { // not stored: the prompt stays in the box
				b.pending = ""
			}
			b.host.fail("Not sent: ", err)
		})
	})
}

// newClientMessageID makes a prompt idempotent: a retried POST returns the first message.
// It must not repeat within a session, and is no secret: the runtime's generator (ChaCha8,
// seeded by the browser's crypto.getRandomValues) does, which keeps crypto/rand and the
// FIPS 140 module under it out of app.wasm.
func newClientMessageID() string {
	return fmt.Sprintf("%016x%016x", rand.Uint64(), rand.Uint64())
}

// startNew starts a new session of the task with this session's agent, where this one
// worked (nextCwd), and opens it: the way on from a session that ended.
func (b *promptBox) startNew(ctx app.Context, _ app.Event) {
	in := b.host.in()
	if in.session == nil {
		return
	}
	s := *in.session
	cwd := nextCwd(in.task, s.Cwd)
	b.startAndOpen(ctx, "Could not start a new session: ", func(c context.Context) (shared.Session, string, error) {
		next, err := api.StartSession(c, s.TaskID, s.Agent, cwd)
		return next, "", err
	})
}

// startAndOpen runs start (a new session of the task), one at a time, and opens the
// session it gives; a draft it gives waits for that page's prompt box (fork.go).
func (b *promptBox) startAndOpen(ctx app.Context, failed string, start func(context.Context) (shared.Session, string, error)) {
	c := b.host.in().c
	if b.starting || c == nil {
		return
	}
	b.starting = true
	b.host.say("")
	ctx.Async(func() {
		next, draft, err := start(c)
		dispatchIn(ctx, c, func(ctx app.Context) {
			b.starting = false
			if err != nil {
				b.host.fail(failed, err)
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

// where says where a new session of the task would work (nextCwd), for the Start a new
// session button.
func where(in sessionIn) string {
	if in.task != nil && in.task.Repo != "" {
		return "in the task's worktree"
	}
	return "in " + in.cwd()
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

// render draws the box, with the controls of the turn and the agent (agentControls.turnViews)
// beside Send.
func (b *promptBox) render(controls []app.UI) app.UI {
	in := b.host.in()
	jump := app.Button().Type("button").Class("jump").OnClick(func(ctx app.Context, _ app.Event) { scrollToEnd(ctx) }).Text("↓ Jump to newest")
	if in.session != nil && in.session.State.Ended() {
		return app.Form().Class("prompt", "ended").Body(jump,
			app.P().Role("status").Text(endedReason(*in.session)),
			app.If(in.readOnly == "", func() app.UI {
				return disabled(app.Button().Type("button").Class("start-new"), b.starting).OnClick(b.startNew).
					Title(attrText("A new session of this task, with the " + in.session.Agent + " agent, " + where(in))).
					Text(map[bool]string{true: "Starting…", false: "Start a new session"}[b.starting])
			}),
		)
	}
	if in.readOnly != "" {
		return app.Form().Class("prompt", "read-only").Body(jump, app.P().Role("status").Text(in.readOnly))
	}
	actions := append([]app.UI{b.attachButton()}, controls...)
	return app.Form().Class("prompt").OnSubmit(b.send).
		OnDragOver(func(_ app.Context, e app.Event) { e.PreventDefault() }).OnDrop(b.onDrop).Body(
		jump,
		app.Label().For("prompt-input").Class("sr-only").Text("Prompt"),
		app.Textarea().ID("prompt-input").Rows(map[bool]int{true: 10, false: 2}[b.forkDraft]).Placeholder(promptHint(in.session)).
			Text(b.draft).OnInput(b.onInput).OnPaste(b.onPaste),
		b.commandList(),
		b.attachRow(),
		app.Div().Class("prompt-actions").Body(append(actions,
			disabled(app.Button().Type("submit"), b.pending != "").
				Text(map[bool]string{true: "Sending…", false: "Send"}[b.pending != ""]),
		)...),
	)
}

// commandList offers the agent's slash commands that complete the prompt, while it is a
// "/" and the start of a command name.
func (b *promptBox) commandList() app.UI {
	s := b.host.in().session
	if s == nil || len(s.Commands) == 0 || !strings.HasPrefix(b.draft, "/") || strings.ContainsAny(b.draft, " \n") {
		return nil
	}
	var matches []shared.Command
	for _, c := range s.Commands {
		if strings.HasPrefix(c.Name, b.draft[1:]) {
			matches = append(matches, c)
		}
	}
	if len(matches) == 0 {
		return nil
	}
	return app.Ul().ID("command-list").Class("commands").Aria("label", "Commands the agent offers").Body(
		app.Range(matches).Slice(func(i int) app.UI {
			c := matches[i]
			return app.Li().Body(
				app.Button().Type("button").Class("command").OnClick(b.useCommand(c.Name), app.EventScope(c.Name)).Body(
					app.Span().Class("command-name").Text("/"+c.Name),
					app.Span().Class("command-desc").Text(c.Description+optional(" · ", c.Hint)),
				),
			)
		}),
	)
}

// useCommand puts "/name " in the prompt box and the cursor after it.
func (b *promptBox) useCommand(name string) app.EventHandler {
	return func(ctx app.Context, _ app.Event) {
		b.draft = "/" + name + " "
		if box := app.Window().GetElementByID("prompt-input"); box.Truthy() {
			box.Set("value", b.draft)
			box.Call("focus")
		}
	}
}
