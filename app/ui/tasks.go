package ui

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/app/client"
	"conch/shared"
	"conch/shared/poll"
)

// TasksPage is /: the tasks with their sessions, and a form to start new work.
type TasksPage struct {
	app.Compo

	tasks    []shared.Task
	agents   []shared.Agent
	loaded   bool
	offline  bool
	err      string
	busy     bool
	confirm  string            // the task whose deletion awaits a second click
	starting string            // the task a session is being started on (startOn)
	picked   map[string]string // the agent picked for a task's next session, by task id

	board  bool            // the tasks are shown as columns by state
	landed map[string]bool // by task id, for the board: whether a task's worktree has nothing left to land
	live   bool            // the page follows the list's changes (data-live, for tests and people alike)
	ctx    context.Context // the page's WebSocket; cancelled on dismount
	cancel context.CancelFunc
	// mounted is the page's own app context: what comes back from a click on a task is
	// dispatched through it, not the button's, which may be gone by then (a task's first
	// session on a repository adds its Changes link before the button; on the board it
	// moves the task to another column), and go-app drops what is dispatched to an element
	// that is gone.
	mounted app.Context

	title, description, agent, cwd string

	// The worktree the form offers when cwd is in a git repository (typeCwd).
	repo       *shared.Repository // what cwd is to git, when it is in a work tree
	base       string             // the base branch of the task's branch
	inCheckout bool               // the person said no: the agent works in cwd itself
	asked      int                // counts cwd's edits: the answer about an older one is dropped
}

// askDelay is how long typing must pause before the form asks what the directory is.
const askDelay = 400 * time.Millisecond

// OnMount loads the tasks and agents, in the browser only, and follows the task list's
// changes.
func (p *TasksPage) OnMount(ctx app.Context) {
	ctx.Page().SetTitle("Conch")
	p.mounted = ctx
	p.ctx, p.cancel = context.WithCancel(context.Background())
	go p.follow(ctx, p.ctx)
	ctx.Async(func() {
		c := context.Background()
		tasks, err := api.ListTasks(c)
		var agents []shared.Agent
		if err == nil {
			agents, _ = api.Agents(c) // only to start sessions: a guest of a share link may not list them
		}
		ctx.Dispatch(func(app.Context) {
			p.offline = errors.Is(err, client.ErrUnreachable)
			if err != nil {
				if !p.offline {
					p.err = err.Error()
				}
				return
			}
			p.tasks, p.agents, p.loaded, p.err = tasks, agents, true, ""
			if p.agent == "" && len(agents) > 0 {
				p.agent = agents[0].Name
			}
		})
	})
}

// OnDismount closes the page's WebSocket.
func (p *TasksPage) OnDismount() {
	if p.cancel != nil {
		p.cancel()
	}
}

// follow applies the task list's changes as they come; after a lost connection it
// reconnects and lists again, so nothing missed meanwhile is lost.
func (p *TasksPage) follow(ctx app.Context, c context.Context) {
	followTasks(c, func(conn *client.Conn) bool {
		p.reload(ctx, c) // what changed before the subscription, or while disconnected
		for env := range conn.Notifications() {
			p.apply(ctx, c, env)
		}
		ctx.Dispatch(func(app.Context) { p.live = false })
		return true
	})
}

// followTasks runs follow on a WebSocket subscribed to the task list until the connection
// ends, and again on a new one, backing off while follow reports no progress, until c ends.
func followTasks(c context.Context, follow func(*client.Conn) bool) {
	for failures := 0; c.Err() == nil; failures++ {
		conn, err := api.Dial(c)
		if err == nil {
			stop := context.AfterFunc(c, func() { conn.Close() })
			if conn.SubscribeTasks(c) == nil && follow(conn) {
				failures = 0
			}
			stop()
			conn.Close()
		}
		select {
		case <-c.Done():
			return
		case <-time.After(poll.Backoff(failures + 1)):
		}
	}
}

// reload lists the tasks again.
func (p *TasksPage) reload(ctx app.Context, c context.Context) {
	tasks, err := api.ListTasks(c)
	if err != nil {
		return
	}
	ctx.Dispatch(func(app.Context) {
		if c.Err() == nil {
			p.tasks, p.loaded, p.live = tasks, true, true
		}
	})
}

