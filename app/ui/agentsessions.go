package ui

import (
	"context"
	"strconv"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/shared"
)

// EarlierSessions is an agent's own earlier sessions in a task's directory (ACP
// session/list), among the task's actions: a person lists them for an agent, a page at a
// time, ticks some and imports them as sessions of the task, each resuming its
// conversation at its first prompt. The server says which agents cannot list.
type EarlierSessions struct {
	app.Compo

	TaskID string
	OnRepo bool           // the task's worktree is the directory; else the person names one
	Cwd    string         // the directory offered first: the task's latest session's
	Agents []shared.Agent // the profiles to pick from

	open    bool
	agent   string
	cwd     string
	listed  bool
	found   []shared.AgentSession
	cursor  string
	chosen  map[string]bool
	busy    bool
	err     string
	done    string
	touched bool // the person typed a directory: Cwd no longer replaces it
}

func (e *EarlierSessions) toggle(ctx app.Context, _ app.Event) {
	e.open = !e.open
	if !e.touched {
		e.cwd = e.Cwd
	}
	if e.agent == "" && len(e.Agents) > 0 {
		e.agent = e.Agents[len(e.Agents)-1].Name // the built-in shell agent is first, and lists nothing
	}
	if e.chosen == nil {
		e.chosen = map[string]bool{}
	}
}

// list asks for the first page, or with more the next one.
func (e *EarlierSessions) list(more bool) app.EventHandler {
	return func(ctx app.Context, ev app.Event) {
		ev.PreventDefault()
		id, agent, cwd, cursor := e.TaskID, e.agent, e.cwd, ""
		if e.OnRepo {
			cwd = ""
		}
		if more {
			cursor = e.cursor
		}
		e.busy, e.err, e.done = true, "", ""
		ctx.Async(func() {
			page, err := api.AgentSessions(context.Background(), id, agent, cwd, cursor)
			ctx.Dispatch(func(app.Context) {
				e.busy, e.err = false, errText(err)
				if err != nil {
					return
				}
				if !more {
					e.found, e.chosen = nil, map[string]bool{}
				}
				e.listed, e.found, e.cursor = true, append(e.found, page.Sessions...), page.NextCursor
			})
		})
	}
}

func (e *EarlierSessions) choose(id string) app.EventHandler {
	return func(ctx app.Context, _ app.Event) { e.chosen[id] = ctx.JSSrc().Get("checked").Bool() }
}

func (e *EarlierSessions) importChosen(ctx app.Context, _ app.Event) {
	req := shared.ImportAgentSessions{Agent: e.agent}
	if !e.OnRepo {
		req.Cwd = e.cwd
	}
	for _, s := range e.found {
		if e.chosen[s.ID] && s.SessionID == "" {
			req.SessionIDs = append(req.SessionIDs, s.ID)
		}
	}
	id := e.TaskID
	e.busy, e.err, e.done = true, "", ""
	ctx.Async(func() {
		sessions, err := api.ImportAgentSessions(context.Background(), id, req)
		ctx.Dispatch(func(app.Context) {
			e.busy, e.err = false, errText(err)
			for i, s := range sessions {
				for j := range e.found {
					if e.found[j].ID == req.SessionIDs[i] {
						e.found[j].SessionID = s.ID
					}
				}
				delete(e.chosen, req.SessionIDs[i])
			}
			if len(sessions) > 0 {
				e.done = "Imported " + plural(len(sessions), "session") + ": the first prompt of each resumes its conversation."
			}
		})
	})
}

func (e *EarlierSessions) count() int {
	n := 0
	for _, s := range e.found {
		if e.chosen[s.ID] && s.SessionID == "" {
			n++
		}
	}
	return n
}

// importLabel is the import button's text: how many are ticked.
func (e *EarlierSessions) importLabel() string {
	if n := e.count(); n > 0 {
		return "Import " + plural(n, "session")
	}
	return "Import"
}

