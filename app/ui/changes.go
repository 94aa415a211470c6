package ui

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/app/client"
	"conch/shared"
)

// ChangesPage is /tasks/{id}/changes: what a task on a repository changed against its
// base, file by file from the summary; a file's diff is fetched only when it is opened,
// and drawn like a tool call's (diffView).
type ChangesPage struct {
	app.Compo

	taskID  string
	title   string // the task's
	live    bool   // the page follows the task's events (data-live, for tests and people alike)
	stale   bool   // an event came while the summary was loading: load it again after
	changes *shared.Changes
	err     string
	loading bool
	raw     []string           // the files' paths as listed: the diff route's names for them
	files   []*fileView        // by index in changes.Files
	ctx     context.Context    // the page's, until it is dismounted
	cancel  context.CancelFunc // of ctx

	message string   // the commit message being written
	landing string   // the landing step in flight ("commit", "merge", "rebase", "push"), or ""
	landed  string   // what the last step did, for people
	failed  string   // why the last step failed
	clash   []string // the files of the last step's conflict

	comments []shared.ReviewComment // not sent yet, in the order written; Path as the route names it
	sending  bool
	notSent  string // why the last review was not sent
	reviewed string // the session the last review went to
}

// fileView is one file's disclosure, and the review comment being written on it.
type fileView struct {
	open       bool
	diff       *shared.FileDiff
	err        string
	line, note string
}

func newChangesPage() app.Composer { return &ChangesPage{} }

// OnMount loads the summary, in the browser only, and follows the task's events.
func (p *ChangesPage) OnMount(ctx app.Context) {
	p.taskID = strings.TrimSuffix(strings.TrimPrefix(ctx.Page().URL().Path, "/tasks/"), "/changes")
	ctx.Page().SetTitle("Changes · Conch")
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.load(ctx)
	go p.follow(ctx, p.ctx)
}

// follow refreshes the summary when an event that can change it arrives, rather than
// asking git every few seconds: the task changed (a turn started or ended, a commit, a
// merge; task.updated also brings its title and sessions), or a tool call of one of its
// sessions finished. After a lost connection it reconnects and loads again.
func (p *ChangesPage) follow(ctx app.Context, c context.Context) {
	followTasks(c, func(conn *client.Conn) bool {
		// The task as listed (with its sessions) once subscribed: nothing is missed.
		tasks, err := api.ListTasks(c)
		i := slices.IndexFunc(tasks, func(t shared.Task) bool { return t.ID == p.taskID })
		if err != nil || i < 0 {
			return false
		}
		p.watch(ctx, c, conn, tasks[i])
		ctx.Dispatch(func(app.Context) { p.live = false })
		return true
	})
}

// watch follows one connection until it ends: the task's sessions are subscribed to as
// they appear, and each event that can change the summary refreshes it.
func (p *ChangesPage) watch(ctx app.Context, c context.Context, conn *client.Conn, task shared.Task) {
	subscribed := map[string]bool{}
	changed := func(t shared.Task) {
		for _, s := range t.Sessions {
			if !subscribed[s.ID] && conn.Subscribe(c, s.ID) == nil {
				subscribed[s.ID] = true
			}
		}
		title := shared.Visible(t.Title)
		ctx.Dispatch(func(ctx app.Context) {
			p.title, p.live = title, true
			p.refresh(ctx, app.Event{})
		})
	}
	changed(task)
	for env := range conn.Notifications() {
		var t shared.Task
		var m shared.Message
		switch {
		case env.Action == shared.ActionTaskUpdated && env.Decode(&t) == nil && t.ID == p.taskID:
			changed(t)
		case env.Action == shared.ActionMessageUpdated && env.Decode(&m) == nil && m.TaskID == p.taskID &&
			(m.Type == shared.TypeToolCall || m.Type == shared.TypeToolExecute) && m.Metadata != nil && m.Metadata.Status.IsTerminal():
			ctx.Dispatch(func(ctx app.Context) { p.refresh(ctx, app.Event{}) })
		}
	}
}

// OnDismount aborts what is in flight.
func (p *ChangesPage) OnDismount() {
	if p.cancel != nil {
		p.cancel()
	}
}

// refresh loads the summary again; asked while a load is under way, once more after it.
func (p *ChangesPage) refresh(ctx app.Context, _ app.Event) {
	if p.loading {
		p.stale = true
		return
	}
	p.load(ctx)
}

func (p *ChangesPage) load(ctx app.Context) {
	p.loading, p.stale, p.err = true, false, ""
	c, id := p.ctx, p.taskID
	ctx.Async(func() {
		ch, err := api.Changes(c, id)
		ctx.Dispatch(func(ctx app.Context) {
			if c.Err() != nil {
				return
			}
			p.loading = false
			if p.stale {
				defer p.load(ctx)
			}
			if err != nil {
				p.err = whyNot("Changes unavailable", err)
				return
			}
			p.show(ctx, ch)
		})
	})
}