// apply is one change of the task list: a task added or changed, or deleted.
func (p *TasksPage) apply(ctx app.Context, c context.Context, env shared.Envelope) {
	var t shared.Task
	var ref shared.TaskRef
	switch {
	case env.Action == shared.ActionTaskUpdated && env.Decode(&t) == nil:
		ref.TaskID = t.ID
	case env.Action == shared.ActionTaskDeleted && env.Decode(&ref) == nil:
	default:
		return
	}
	ctx.Dispatch(func(ctx app.Context) {
		if c.Err() != nil {
			return
		}
		i := slices.IndexFunc(p.tasks, func(have shared.Task) bool { return have.ID == ref.TaskID })
		switch {
		case t.ID == "" && i >= 0:
			p.tasks = slices.Delete(p.tasks, i, i+1)
		case t.ID != "" && i >= 0:
			// The push goes to everyone: what this person may do came with the list.
			t.MayEdit, t.MayShare = p.tasks[i].MayEdit, p.tasks[i].MayShare
			p.tasks[i] = t
			p.checkLanded(ctx, t)
		case t.ID != "": // a new task: listed again, which says what this person may do with it
			go p.reload(ctx, c)
		}
	})
}

func bind(dst *string) app.EventHandler {
	return func(ctx app.Context, _ app.Event) { *dst = ctx.JSSrc().Get("value").String() }
}

// typeCwd keeps the working directory typed and, once typing pauses, asks whether it is
// in a git repository, to offer the task a worktree of its own.
func (p *TasksPage) typeCwd(ctx app.Context, _ app.Event) {
	p.cwd = ctx.JSSrc().Get("value").String()
	p.asked++
	p.repo = nil
	n, dir := p.asked, strings.TrimSpace(p.cwd)
	if !strings.HasPrefix(dir, "/") {
		return
	}
	ctx.After(askDelay, func(ctx app.Context) {
		if n != p.asked {
			return
		}
		ctx.Async(func() {
			r, err := api.Repository(context.Background(), dir)
			ctx.Dispatch(func(app.Context) {
				if n != p.asked || err != nil || r.Top == "" || len(r.Branches) == 0 {
					return // no repository, or none with a branch to start from: nothing to offer
				}
				p.repo, p.base = &r, r.Branch
				if !slices.Contains(r.Branches, p.base) {
					p.base = r.Branches[0]
				}
			})
		})
	})
}

// create makes a task and starts a session on it, then opens the session.
func (p *TasksPage) create(ctx app.Context, _ app.Event) {
	title := strings.TrimSpace(p.title)
	if p.busy {
		return
	}
	if title == "" {
		p.err = "A task needs a title."
		return
	}
	p.busy, p.err = true, ""
	desc, agent, cwd := p.description, p.agent, strings.TrimSpace(p.cwd)
	repo, base := "", ""
	if p.repo != nil && !p.inCheckout { // its sessions run in the task's worktree
		repo, base, cwd = p.repo.Top, p.base, ""
	}
	ctx.Async(func() {
		c := context.Background()
		t, err := api.CreateTaskOn(c, title, desc, repo, base)
		var s shared.Session
		if err == nil {
			s, err = api.StartSession(c, t.ID, agent, cwd)
		}
		ctx.Dispatch(func(ctx app.Context) {
			p.busy = false
			if err != nil {
				p.offline = errors.Is(err, client.ErrUnreachable)
				p.err = "Could not start: " + err.Error()
				return
			}
			ctx.Navigate("/sessions/" + s.ID)
		})
	})
}

// agentFor is the agent a task's next session starts with: the one picked for it, else
// the agent of its newest session, else the New-task form's.
func (p *TasksPage) agentFor(t shared.Task) string {
	if a := p.picked[t.ID]; a != "" {
		return a
	}
	if len(t.Sessions) > 0 {
		return t.Sessions[0].Agent
	}
	return p.agent
}

// pick chooses the agent of a task's next session.
func (p *TasksPage) pick(taskID string) app.EventHandler {
	return func(ctx app.Context, _ app.Event) {
		if p.picked == nil {
			p.picked = map[string]string{}
		}
		p.picked[taskID] = ctx.JSSrc().Get("value").String()
	}
}

