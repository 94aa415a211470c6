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

// Handlers made by one function for different values (a file's, a line's, a step's) go
// with app.EventScope of the value: go-app tells two handlers apart by their code alone,
// so an element drawn again for another value would keep the first one's.

// ChangesPage is /tasks/{id}/changes: the whole of what a task on a repository changed
// against its base, for review. Every file is open, but for those over collapseLines
// changed lines, which open on a click or with Expand all; diffs are fetched a few at a
// time (parallelDiffs) and drawn like a tool call's (diffView), and pressing a new line's
// number starts a comment on it, sent to the task's agent with the others as one prompt.
type ChangesPage struct {
	app.Compo

	taskID  string
	attempt string // the session of the attempt shown (?attempt=), "" for the task's own change
	title   string // the task's
	repo    string // the task's repository
	agent   string // the agent of the task's newest session; "" when it has none
	known   bool   // the task's sessions are known (agent is set)
	live    bool   // the page follows the task's events (data-live, for tests and people alike)
	stale   bool   // an event came while the summary was loading: load it again after
	changes *shared.Changes
	err     string
	loading bool
	raw     []string           // the files' paths as listed: the diff route's names for them
	files   []*fileView        // by index in changes.Files
	queue   []diffFetch        // diffs to fetch, in page order
	fetches int                // diff requests in flight
	ctx     context.Context    // the page's, until it is dismounted
	cancel  context.CancelFunc // of ctx

	message string   // the commit message being written
	confirm string   // the landing step awaiting confirmation ("merge", "rebase", "push"), or ""
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
	open     bool
	diff     *shared.FileDiff
	err      string
	fetching bool   // its diff is queued or in flight
	line     int    // the new line a comment is being written on; 0: none
	note     string // that comment
}

// diffFetch is one diff to fetch: the file's view, its route name and its summary.
type diffFetch struct {
	v    *fileView
	path string
	file shared.ChangedFile
}

// collapseLines is the most changed lines of a file that opens by itself; a larger one
// waits for a click, so a change with a generated file does not fetch it unasked.
const collapseLines = 200

// parallelDiffs bounds the diff requests in flight.
const parallelDiffs = 3

func newChangesPage() app.Composer { return &ChangesPage{} }