// Render draws the button, and the form and the list while open.
func (e *EarlierSessions) Render() app.UI {
	return app.Span().Class("share-links").Body(
		app.Button().Type("button").Class("secondary", "earlier-toggle").Aria("expanded", strconv.FormatBool(e.open)).OnClick(e.toggle).Text("Earlier sessions"),
		app.If(e.open, func() app.UI {
			return app.Div().Class("share-panel", "earlier-panel").Body(
				app.Form().Class("inline-form").OnSubmit(e.list(false)).Body(
					field("earlier-agent-"+e.TaskID, "Agent", app.Select().ID("earlier-agent-"+e.TaskID).OnChange(bind(&e.agent)).Body(
						app.Range(e.Agents).Slice(func(i int) app.UI {
							a := e.Agents[i].Name
							return selected(app.Option().Value(attrText(a)), a == e.agent).Text(a)
						}),
					)),
					app.If(!e.OnRepo, func() app.UI {
						return field("earlier-cwd-"+e.TaskID, "Directory on the server", app.Input().ID("earlier-cwd-"+e.TaskID).Type("text").
							Value(e.cwd).Placeholder("/home/me/project").OnInput(func(ctx app.Context, ev app.Event) {
							e.cwd, e.touched = ctx.JSSrc().Get("value").String(), true
						}))
					}),
					disabled(app.Button().Type("submit"), e.busy || e.agent == "").Text(map[bool]string{true: "Asking the agent…", false: "List"}[e.busy]),
				),
				app.P().Class("hint").Text("The agent is started to list the conversations it keeps for "+
					map[bool]string{true: "the task's worktree", false: "this directory"}[e.OnRepo]+"; an imported one resumes at its first prompt."),
				app.If(e.err != "", func() app.UI { return app.P().Class("alert").Role("alert").Text(e.err) }),
				app.If(e.done != "", func() app.UI { return app.P().Role("status").Text(e.done) }),
				app.If(e.listed && len(e.found) == 0, func() app.UI {
					return app.P().Class("muted").Text("The agent lists no sessions here.")
				}),
				app.Ul().Class("account-list", "earlier-list").Body(
					app.Range(e.found).Slice(func(i int) app.UI { return e.renderEntry(e.found[i]) }),
				),
				app.If(e.listed && (e.cursor != "" || len(e.found) > 0), func() app.UI {
					return app.Div().Class("land-actions").Body(
						app.If(e.cursor != "", func() app.UI {
							return disabled(app.Button().Type("button").Class("secondary"), e.busy).OnClick(e.list(true)).Text("More")
						}),
						disabled(app.Button().Type("button"), e.busy || e.count() == 0).OnClick(e.importChosen).
							Text(e.importLabel()),
					)
				}),
			)
		}),
	)
}

// renderEntry is one of the agent's sessions: a box to tick, or the link to the session
// of the task that holds it already.
func (e *EarlierSessions) renderEntry(s shared.AgentSession) app.UI {
	title := shared.Visible(s.Title)
	if title == "" {
		title = "Untitled"
	}
	when := ""
	if s.UpdatedAt != nil {
		when = "last active " + s.UpdatedAt.Local().Format("Jan 2 15:04") + " · "
	}
	box := "earlier-" + e.TaskID + "-" + s.ID
	return app.Li().Body(
		app.If(s.SessionID == "", func() app.UI {
			return app.Label().Class("check").For(box).Body(
				app.Input().ID(box).Type("checkbox").Checked(e.chosen[s.ID]).OnChange(e.choose(s.ID), app.EventScope(s.ID)),
				app.Span().Class("account-name").Text(title),
			)
		}).Else(func() app.UI {
			return app.A().Class("account-name").Href("/sessions/" + s.SessionID).Text(title + " (a session of this task)")
		}),
		app.Span().Class("account-meta").Body(app.Text(when), app.Code().Text(s.ID)),
	)
}