// startOn starts another session on an existing task with its agent (agentFor), where its
// newest session worked (nextCwd; a fresh directory for its first), and opens it.
func (p *TasksPage) startOn(t shared.Task) app.EventHandler {
	return func(ctx app.Context, _ app.Event) {
		if p.busy {
			return
		}
		p.busy, p.starting, p.err = true, t.ID, ""
		cwd := ""
		if len(t.Sessions) > 0 {
			cwd = nextCwd(&t, t.Sessions[0].Cwd)
		}
		taskID, agent := t.ID, p.agentFor(t)
		ctx.Async(func() {
			s, err := api.StartSession(context.Background(), taskID, agent, cwd)
			p.mounted.Dispatch(func(ctx app.Context) {
				p.busy, p.starting = false, ""
				if err != nil {
					p.err = "Could not start: " + err.Error()
					return
				}
				ctx.Navigate("/sessions/" + s.ID)
			})
		})
	}
}

// Render draws the page; prerendered, it is the shell with an empty list.
func (p *TasksPage) Render() app.UI {
	return app.Div().Class("page", "tasks-page").Body(
		app.Header().Class("bar").Body(
			app.H1().Text("Conch"),
			searchBox(""),
			app.Div().Class("bar-actions").Body(
				app.A().Class("button", "secondary").Href("/account").Text("Account"),
				app.If(app.Getenv(signInEnv) != "", func() app.UI {
					return app.Button().Type("button").Class("secondary").OnClick(p.signOut).Text("Sign out")
				}),
			),
		),
		&Notices{Offline: p.offline},
		app.If(p.err != "", func() app.UI { return app.P().Class("alert").Text(p.err) }),
		app.Main().Body(
			app.Form().Class("new-task").OnSubmit(p.create).Body(
				app.H2().Text("New task"),
				field("task-title", "Title", app.Input().ID("task-title").Required(true).Value(p.title).OnInput(bind(&p.title))),
				field("task-desc", "Description", app.Textarea().ID("task-desc").Rows(2).Text(p.description).OnInput(bind(&p.description))),
				field("task-agent", "Agent", app.Select().ID("task-agent").OnChange(bind(&p.agent)).Body(
					app.Range(p.agents).Slice(func(i int) app.UI {
						a := p.agents[i]
						return selected(app.Option().Value(attrText(a.Name)), a.Name == p.agent).Text(a.Name + optional(" · ", a.Description))
					}),
				)),
				field("task-cwd", "Working directory (optional)", app.Input().ID("task-cwd").Value(p.cwd).OnInput(p.typeCwd)),
				app.If(p.repo != nil, p.renderWorktreeOffer),
				disabled(app.Button().Type("submit"), p.busy || !p.loaded).Text("Create task and start session"),
			),
			app.Div().Class("tasks-head").Body(
				app.H2().Text("Tasks"),
				app.Button().Type("button").Class("secondary").Aria("pressed", strconv.FormatBool(p.board)).
					OnClick(p.toggleBoard).Text("Board"),
			),
			app.If(!p.loaded && !p.offline, func() app.UI { return app.P().Class("empty").Text("Loading tasks…") }),
			app.If(p.loaded && len(p.tasks) == 0, func() app.UI { return app.P().Class("empty").Text("No tasks yet.") }),
			app.If(p.board, func() app.UI { return p.renderBoard() }).Else(func() app.UI {
				return app.Ul().Class("tasks").DataSet("live", p.live).Body(
					app.Range(p.tasks).Slice(func(i int) app.UI { return p.renderTask(p.tasks[i]) }),
				)
			}),
		),
	)
}

// renderWorktreeOffer offers a task in a git repository a worktree and branch of its own,
// from a base branch, so that the agent leaves the person's checkout alone.
func (p *TasksPage) renderWorktreeOffer() app.UI {
	r := p.repo
	return app.Div().Class("worktree-offer").Body(
		app.Label().Class("check").Body(
			app.Input().Type("checkbox").ID("task-worktree").Checked(!p.inCheckout).
				OnChange(func(ctx app.Context, _ app.Event) { p.inCheckout = !ctx.JSSrc().Get("checked").Bool() }),
			app.Text("Work on a branch of its own (worktree)"),
		),
		app.If(!p.inCheckout, func() app.UI {
			return app.Div().Body(
				field("task-base", "Base branch", app.Select().ID("task-base").OnChange(bind(&p.base)).Body(
					app.Range(r.Branches).Slice(func(i int) app.UI {
						b := r.Branches[i]
						return selected(app.Option().Value(attrText(b)), b == p.base).Text(b)
					}),
				)),
				app.P().Class("hint").Text("A new branch from "+p.base+" in a worktree of "+r.Top+
					": your checkout stays as it is. Review and merge it on the task's Changes page."),
			)
		}).Else(func() app.UI {
			return app.P().Class("hint").Text("The agent works in " + strings.TrimSpace(p.cwd) + " itself, in your checkout.")
		}),
	)
}