// show puts a summary on the page. A file still listed as it was keeps its disclosure
// and diff; an open one that changed is fetched again, with the comment being written on it.
func (p *ChangesPage) show(ctx app.Context, ch shared.Changes) {
	before := map[string]int{}
	for i, r := range p.raw {
		before[r] = i
	}
	raw, files := make([]string, len(ch.Files)), make([]*fileView, len(ch.Files))
	var refetch []int
	for i, f := range ch.Files { // marked once, where they enter the page
		raw[i] = f.Path
		ch.Files[i].Path, ch.Files[i].OldPath = shared.Visible(f.Path), shared.Visible(f.OldPath)
		var v *fileView
		var was shared.ChangedFile
		if j, ok := before[f.Path]; ok {
			v, was = p.files[j], p.changes.Files[j]
		}
		switch {
		case v == nil:
		case ch.Files[i] == was:
			files[i] = v
		case v.open:
			files[i] = &fileView{line: v.line, note: v.note}
			refetch = append(refetch, i)
		}
	}
	p.changes, p.raw, p.files = &ch, raw, files
	for _, i := range refetch {
		p.toggle(i)(ctx, app.Event{})
	}
}

// whyNot says why something could not be done: what failed, then the reason.
func whyNot(what string, err error) string {
	if errors.Is(err, client.ErrUnreachable) {
		return what + ": the server is unreachable."
	}
	return what + ": " + shared.ErrorMessage(err)
}

// toggle opens or closes file i; the first opening fetches its diff.
func (p *ChangesPage) toggle(i int) app.EventHandler {
	return func(ctx app.Context, _ app.Event) {
		f := p.changes.Files[i]
		v := p.files[i]
		if v == nil {
			v = &fileView{}
			p.files[i] = v
		}
		v.open = !v.open
		if !v.open || v.diff != nil {
			return
		}
		v.err = ""
		c, id, path := context.Background(), p.taskID, p.raw[i]
		ctx.Async(func() {
			d, err := api.ChangeDiff(c, id, path)
			ctx.Dispatch(func(app.Context) {
				if err != nil {
					v.err = whyNot("Diff unavailable", err)
					return
				}
				d.File = f
				d.OldText, d.NewText = visiblePtr(d.OldText), visiblePtr(d.NewText)
				v.diff = &d
			})
		})
	}
}

func visiblePtr(s *string) *string {
	if s == nil {
		return nil
	}
	v := shared.Visible(*s)
	return &v
}

// Render draws the page; prerendered, it is the shell that says it is loading.
func (p *ChangesPage) Render() app.UI {
	return app.Div().Class("page", "changes-page").DataSet("live", p.live).Body(
		app.Header().Class("bar").Body(
			app.A().Class("back").Href("/").Text("← Tasks"),
			app.H1().Body(app.Text("Changes"), app.If(p.title != "", func() app.UI {
				return app.Span().Class("task-title").Text(" · " + p.title)
			})),
			disabled(app.Button().Type("button").Class("secondary"), p.loading).OnClick(p.refresh).Text("Refresh"),
		),
		app.If(p.err != "", func() app.UI { return app.P().Class("alert").Role("alert").Text(p.err) }),
		app.Main().Body(p.renderChanges(), p.renderReview(), p.renderLand()),
	)
}

func (p *ChangesPage) renderChanges() app.UI {
	ch := p.changes
	if ch == nil {
		return app.If(p.err == "", func() app.UI { return app.P().Class("empty").Text("Loading changes…") })
	}
	return app.Div().Body(
		app.P().Class("changes-head").Body(
			app.Code().Text(shared.Visible(ch.Branch)), app.Text(" from "), app.Code().Text(shared.Visible(ch.Base)),
			app.Text(" · "+plural(ch.Ahead, "commit")+" ahead, "+strconv.Itoa(ch.Behind)+" behind · "+plural(len(ch.Files), "file")+" changed"),
		),
		app.If(len(ch.Files) == 0, func() app.UI { return app.P().Class("empty").Text("No changes yet.") }),
		app.Ul().Class("changed-files").Body(app.Range(ch.Files).Slice(func(i int) app.UI { return p.renderFile(i) })),
	)
}

