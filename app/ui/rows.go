package ui

import (
	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/shared"
)

// The chat's rows: one renderer per kind of message, picked by renderMessage.

// Chunk renders the newest chunk of messages after the older ones, which it nests in
// its first child: loading older messages fills that slot and moves nothing.
type Chunk struct {
	app.Compo

	SessionID string
	Cwd       string      // the session's directory, which paths are shown relative to
	Chunks    []ChunkView // this chunk, then the older ones
}

// Render draws the older chunks, then this one's messages.
func (c *Chunk) Render() app.UI {
	if len(c.Chunks) == 0 {
		return app.Div().Class("chunk")
	}
	msgs := c.Chunks[0].Msgs
	var older app.UI = app.Div().Class("chunk")
	if len(c.Chunks) > 1 {
		older = &Chunk{SessionID: c.SessionID, Cwd: c.Cwd, Chunks: c.Chunks[1:]}
	}
	return app.Div().Class("chunk").Body(
		older,
		app.Range(msgs).Slice(func(i int) app.UI { return renderMessage(c.SessionID, c.Cwd, msgs[i]) }),
	)
}

func renderMessage(sessionID, cwd string, m shared.Message) app.UI {
	switch {
	case shared.ShellOf(m) != nil:
		return &CommandRow{SessionID: sessionID, Cwd: cwd, Msg: m}
	case m.Type == shared.TypeThinking:
		return app.Details().Class("msg", "thinking").Body(
			app.Summary().Text("Thinking"),
			app.Div().Class("text").Text(m.Content),
		)
	case shared.ToolContentOf(m) != nil:
		return &ToolCallRow{SessionID: sessionID, Cwd: cwd, Msg: m}
	case m.Type == shared.TypeToolCall || m.Type == shared.TypeToolExecute:
		return toolRow(m, cwd)
	case m.Type == shared.TypeError:
		return &ErrorRow{SessionID: sessionID, Msg: m}
	case m.Type == shared.TypeStatus:
		return statusRow(m)
	case m.Type == shared.TypePermissionRequest:
		return &PermissionRow{SessionID: sessionID, Msg: m}
	case m.Type == shared.TypeElicitation:
		return &ElicitationRow{SessionID: sessionID, Msg: m}
	case m.Type == shared.TypePlan:
		return planRow(m)
	case m.Type == shared.TypeSignIn:
		return signInRow(sessionID, m)
	case m.AuthorType == shared.AuthorUser:
		return userRow(m)
	default:
		return replyRow(m)
	}
}

// toolRow is a tool call that is not a shell command: its title (paths in it relative to
// cwd, the session's directory; the title as sent on hover) and status, then extra (its
// content's disclosures).
func toolRow(m shared.Message, cwd string, extra ...app.UI) app.UI {
	title, status := m.Content, shared.ToolStatus("")
	if md := m.Metadata; md != nil {
		if md.Title != "" {
			title = md.Title
		}
		status = md.Status
	}
	o, text := outcome(status, nil, "")
	switch {
	case rejected(m):
		o, text = OutcomeNeutral, "Rejected"
	case status == shared.StatusCompleted:
		o, text = OutcomeSucceeded, "Done"
	}
	return app.Div().Class("msg", "tool").DataSet("message-id", m.ID).Body(
		append([]app.UI{
			statusIcon(o, text),
			app.Span().Class("tool-title").Title(attrText(title)).Text(relative(cwd, title)),
			app.Span().Class("status-text").Text(text),
		}, extra...)...,
	)
}

// statusRow is how a turn ended, when it did not simply end: a line across the chat. A
// cancelled turn is the person's own doing and stays quiet; the others are warnings.
func statusRow(m shared.Message) app.UI {
	tone := "status-warn"
	if md := m.Metadata; md != nil && md.StopReason == shared.StopCancelled {
		tone = "status-quiet"
	}
	return app.Div().Class("msg", "status", tone).DataSet("message-id", m.ID).Body(
		app.Span().Class("status-line").Text(m.Content),
	)
}

// planRow is the agent's plan for a turn as a checklist: each step's status as a mark
// (with its word for screen readers), a high priority said in words.
func planRow(m shared.Message) app.UI {
	var entries []shared.PlanEntry
	if m.Metadata != nil {
		entries = m.Metadata.Entries
	}
	marks := map[string][2]string{"completed": {"✓", "done"}, "in_progress": {"◐", "in progress"}, "pending": {"○", "to do"}}
	return app.Div().Class("msg", "plan").DataSet("message-id", m.ID).Body(
		app.P().Class("plan-title").Text(m.Content),
		app.Ul().Class("plan-entries").Body(
			app.Range(entries).Slice(func(i int) app.UI {
				e := entries[i]
				mark, ok := marks[e.Status]
				state := "plan-" + e.Status
				if !ok { // a class name never carries what the agent sent
					mark, state = [2]string{"○", e.Status}, "plan-unknown"
				}
				return app.Li().Class("plan-entry", state).Body(
					app.Span().Class("plan-mark").Aria("hidden", "true").Text(mark[0]),
					app.Span().Class("sr-only").Text(mark[1]+": "),
					markdown(e.Content, e.Markdown, "plan-text"),
					app.If(e.Priority == "high", func() app.UI { return app.Span().Class("plan-priority").Text("high priority") }),
				)
			}),
		),
	)
}