// signOut ends this browser's sign-in and shows the sign-in page.
func (p *TasksPage) signOut(ctx app.Context, _ app.Event) {
	ctx.Async(func() {
		err := api.SignOut(context.Background())
		ctx.Dispatch(func(app.Context) {
			if err != nil {
				p.err = "Could not sign out: " + err.Error()
				return
			}
			app.Window().Get("location").Call("assign", "/login") // the server's page, not a route of the app
		})
	})
}

// askDelete shows the confirmation of a task's deletion, or hides it (id "").
func (p *TasksPage) askDelete(id string) app.EventHandler {
	return func(ctx app.Context, _ app.Event) { p.confirm = id }
}

// remove deletes a task for good, with what its agents did, and drops it from the list.
func (p *TasksPage) remove(id string) app.EventHandler {
	return func(ctx app.Context, _ app.Event) {
		if p.busy {
			return
		}
		p.busy, p.err = true, ""
		ctx.Async(func() {
			err := api.DeleteTask(context.Background(), id)
			ctx.Dispatch(func(ctx app.Context) {
				p.busy, p.confirm = false, ""
				if err != nil && shared.ErrorCode(err) != shared.CodeNotFound {
					p.offline = errors.Is(err, client.ErrUnreachable)
					p.err = "Could not delete: " + err.Error()
					return
				}
				p.tasks = slices.DeleteFunc(p.tasks, func(t shared.Task) bool { return t.ID == id })
			})
		})
	}
}

func (p *TasksPage) renderTask(t shared.Task) app.UI {
	confirming := p.confirm == t.ID
	return app.Li().Class("task").Body(
		app.Div().Class("task-head").Body(
			app.H3().Text(shared.Visible(t.Title)),
			app.If(t.NeedsAttention, func() app.UI {
				return app.Span().Class("badge", "attention").Title("A permission request is waiting for you").Text("Needs you")
			}),
			app.If(len(t.Cost) > 0, func() app.UI {
				return app.Span().Class("cost").Title("What the task's agents report they cost").Text(costLabel(t.Cost))
			}),
		),
		app.If(t.Description != "", func() app.UI { return app.P().Class("desc").Text(shared.Visible(t.Description)) }),
		app.If(t.Repo != "", func() app.UI { return taskBranch(t) }),
		app.Ul().Class("sessions").Body(
			app.Range(t.Sessions).Slice(func(i int) app.UI {
				s := t.Sessions[i]
				return app.Li().Body(
					app.A().Href("/sessions/"+s.ID).Text(s.Agent+" session · "+s.CreatedAt.Local().Format("Jan 2 15:04")),
					app.Span().Class("badge", "state-"+string(s.State)).Text(string(s.State)),
				)
			}),
		),
		app.Div().Class("actions").Body(
			changesLink(t),
			attemptsLink(t),
			app.If(t.MayEdit, func() app.UI { return p.taskActions(t, confirming) }),
		),
	)
}

// taskBranch says where a task on a repository works: the repository, and its branch,
// which its first session makes.
func taskBranch(t shared.Task) app.UI {
	return app.P().Class("task-repo").Body(
		app.Span().Class("sr-only").Text("Repository "),
		app.Code().Text(t.Repo),
		app.If(t.Branch != "", func() app.UI {
			return app.Span().Body(app.Text(" · branch "), app.Code().Text(t.Branch), app.Text(" from "+t.BaseBranch))
		}).Else(func() app.UI {
			return app.Text(" · a branch of its own from " + t.BaseBranch + ", made by its first session")
		}),
	)
}

