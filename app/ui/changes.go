package ui

import (
	"context"
	"errors"
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
	changes *shared.Changes
	err     string
	loading bool
	raw     []string           // the files' paths as listed: the diff route's names for them
	files   []*fileView        // by index in changes.Files
	cancel  context.CancelFunc // of the page's fetches

	message string        // the commit message being written
	landing string        // the landing step in flight ("commit", "merge", "rebase", "push"), or ""
	landed  string        // what the last step did, for people
	failed  *shared.Error // why the last step failed (a conflict names its files)
}

// fileView is one file's disclosure.
type fileView struct {
	open bool
	diff *shared.FileDiff
	err  string
}

func newChangesPage() app.Composer { return &ChangesPage{} }

// OnMount loads the summary, in the browser only.
func (p *ChangesPage) OnMount(ctx app.Context) {
	p.taskID = strings.TrimSuffix(strings.TrimPrefix(ctx.Page().URL().Path, "/tasks/"), "/changes")
	ctx.Page().SetTitle("Changes · Conch")
	c, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	p.load(ctx, c)
}

// OnDismount aborts what is in flight.
func (p *ChangesPage) OnDismount() {
	if p.cancel != nil {
		p.cancel()
	}
}

func (p *ChangesPage) load(ctx app.Context, c context.Context) {
	p.loading, p.err = true, ""
	id := p.taskID
	ctx.Async(func() {
		ch, err := api.Changes(c, id)
		ctx.Dispatch(func(app.Context) {
			if c.Err() != nil {
				return
			}
			p.loading = false
			if err != nil {
				p.err = whyNot("Changes unavailable", err)
				return
			}
			p.show(ch)
		})
	})
}

// show puts a summary on the page; the diffs opened so far are closed and fetched afresh
// when opened again.
func (p *ChangesPage) show(ch shared.Changes) {
	p.raw = make([]string, len(ch.Files))
	for i, f := range ch.Files { // marked once, where they enter the page
		p.raw[i] = f.Path
		ch.Files[i].Path, ch.Files[i].OldPath = shared.Visible(f.Path), shared.Visible(f.OldPath)
	}
	p.changes, p.files = &ch, make([]*fileView, len(ch.Files))
}

func (p *ChangesPage) refresh(ctx app.Context, _ app.Event) {
	p.cancel()
	c, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	p.load(ctx, c)
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
	return app.Div().Class("page", "changes-page").Body(
		app.Header().Class("bar").Body(
			app.A().Class("back").Href("/").Text("← Tasks"),
			app.H1().Text("Changes"),
			disabled(app.Button().Type("button").Class("secondary"), p.loading).OnClick(p.refresh).Text("Refresh"),
		),
		app.If(p.err != "", func() app.UI { return app.P().Class("alert").Role("alert").Text(p.err) }),
		app.Main().Body(p.renderChanges(), p.renderLand()),
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
		p.landing, p.landed, p.failed = step, "", nil
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
					p.failed = &shared.Error{Code: shared.ErrorCode(err), Message: whyNot(landingNames[step]+" failed", err)}
					if e := (*shared.Error)(nil); errors.As(err, &e) {
						p.failed.Paths = e.Paths
					}
					return
				}
				if step == "commit" {
					p.message = ""
				}
				p.landed = landingNames[step] + " done."
				p.show(ch)
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
		app.If(p.failed != nil, func() app.UI {
			return app.Div().Class("alert", "land-failed").Role("alert").Body(
				app.P().Text(p.failed.Message),
				app.Ul().Class("conflicts").Body(app.Range(p.failed.Paths).Slice(func(i int) app.UI {
					return app.Li().Body(app.Code().Text(shared.Visible(p.failed.Paths[i])))
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
		app.If(open, func() app.UI { return app.Div().ID(bodyID).Class("transcript").Body(renderFileDiff(v)) }),
	)
}

func renderFileDiff(v *fileView) app.UI {
	switch d := v.diff; {
	case d != nil && d.File.Binary:
		return app.P().Class("out-note").Text("A binary file: no diff to show.")
	case d != nil && d.Omitted:
		return app.P().Class("out-note").Text("This file is too large to show here (over " + sizeLabel(shared.DiffSideLimit) + ").")
	case d != nil:
		return diffView(derefText(d.OldText), derefText(d.NewText))
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