// OnMount loads the summary, in the browser only, and follows the task's events.
func (p *ChangesPage) OnMount(ctx app.Context) {
	p.taskID = strings.TrimSuffix(strings.TrimPrefix(ctx.Page().URL().Path, "/tasks/"), "/changes")
	p.attempt = ctx.Page().URL().Query().Get("attempt")
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
		title, repo, agent := shared.Visible(t.Title), shared.Visible(t.Repo), ""
		if len(t.Sessions) > 0 {
			agent = t.Sessions[0].Agent // the newest
		}
		ctx.Dispatch(func(ctx app.Context) {
			p.title, p.repo, p.agent, p.known, p.live = title, repo, agent, true, true
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
	c, id, attempt := p.ctx, p.taskID, p.attempt
	ctx.Async(func() {
		changes := func() (shared.Changes, error) { return api.Changes(c, id) }
		if attempt != "" {
			changes = func() (shared.Changes, error) { return api.AttemptChanges(c, id, attempt) }
		}
		ch, err := changes()
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

// show puts a summary on the page. A file still listed as it was keeps its view; one that
// changed keeps whether it is open and the comment being written on it, and is fetched
// again when open; a new one opens unless it is large.
func (p *ChangesPage) show(ctx app.Context, ch shared.Changes) {
	before := map[string]int{}
	for i, r := range p.raw {
		before[r] = i
	}
	raw, files := make([]string, len(ch.Files)), make([]*fileView, len(ch.Files))
	for i, f := range ch.Files { // marked once, where they enter the page
		raw[i] = f.Path
		ch.Files[i].Path, ch.Files[i].OldPath = shared.Visible(f.Path), shared.Visible(f.OldPath)
		j, was := before[f.Path]
		switch {
		case !was:
			files[i] = &fileView{open: f.AddedLines+f.RemovedLines <= collapseLines}
		case ch.Files[i] == p.changes.Files[j]:
			files[i] = p.files[j]
		default:
			v := p.files[j]
			files[i] = &fileView{open: v.open, line: v.line, note: v.note}
		}
	}
	p.changes, p.raw, p.files = &ch, raw, files
	for i, v := range files {
		if v.open {
			p.fetch(ctx, i)
		}
	}
}

// whyNot says why something could not be done: what failed, then the reason.
func whyNot(what string, err error) string {
	if errors.Is(err, client.ErrUnreachable) {
		return what + ": the server is unreachable."
	}
	return what + ": " + shared.ErrorMessage(err)
}

// toggle opens or closes file i; opening fetches its diff if it has none yet.
func (p *ChangesPage) toggle(i int) app.EventHandler {
	return func(ctx app.Context, _ app.Event) {
		v := p.files[i]
		v.open = !v.open
		if v.open {
			p.fetch(ctx, i)
		}
	}
}

// expandAll opens every file, or closes them all when all are open.
func (p *ChangesPage) expandAll(ctx app.Context, _ app.Event) {
	open := !p.allOpen()
	for i, v := range p.files {
		v.open = open
		if open {
			p.fetch(ctx, i)
		}
	}
}

func (p *ChangesPage) allOpen() bool {
	return !slices.ContainsFunc(p.files, func(v *fileView) bool { return !v.open })
}

// fetch queues file i's diff unless it has it, is fetching it, or is binary (the summary
// says all there is).
func (p *ChangesPage) fetch(ctx app.Context, i int) {
	v, f := p.files[i], p.changes.Files[i]
	if v.diff != nil || v.fetching || f.Binary {
		return
	}
	v.fetching, v.err = true, ""
	p.queue = append(p.queue, diffFetch{v: v, path: p.raw[i], file: f})
	p.pump(ctx)
}

// pump starts queued fetches while fewer than parallelDiffs are in flight; a file closed
// meanwhile is skipped, and fetched when opened again.
func (p *ChangesPage) pump(ctx app.Context) {
	for p.fetches < parallelDiffs && len(p.queue) > 0 {
		job := p.queue[0]
		p.queue = p.queue[1:]
		if !job.v.open {
			job.v.fetching = false
			continue
		}
		p.fetches++
		c, id, attempt := p.ctx, p.taskID, p.attempt
		ctx.Async(func() {
			diff := func() (shared.FileDiff, error) { return api.ChangeDiff(c, id, job.path) }
			if attempt != "" {
				diff = func() (shared.FileDiff, error) { return api.AttemptDiff(c, id, attempt, job.path) }
			}
			d, err := diff()
			ctx.Dispatch(func(ctx app.Context) {
				if c.Err() != nil {
					return
				}
				p.fetches--
				job.v.fetching = false
				if err != nil {
					job.v.err = whyNot("Diff unavailable", err)
				} else {
					d.File = job.file
					d.OldText, d.NewText = visiblePtr(d.OldText), visiblePtr(d.NewText)
					job.v.diff = &d
				}
				p.pump(ctx)
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
		taskBar("Changes", p.title, p.err, p.loading, p.refresh),
		app.If(p.attempt != "", func() app.UI { // an attempt lands from its task's Attempts page
			return app.Main().Body(p.renderChanges(),
				app.P().Body(app.A().Href("/tasks/"+p.taskID+"/attempts").Text("Back to the attempts")))
		}).Else(func() app.UI {
			return app.Main().Body(p.renderChanges(), p.renderReview(), p.renderLand())
		}),
	)
}

// taskBar is the head of a page of one task (what it shows, the task's title, a Refresh
// button), with the page's error under it.
func taskBar(what, title, err string, loading bool, refresh app.EventHandler) app.UI {
	return app.Div().Body(
		app.Header().Class("bar").Body(
			app.A().Class("back").Href("/").Text("← Tasks"),
			app.H1().Body(app.Text(what), app.If(title != "", func() app.UI {
				return app.Span().Class("task-title").Text(" · " + title)
			})),
			disabled(app.Button().Type("button").Class("secondary"), loading).OnClick(refresh).Text("Refresh"),
		),
		app.If(err != "", func() app.UI { return app.P().Class("alert").Role("alert").Text(err) }),
	)
}

func (p *ChangesPage) renderChanges() app.UI {
	ch := p.changes
	if ch == nil {
		return app.If(p.err == "", func() app.UI { return app.P().Class("empty").Text("Loading changes…") })
	}
	base := shared.Visible(ch.Base)
	state, empty := "", "No file differs from "+base+"."
	if ch.Ahead == 0 && len(ch.Files) == 0 { // new, or landed: either way nothing to count
		empty = "Nothing to land: " + base + " has everything on this branch."
	} else {
		state = " · " + plural(ch.Ahead, "commit") + " ahead, " + strconv.Itoa(ch.Behind) + " behind · " + plural(len(ch.Files), "file") + " changed"
	}
	return app.Div().Body(
		app.Div().Class("changes-head").Body(
			app.P().Body(app.Code().Text(shared.Visible(ch.Branch)), app.Text(" from "), app.Code().Text(base), app.Text(state)),
			app.If(len(ch.Files) > 0, func() app.UI {
				return app.Button().Type("button").Class("secondary").OnClick(p.expandAll).
					Text(map[bool]string{true: "Collapse all", false: "Expand all"}[p.allOpen()])
			}),
		),
		app.If(len(ch.Files) == 0, func() app.UI { return app.P().Class("empty").Text(empty) }).
			Else(func() app.UI { return p.reviewHint() }),
		app.Ul().Class("changed-files").Body(app.Range(ch.Files).Slice(func(i int) app.UI { return p.renderFile(i) })),
	)
}

// mayReview is whether comments can be written: the task's newest session is of an agent
// that takes requests (the built-in shell agent would run them as a command).
func (p *ChangesPage) mayReview() bool {
	return p.attempt == "" && p.known && p.agent != "" && p.agent != shared.ShellAgent
}

// reviewHint says how to comment on the change, or why it cannot be.
func (p *ChangesPage) reviewHint() app.UI {
	var hint string
	switch {
	case !p.known:
		return nil
	case p.agent == "":
		hint = "Start a session on this task to send its agent review comments."
	case p.agent == shared.ShellAgent:
		hint = "Review comments go to the task's agent as a prompt, but this task's newest session is of the built-in shell agent, " +
			"which would run them as a shell command. To review here, start a session of another agent on this task."
	default:
		hint = "Press a line's number to comment on it; Send to agent sends your comments together, as one prompt."
	}
	return app.P().Class("review-hint").Text(hint)
}

// land runs one step of landing the task (step "commit", "merge", "rebase" or "push"),
// then shows the summary it answers.
func (p *ChangesPage) land(step string) app.EventHandler {
	return func(ctx app.Context, _ app.Event) {
		message := strings.TrimSpace(p.message)
		if p.landing != "" || step == "commit" && message == "" {
			return
		}
		p.confirm, p.landing, p.landed, p.failed, p.clash = "", step, "", "", nil
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
					if box := app.Window().GetElementByID("commit-message"); box.Truthy() {
						box.Set("value", "") // the box's text is its value, which rendering does not reset
					}
				}
				p.landed = landedText(step, shared.Visible(ch.Branch), shared.Visible(ch.Base))
				p.show(ctx, ch)
			})
		})
	}
}

// landingNames name the landing steps for people.
var landingNames = map[string]string{"commit": "Commit", "merge": "Merge", "rebase": "Rebase", "push": "Push"}

// landedText says what a landing step did.
func landedText(step, branch, base string) string {
	switch step {
	case "merge":
		return "Merged into " + base + "."
	case "rebase":
		return "Rebased onto " + base + ", which is now at the task's last commit."
	case "push":
		return "Pushed " + branch + " to origin."
	}
	return "Committed."
}

// ask shows the confirmation of a landing step ("" hides it), and gives it the focus.
func (p *ChangesPage) ask(step string) app.EventHandler {
	return func(ctx app.Context, _ app.Event) {
		p.confirm, p.landed, p.failed, p.clash = step, "", "", nil
		ctx.Defer(func(app.Context) {
			if yes := app.Window().GetElementByID("land-yes"); yes.Truthy() {
				yes.Call("focus")
			}
		})
	}
}

// question is what confirming a landing step asks, naming where it lands.
func (p *ChangesPage) question(step string) string {
	branch, base := shared.Visible(p.changes.Branch), shared.Visible(p.changes.Base)
	where := ""
	if p.repo != "" {
		where = " in " + p.repo
	}
	switch step {
	case "merge":
		return "Merge " + branch + " into " + base + where + "? A merge commit goes on " + base + "; where " + base + " is checked out, that checkout moves too."
	case "rebase":
		return "Rebase " + branch + " onto " + base + where + "? Its commits are replayed on " + base + ", which then moves to them."
	}
	return "Push " + branch + " to the remote origin of the repository" + where + "?"
}

// renderLand draws the landing steps: a commit message and its button, merge or rebase
// onto the base, push, each asked again naming its target; and what the last step did or
// why it failed.
func (p *ChangesPage) renderLand() app.UI {
	ch := p.changes
	if ch == nil {
		return nil
	}
	base := shared.Visible(ch.Base)
	busy := p.landing != ""
	step := func(name, label, title string) app.UI {
		return disabled(app.Button().Type("button").Class("secondary"), busy).Title(attrText(title)).OnClick(p.ask(name), app.EventScope(name)).
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
		app.If(p.confirm == "", func() app.UI {
			return app.Div().Class("land-actions").Body(
				step("merge", "Merge into "+base, "A merge commit of the task's branch on "+base),
				step("rebase", "Rebase onto "+base, "The task's commits replayed on "+base+", which then moves to them"),
				step("push", "Push", "Push the task's branch to the repository's remote origin"),
			)
		}).Else(func() app.UI {
			return app.Div().Class("confirm", "land-confirm").Role("group").Aria("label", "Confirm: "+landingNames[p.confirm]).Body(
				app.P().Text(p.question(p.confirm)),
				app.Button().ID("land-yes").Type("button").OnClick(p.land(p.confirm), app.EventScope(p.confirm)).Text("Yes, "+strings.ToLower(landingNames[p.confirm])),
				app.Button().Type("button").Class("secondary").OnClick(p.ask(""), app.EventScope("")).Text("Cancel"),
			)
		}),
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
	label := fileLabel(f)
	bodyID := "file-" + strconv.Itoa(i)
	return app.Li().Class("disclosure", "changed-file", "file-"+f.Status).Body(
		app.Button().Class("disclosure-toggle").Type("button").
			Aria("label", attrText(disclosureName(v.open, "diff", label))).
			Aria("expanded", strconv.FormatBool(v.open)).Aria("controls", bodyID).
			OnClick(p.toggle(i), app.EventScope(i)).
			Body(app.Span().Class("chevron").Aria("hidden", "true"), app.Text(label)),
		app.If(v.open, func() app.UI {
			return app.Div().ID(bodyID).Class("transcript").Body(p.renderFileDiff(i))
		}),
	)
}

// renderFileDiff draws file i's diff, its new lines taking comments when the page may.
func (p *ChangesPage) renderFileDiff(i int) app.UI {
	switch v, d := p.files[i], p.files[i].diff; {
	case p.changes.Files[i].Binary:
		return app.P().Class("out-note").Text("A binary file: no diff to show.")
	case d != nil && d.Omitted:
		return app.P().Class("out-note").Text("This file is too large to show here (over " + sizeLabel(shared.DiffSideLimit) + ").")
	case d != nil:
		var review *lineReview
		if p.mayReview() {
			review = p.lineReview(i)
		}
		return diffView(d.Hunks, d.HunksTruncated, derefText(d.OldText) == derefText(d.NewText), review)
	case v.err != "":
		return app.P().Class("out-error").Role("alert").Text(v.err)
	}
	return app.P().Class("out-note", "loading").Aria("live", "polite").Text("Loading…")
}

// lineReview is file i's comments: a line's pending comments under it, and the comment
// being written under its line.
func (p *ChangesPage) lineReview(i int) *lineReview {
	v := p.files[i]
	onLine := map[int][]int{} // pending comments by line
	for j, c := range p.comments {
		if c.Path == p.raw[i] {
			onLine[c.Line] = append(onLine[c.Line], j)
		}
	}
	return &lineReview{
		pick: func(line int) app.EventHandler {
			return func(ctx app.Context, _ app.Event) {
				if v.line != line {
					v.line, v.note = line, ""
				}
				ctx.Defer(func(app.Context) {
					if note := app.Window().GetElementByID("comment-" + strconv.Itoa(i)); note.Truthy() {
						note.Set("value", v.note) // a box drawn again keeps its value, which rendering does not reset
						note.Call("focus")
					}
				})
			}
		},
		under: func(line int) app.UI {
			pending := onLine[line]
			if len(pending) == 0 && v.line != line {
				return nil
			}
			return app.Div().Class("line-notes").Body(
				app.Range(pending).Slice(func(k int) app.UI { return p.renderComment(pending[k], false) }),
				app.If(v.line == line, func() app.UI { return p.commentForm(i) }),
			)
		},
	}
}

// commentForm writes a review comment on the picked line of file i.
func (p *ChangesPage) commentForm(i int) app.UI {
	v := p.files[i]
	id := "comment-" + strconv.Itoa(i)
	return app.Form().Class("comment-form").OnSubmit(p.addComment(i), app.EventScope(i)).Body(
		app.Label().For(id).Text("Comment on line "+strconv.Itoa(v.line)),
		app.Textarea().ID(id).Rows(3).Required(true).Text(v.note).OnInput(bind(&v.note)),
		app.Div().Class("comment-actions").Body(
			app.Button().Type("submit").Text("Add comment"),
			app.Button().Type("button").Class("secondary").OnClick(p.dropForm(i), app.EventScope(i)).Text("Cancel"),
		),
	)
}

// dropForm closes the comment being written on file i.
func (p *ChangesPage) dropForm(i int) app.EventHandler {
	return func(app.Context, app.Event) { p.files[i].line, p.files[i].note = 0, "" }
}

// addComment keeps the comment written on file i until the review is sent.
func (p *ChangesPage) addComment(i int) app.EventHandler {
	return func(ctx app.Context, _ app.Event) {
		v := p.files[i]
		if v.line < 1 || strings.TrimSpace(v.note) == "" {
			return
		}
		p.comments = append(p.comments, shared.ReviewComment{Path: p.raw[i], Line: v.line, Text: strings.TrimSpace(v.note)})
		v.line, v.note, p.reviewed = 0, "", ""
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

// removeComment drops pending comment j.
func (p *ChangesPage) removeComment(j int) app.EventHandler {
	return func(app.Context, app.Event) { p.comments = slices.Delete(p.comments, j, j+1) }
}

// renderComment draws pending comment j, where it is (file:line) when where is set.
func (p *ChangesPage) renderComment(j int, where bool) app.UI {
	c := p.comments[j]
	at := shared.Visible(c.Path) + ":" + strconv.Itoa(c.Line)
	return app.Div().Class("pending-comment").Body(
		app.If(where, func() app.UI { return app.Code().Text(at) }),
		app.Span().Class("comment-text").Text(shared.Visible(c.Text)),
		app.Button().Type("button").Class("secondary").Aria("label", attrText("Remove the comment on "+at)).
			OnClick(p.removeComment(j), app.EventScope(j)).Text("Remove"),
	)
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
		app.Ul().Class("comments").Body(app.Range(p.comments).Slice(func(j int) app.UI {
			return app.Li().Body(p.renderComment(j, true))
		})),
		disabled(app.Button().Type("button"), p.sending).OnClick(p.sendReview).
			Text(map[bool]string{true: "Sending…", false: "Send to agent"}[p.sending]),
		app.If(p.notSent != "", func() app.UI { return app.P().Class("alert").Role("alert").Text(p.notSent) }),
	)
}

// changesLink leads from a task with a worktree to its Changes page (nothing for others).
func changesLink(t shared.Task) app.UI {
	return app.If(t.Worktree != "", func() app.UI {
		return app.A().Class("button", "secondary").Href("/tasks/"+t.ID+"/changes").
			Aria("label", attrText("Changes of task "+t.Title)).Text("Changes")
	})
}