// taskActions start a session on the task or delete it, for a person who may change it.
func (p *TasksPage) taskActions(t shared.Task, confirming bool) app.UI {
	return app.Span().Class("task-actions").Body(
		app.Select().Class("agent-pick").Aria("label", attrText("Agent of the next session of "+t.Title)).OnChange(p.pick(t.ID), app.EventScope(t.ID)).Body(
			app.Range(p.agents).Slice(func(i int) app.UI {
				a := p.agents[i].Name
				return selected(app.Option().Value(attrText(a)), a == p.agentFor(t)).Text(a)
			}),
		),
		disabled(app.Button().Type("button").Class("secondary", "start-session"), p.busy || p.agentFor(t) == "").OnClick(p.startOn(t), app.EventScope(t.ID)).
			Text(map[bool]string{true: "Starting…", false: "Start a " + p.agentFor(t) + " session"}[p.starting == t.ID]),
		app.If(!confirming, func() app.UI {
			return disabled(app.Button().Type("button").Class("secondary", "danger"), p.busy).OnClick(p.askDelete(t.ID), app.EventScope(t.ID)).
				Aria("label", attrText("Delete task "+t.Title)).Text("Delete")
		}).Else(func() app.UI {
			return app.Span().Class("confirm").Role("group").Aria("label", "Confirm deletion").Body(
				app.Span().Text("Delete this task, its sessions and their output for good?"),
				disabled(app.Button().Type("button").Class("danger"), p.busy).OnClick(p.remove(t.ID), app.EventScope(t.ID)).Text("Delete for good"),
				disabled(app.Button().Type("button").Class("secondary"), p.busy).OnClick(p.askDelete("")).Text("Keep it"),
			)
		}),
		app.If(t.MayShare, func() app.UI { return &ShareLinks{TaskID: t.ID} }),
		&EarlierSessions{TaskID: t.ID, OnRepo: t.Repo != "", Cwd: latestCwd(t), Agents: p.agents},
	)
}

// latestCwd is the directory of the task's newest session, "" before one.
func latestCwd(t shared.Task) string {
	if len(t.Sessions) == 0 {
		return ""
	}
	return t.Sessions[len(t.Sessions)-1].Cwd
}

// Board columns, in order.
const (
	columnToDo     = "To do"
	columnRunning  = "Running"
	columnNeedsYou = "Needs you"
	columnReview   = "In review"
	columnDone     = "Done"
)

var columns = []string{columnToDo, columnRunning, columnNeedsYou, columnReview, columnDone}

// column is the board column of a task: waiting for a person first, then working, then
// not started; a task with a worktree is in review until its change has landed (nothing
// left on its branch or in its worktree); every other idle task is done.
func (p *TasksPage) column(t shared.Task) string {
	switch {
	case t.NeedsAttention:
		return columnNeedsYou
	case slices.ContainsFunc(t.Sessions, func(s shared.Session) bool {
		return s.State == shared.SessionRunning || s.State == shared.SessionStarting
	}):
		return columnRunning
	case len(t.Sessions) == 0:
		return columnToDo
	case t.Worktree != "" && !p.landed[t.ID]:
		return columnReview
	}
	return columnDone
}

// toggleBoard switches between the list and the board; the board learns which worktrees
// have landed from their changes summaries, one request per task with a worktree.
func (p *TasksPage) toggleBoard(ctx app.Context, _ app.Event) {
	p.board = !p.board
	if !p.board {
		return
	}
	for _, t := range p.tasks {
		p.checkLanded(ctx, t)
	}
}

// checkLanded asks, for the board, whether task t's change has landed; the summary is
// read again when the task changes (a turn ended, a commit, a merge), never polled.
func (p *TasksPage) checkLanded(ctx app.Context, t shared.Task) {
	if !p.board || t.Worktree == "" {
		return
	}
	c, id := p.ctx, t.ID
	ctx.Async(func() {
		ch, err := api.Changes(c, id)
		ctx.Dispatch(func(app.Context) {
			if err != nil {
				return
			}
			if p.landed == nil {
				p.landed = map[string]bool{}
			}
			p.landed[id] = ch.Ahead == 0 && len(ch.Files) == 0
		})
	})
}

// renderBoard draws the tasks in columns by state.
func (p *TasksPage) renderBoard() app.UI {
	by := map[string][]shared.Task{}
	for _, t := range p.tasks {
		by[p.column(t)] = append(by[p.column(t)], t)
	}
	return app.Div().Class("board").DataSet("live", p.live).Body(app.Range(columns).Slice(func(i int) app.UI {
		name, tasks := columns[i], by[columns[i]]
		return app.Section().Class("column").Aria("label", name).Body(
			app.H3().Body(app.Text(name+" "), app.Span().Class("badge").Text(strconv.Itoa(len(tasks)))),
			app.Ul().Class("tasks").Body(app.Range(tasks).Slice(func(j int) app.UI { return p.renderTask(tasks[j]) })),
		)
	}))
}

func field(id, label string, input app.UI) app.UI {
	return app.Div().Class("field").Body(app.Label().For(id).Text(label), input)
}

func optional(sep, s string) string {
	if s == "" {
		return ""
	}
	return sep + s
}