// land runs one step of landing the task (step "commit", "merge", "rebase" or "push"),
// then shows the summary it answers.
func (p *ChangesPage) land(step string) app.EventHandler {
	return func(ctx app.Context, _ app.Event) {
		message := strings.TrimSpace(p.message)
		if p.landing != "" || step == "commit" && message == "" {
			return
		}
		p.landing, p.landed, p.failed, p.clash = step, "", "", nil
		c, id := context.Background(), p.taskID
		ctx.Async(func() {
			var ch shared.Changes
			var err error
			switch step {
			case "commit":
				ch, err = api.Commit(c, id, message)
			case "push":
				ch, err = api.Push(c, id)
			default:
				ch, err = api.Merge(c, id, step)
			}
			ctx.Dispatch(func(ctx app.Context) {
				p.landing = ""
				if err != nil {
					p.failed, p.clash = whyNot(landingNames[step]+" failed", err), shared.ConflictPaths(err)
					return
				}
				if step == "commit" {
					p.message = ""
				}
				p.landed = landingNames[step] + " done."
				p.show(ctx, ch)
			})
		})
	}
}

// landingNames name the landing steps for people.
var landingNames = map[string]string{"commit": "Commit", "merge": "Merge", "rebase": "Rebase", "push": "Push"}

// renderLand draws the landing steps: a commit message and its button, merge or rebase
// onto the base, push; and what the last step did or why it failed.
func (p *ChangesPage) renderLand() app.UI {
	ch := p.changes
	if ch == nil {
		return nil
	}
	base := shared.Visible(ch.Base)
	busy := p.landing != ""
	step := func(name, label, title string) app.UI {
		return disabled(app.Button().Type("button").Class("secondary"), busy).Title(attrText(title)).OnClick(p.land(name)).
			Text(map[bool]string{true: label + "…", false: label}[p.landing == name])
	}
	return app.Section().Class("land").Aria("label", "Land the change").Body(
		app.H2().Text("Land it"),
		app.Form().Class("commit-form").OnSubmit(p.land("commit")).Body(
			app.Label().For("commit-message").Text("Commit message"),
			app.Textarea().ID("commit-message").Rows(2).Placeholder("What the task changed, and why").
				Text(p.message).OnInput(bind(&p.message)),
			disabled(app.Button().Type("submit"), busy || strings.TrimSpace(p.message) == "").
				Text(map[bool]string{true: "Committing…", false: "Commit all changes"}[p.landing == "commit"]),
		),
		app.Div().Class("land-actions").Body(
			step("merge", "Merge into "+base, "A merge commit of the task's branch on "+base),
			step("rebase", "Rebase onto "+base, "The task's commits replayed on "+base+", which then moves to them"),
			step("push", "Push", "Push the task's branch to the repository's remote origin"),
		),
		app.If(p.landed != "", func() app.UI { return app.P().Class("land-done").Role("status").Text(p.landed) }),
		app.If(p.failed != "", func() app.UI {
			return app.Div().Class("alert", "land-failed").Role("alert").Body(
				app.P().Text(p.failed),
				app.Ul().Class("conflicts").Body(app.Range(p.clash).Slice(func(i int) app.UI {
					return app.Li().Body(app.Code().Text(shared.Visible(p.clash[i])))
				})),
			)
		}),
	)
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// fileLabel is a file's visible label, from the summary alone.
func fileLabel(f shared.ChangedFile) string {
	name := f.Path
	if f.OldPath != "" {
		name = f.OldPath + " → " + f.Path
	}
	if f.Binary {
		return name + " · " + f.Status + " · binary"
	}
	return name + " · " + f.Status + " · +" + strconv.Itoa(f.AddedLines) + " \u2212" + strconv.Itoa(f.RemovedLines)
}

func (p *ChangesPage) renderFile(i int) app.UI {
	f := p.changes.Files[i]
	v := p.files[i]
	open := v != nil && v.open
	label := fileLabel(f)
	bodyID := "file-" + strconv.Itoa(i)
	return app.Li().Class("disclosure", "changed-file", "file-"+f.Status).Body(
		app.Button().Class("disclosure-toggle").Type("button").
			Aria("label", attrText(disclosureName(open, "diff", label))).
			Aria("expanded", strconv.FormatBool(open)).Aria("controls", bodyID).
			OnClick(p.toggle(i)).
			Body(app.Span().Class("chevron").Aria("hidden", "true"), app.Text(label)),
		app.If(open, func() app.UI {
			return app.Div().ID(bodyID).Class("transcript").Body(renderFileDiff(v, p.pickLine(i)),
				app.If(v.diff != nil && !v.diff.File.Binary, func() app.UI { return p.commentForm(i, v) }))
		}),
	)
}

// commentForm adds a review comment on a line of file i.
func (p *ChangesPage) commentForm(i int, v *fileView) app.UI {
	id := "comment-" + strconv.Itoa(i)
	return app.Form().Class("comment-form").OnSubmit(p.addComment(i)).Body(
		app.Div().Class("field", "comment-line").Body(app.Label().For(id+"-line").Text("Line"),
			app.Input().ID(id+"-line").Type("number").Min(1).Required(true).Value(v.line).OnInput(bind(&v.line))),
		app.Div().Class("field", "comment-note").Body(app.Label().For(id+"-note").Text("Comment"),
			app.Textarea().ID(id+"-note").Rows(2).Required(true).Text(v.note).OnInput(bind(&v.note))),
		app.Button().Type("submit").Class("secondary").Aria("label", attrText("Add comment on "+p.changes.Files[i].Path)).Text("Add comment"),
	)
}

// pickLine starts a comment on a line of file i: its number goes in the form, and the
// comment field takes the focus.
func (p *ChangesPage) pickLine(i int) func(line int) app.EventHandler {
	return func(line int) app.EventHandler {
		return func(ctx app.Context, _ app.Event) {
			p.files[i].line = strconv.Itoa(line)
			ctx.Defer(func(app.Context) {
				if note := app.Window().GetElementByID("comment-" + strconv.Itoa(i) + "-note"); note.Truthy() {
					note.Call("focus")
				}
			})
		}
	}
}

// addComment keeps the comment written on file i until the review is sent.
func (p *ChangesPage) addComment(i int) app.EventHandler {
	return func(ctx app.Context, _ app.Event) {
		v := p.files[i]
		line, err := strconv.Atoi(strings.TrimSpace(v.line))
		if err != nil || line < 1 || strings.TrimSpace(v.note) == "" {
			return
		}
		p.comments = append(p.comments, shared.ReviewComment{Path: p.raw[i], Line: line, Text: strings.TrimSpace(v.note)})
		v.line, v.note, p.reviewed = "", "", ""
	}
}

// sendReview sends every pending comment to the task's newest session as one prompt.
func (p *ChangesPage) sendReview(ctx app.Context, _ app.Event) {
	if p.sending || len(p.comments) == 0 {
		return
	}
	p.sending, p.notSent = true, ""
	c, id, comments := context.Background(), p.taskID, p.comments
	ctx.Async(func() {
		m, err := api.Review(c, id, comments)
		ctx.Dispatch(func(app.Context) {
			p.sending = false
			if err != nil {
				p.notSent = whyNot("Not sent", err)
				return
			}
			p.comments, p.reviewed = nil, m.SessionID
		})
	})
}

// removeComment drops pending comment i.
func (p *ChangesPage) removeComment(i int) app.EventHandler {
	return func(app.Context, app.Event) { p.comments = slices.Delete(p.comments, i, i+1) }
}

// renderReview lists the pending comments with Send to agent, or where the last review went.
func (p *ChangesPage) renderReview() app.UI {
	if len(p.comments) == 0 {
		return app.If(p.reviewed != "", func() app.UI {
			return app.P().Class("land-done").Role("status").Body(app.Text("Sent to the agent as a prompt. "),
				app.A().Href("/sessions/"+p.reviewed).Text("Open the session"))
		})
	}
	return app.Section().Class("review").Aria("label", "Review comments").Body(
		app.H2().Text("Review comments"),
		app.Ul().Class("comments").Body(app.Range(p.comments).Slice(func(i int) app.UI {
			c := p.comments[i]
			where := shared.Visible(c.Path) + ":" + strconv.Itoa(c.Line)
			return app.Li().Body(app.Code().Text(where), app.Text(" "+shared.Visible(c.Text)+" "),
				app.Button().Type("button").Class("secondary").Aria("label", attrText("Remove the comment on "+where)).
					OnClick(p.removeComment(i)).Text("Remove"))
		})),
		disabled(app.Button().Type("button"), p.sending).OnClick(p.sendReview).
			Text(map[bool]string{true: "Sending…", false: "Send to agent"}[p.sending]),
		app.If(p.notSent != "", func() app.UI { return app.P().Class("alert").Role("alert").Text(p.notSent) }),
	)
}

// renderFileDiff draws a file's diff; pick, when a new line's number is pressed, starts a
// comment on that line.
func renderFileDiff(v *fileView, pick func(line int) app.EventHandler) app.UI {
	switch d := v.diff; {
	case d != nil && d.File.Binary:
		return app.P().Class("out-note").Text("A binary file: no diff to show.")
	case d != nil && d.Omitted:
		return app.P().Class("out-note").Text("This file is too large to show here (over " + sizeLabel(shared.DiffSideLimit) + ").")
	case d != nil:
		return diffView(derefText(d.OldText), derefText(d.NewText), pick)
	case v.err != "":
		return app.P().Class("out-error").Role("alert").Text(v.err)
	}
	return app.P().Class("out-note", "loading").Aria("live", "polite").Text("Loading…")
}

// changesLink leads from a task with a worktree to its Changes page (nothing for others).
func changesLink(t shared.Task) app.UI {
	return app.If(t.Worktree != "", func() app.UI {
		return app.A().Class("button", "secondary").Href("/tasks/"+t.ID+"/changes").
			Aria("label", attrText("Changes of task "+t.Title)).Text("Changes")
	})
}
