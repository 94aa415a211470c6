package ui

import (
	"context"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/shared"
)

// agentControls are the controls of the session's agent: stop, resume and cancel a turn
// here; its modes and config options in modes.go. One request of each kind at a time.
type agentControls struct {
	host sessionHost // the page: its state, passed down, and where outcomes go

	stopping  bool // a stop or a resume of the agent is on its way
	switching bool // a change of a mode or a config option is on its way
}

// reset forgets the requests on their way: the page shows another session.
func (a *agentControls) reset() { *a = agentControls{host: a.host} }

// barViews are the controls on the session bar: Resume (or why the agent cannot resume),
// the modes and the config options, for a person who may change the session.
func (a *agentControls) barViews() []app.UI {
	in := a.host.in()
	state, stopped, resumable := shared.SessionState(""), false, false
	if s := in.session; s != nil {
		state, stopped, resumable = s.State, s.Stopped, s.Resumable
	}
	return []app.UI{
		app.If(stopped && resumable && in.readOnly == "", func() app.UI {
			return disabled(app.Button().Type("button").Class("secondary", "resume"), a.stopping).OnClick(a.resumeAgent).
				Title("Start the agent again in the same directory; it resumes this conversation").
				Text(map[bool]string{true: "Resuming…", false: "Resume"}[a.stopping])
		}).ElseIf(stopped && state == shared.SessionReady, func() app.UI {
			return app.Span().Class("no-resume").Text(shared.NoResume)
		}),
		app.If(in.readOnly == "", a.modeSelect),
		app.If(in.readOnly == "", a.configControls),
	}
}

// turnViews are the controls beside the prompt box: Cancel turn while one runs, and Stop
// agent while it is live.
func (a *agentControls) turnViews() []app.UI {
	s := a.host.in().session
	state, stopped, resumable := shared.SessionState(""), false, false
	if s != nil {
		state, stopped, resumable = s.State, s.Stopped, s.Resumable
	}
	return []app.UI{
		app.If(state == shared.SessionRunning, func() app.UI {
			return app.Button().Type("button").Class("secondary", "cancel-turn").OnClick(a.cancelTurn).Text("Cancel turn")
		}),
		app.If((state == shared.SessionReady || state == shared.SessionRunning) && !stopped, func() app.UI {
			return disabled(app.Button().Type("button").Class("secondary"), a.stopping).OnClick(a.stopAgent).
				Title(map[bool]string{true: "End the agent's process; the next prompt starts it again, and it resumes this conversation",
					false: "End the agent's process; the next prompt starts it again, without the earlier turns"}[resumable]).
				Text(map[bool]string{true: "Stopping…", false: "Stop agent"}[a.stopping])
		}),
	}
}

// stopAgent stops the session's agent; the session stays, and the chat says what the next
// prompt does (the server's status message).
func (a *agentControls) stopAgent(ctx app.Context, _ app.Event) {
	a.agentAction(ctx, api.StopAgent, "Stop failed: ")
}

// resumeAgent starts a stopped agent that can take the conversation up again, with no
// prompt; the chat says whether it resumed.
func (a *agentControls) resumeAgent(ctx app.Context, _ app.Event) {
	a.agentAction(ctx, api.Resume, "Resume failed: ")
}

// agentAction runs a stop or a resume of the session's agent, one at a time, and shows
// the session it answers.
func (a *agentControls) agentAction(ctx app.Context, call func(context.Context, string) (shared.Session, error), failed string) {
	in := a.host.in()
	if a.stopping || in.c == nil {
		return
	}
	a.stopping = true
	a.host.say("")
	c, id := in.c, in.id
	ctx.Async(func() {
		s, err := call(c, id)
		dispatchIn(ctx, c, func(app.Context) {
			a.stopping = false
			if err != nil {
				a.host.fail(failed, err)
				return
			}
			a.host.setSession(s)
		})
	})
}

func (a *agentControls) cancelTurn(ctx app.Context, _ app.Event) {
	in := a.host.in()
	c, id := in.c, in.id
	ctx.Async(func() {
		if err := api.Cancel(c, id); err != nil && c.Err() == nil {
			dispatchIn(ctx, c, func(app.Context) { a.host.say("Cancel failed: " + err.Error()) })
		}
	})
}
