package ui

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/shared"
)

// AttemptsPage is /tasks/{id}/attempts: one prompt given to several agents, each in a
// worktree of its own, compared on evidence in one table (the check's exit code and
// duration, the size of the change, the commands, tokens, cost, wall time), and one of
// them kept. The table comes from the list alone, which carries no body: a check's
// output is fetched when its cell is opened, a file's diffs when two attempts are
// compared on it. While attempts run the list is read again every pollEvery.
type AttemptsPage struct {
	app.Compo

	taskID  string
	title   string
	list    *shared.AttemptList
	err     string
	loading bool
	page    app.Context // OnMount's: what it dispatches reaches the page, whichever element asked
	ctx     context.Context
	cancel  context.CancelFunc
	sortBy  string // a column of attemptColumns
	desc    bool

	agents   []shared.Agent // the profiles an attempt may run
	prompt   string
	check    string
	chosen   []string // the agents of the next attempts, in order
	pick     string   // the agent the Add button adds
	maxCost  string
	starting bool
	startErr string

	output *checkOutput // the check output opened, nil when none

	cmpPath   string
	cmpA      string // session ids of the two attempts compared
	cmpB      string
	cmp       [2]*compared
	comparing bool

	keep    string // the attempt whose Keep awaits confirmation
	keeping bool
	kept    string // what the last Keep did, for people
	keepErr string
	// acted is when this person last started attempts or continued one whose work no list
	// has shown begun yet (zero once one shows an attempt running): the list is read again
	// until it does, however long the agent takes to start.
	acted    time.Time
	cont     string // the attempt a follow-up prompt is being written for
	contText string
	contErr  string
}

// checkOutput is one attempt's check output, fetched on open.
type checkOutput struct {
	n         int
	sessionID string
	messageID string
	snap      *shared.ShellOutputSnapshot
	err       string
}

// compared is one side of a file compared across two attempts.
type compared struct {
	label string
	diff  *shared.FileDiff
	err   string
}

// pollEvery is how often the list is read again while an attempt runs, and after a
// person started or continued attempts until a list shows one running (their turns may
// not have begun when the answer came: an agent that stopped when idle starts again
// first), for at most actionWait.
const (
	pollEvery  = 2 * time.Second
	actionWait = 2 * time.Minute
)

// attemptColumns are the table's sortable columns: a key and its header.
var attemptColumns = [][2]string{
	{"n", "#"}, {"agent", "Agent"}, {"state", "State"}, {"check", "Check"}, {"files", "Files"},
	{"lines", "Lines"}, {"commands", "Commands"}, {"tokens", "Tokens"}, {"cost", "Cost"}, {"wall", "Wall time"},
}

func newAttemptsPage() app.Composer { return &AttemptsPage{sortBy: "n"} }

// OnMount loads the task, the agents and the attempts, in the browser only, and reads
// the attempts again while any runs.
func (p *AttemptsPage) OnMount(ctx app.Context) {
	p.taskID = strings.TrimSuffix(strings.TrimPrefix(ctx.Page().URL().Path, "/tasks/"), "/attempts")
	ctx.Page().SetTitle("Attempts · Conch")
	p.page = ctx
	p.ctx, p.cancel = context.WithCancel(context.Background())
	c, id := p.ctx, p.taskID
	ctx.Async(func() {
		task, terr := api.GetTask(c, id)
		agents, aerr := api.Agents(c)
		ctx.Dispatch(func(ctx app.Context) {
			if terr == nil {
				p.title = shared.Visible(task.Title)
			}
			if aerr == nil && len(agents) > 0 {
				p.agents, p.pick = agents, agents[0].Name
				p.chosen = []string{agents[0].Name, agents[0].Name}
			}
		})
	})
	p.load()
	ctx.Async(func() {
		t := time.NewTicker(pollEvery)
		defer t.Stop()
		for {
			select {
			case <-c.Done():
				return
			case <-t.C:
				ctx.Dispatch(func(ctx app.Context) {
					if p.polling(time.Now()) && !p.loading {
						p.load()
					}
				})
			}
		}
	})
}

func (p *AttemptsPage) OnDismount() {
	if p.cancel != nil {
		p.cancel()
	}
}

// polling says whether the list is to be read again at now: while an attempt runs, and
// after this person's action until a list shows its work begun.
func (p *AttemptsPage) polling(now time.Time) bool {
	return p.running() || !p.acted.IsZero() && now.Sub(p.acted) < actionWait
}

// running says whether an attempt is starting, running or being checked.
func (p *AttemptsPage) running() bool {
	return p.list != nil && slices.ContainsFunc(p.list.Attempts, func(a shared.Attempt) bool {
		return a.State == shared.SessionStarting || a.State == shared.SessionRunning || a.Check == shared.CheckRunning
	})
}

func (p *AttemptsPage) refresh(app.Context, app.Event) { p.load() }

// load reads the list again, through the page's context: an event's would drop the answer
// once its element left the page (the follow-up form, gone once sent).
func (p *AttemptsPage) load() {
	p.loading = true
	c, id := p.ctx, p.taskID
	p.page.Async(func() {
		l, err := api.Attempts(c, id)
		p.page.Dispatch(func(app.Context) {
			if c.Err() != nil {
				return
			}
			p.loading = false
			if err != nil {
				p.err = whyNot("Attempts unavailable", err)
				return
			}
			p.err = ""
			p.show(l)
		})
	})
}

// show puts a list on the page; the compared attempts default to the first two.
func (p *AttemptsPage) show(l shared.AttemptList) {
	p.list = &l
	if p.running() {
		p.acted = time.Time{} // the work begun: polling goes on while it runs
	}
	if len(l.Attempts) >= 2 && (p.cmpA == "" || p.cmpB == "") {
		p.cmpA, p.cmpB = l.Attempts[0].SessionID, l.Attempts[1].SessionID
	}
	if p.check == "" {
		p.check = shared.Visible(l.Check)
	}
}

// sorted is the attempts in the table's order.
func (p *AttemptsPage) sorted() []shared.Attempt {
	out := slices.Clone(p.list.Attempts)
	key := func(a shared.Attempt) float64 {
		switch p.sortBy {
		case "check":
			if a.CheckExit == nil {
				return 1e9 // unknown last
			}
			return float64(*a.CheckExit)*1e6 + float64(a.CheckMillis)/1e3
		case "files":
			return float64(a.Files)
		case "lines":
			return float64(a.Added + a.Removed)
		case "commands":
			return float64(a.Commands)
		case "tokens":
			return float64(a.Tokens)
		case "cost":
			if a.Cost == nil {
				return 0
			}
			return a.Cost.Amount
		case "wall":
			return float64(a.WallMillis)
		}
		return float64(a.N)
	}
	slices.SortStableFunc(out, func(a, b shared.Attempt) int {
		var c int
		switch p.sortBy {
		case "agent":
			c = strings.Compare(a.Agent, b.Agent)
		case "state":
			c = strings.Compare(attemptState(a), attemptState(b))
		default:
			c = cmp.Compare(key(a), key(b))
		}
		if p.desc {
			c = -c
		}
		return c
	})
	return out
}

// sortOn sorts by column key: again on the same column, the other way.
func (p *AttemptsPage) sortOn(key string) app.EventHandler {
	return func(ctx app.Context, _ app.Event) {
		if p.sortBy == key {
			p.desc = !p.desc
		} else {
			p.sortBy, p.desc = key, false
		}
	}
}

// attemptState is an attempt's state as the table says it.
func attemptState(a shared.Attempt) string {
	if a.Outcome != shared.AttemptOpen {
		return a.Outcome
	}
	if a.Check == shared.CheckRunning {
		return "checking"
	}
	return string(a.State)
}

// Render draws the page; prerendered, it is the shell that says it is loading.
func (p *AttemptsPage) Render() app.UI {
	return app.Div().Class("page", "attempts-page").DataSet("running", p.running()).Body(
		taskBar("Attempts", p.title, p.err, p.loading, p.refresh),
		app.Main().Body(
			p.renderTable(),
			p.renderOutput(),
			p.renderKept(),
			p.renderContinue(),
			p.renderCompare(),
			p.renderStart(),
		),
	)
}

func (p *AttemptsPage) renderTable() app.UI {
	if p.list == nil {
		return app.If(p.err == "", func() app.UI { return app.P().Class("empty").Text("Loading attempts…") })
	}
	if len(p.list.Attempts) == 0 {
		return app.P().Class("empty").Text("No attempts yet: give one prompt to several agents below.")
	}
	rows := p.sorted()
	return app.Div().Class("attempts-scroll").Body(app.Table().Class("attempts").Body(
		app.Caption().Class("sr-only").Text("Attempts of this task; press a column's header to sort by it"),
		app.THead().Body(app.Tr().Body(
			app.Range(attemptColumns).Slice(func(i int) app.UI {
				col := attemptColumns[i]
				sort := "none"
				if p.sortBy == col[0] {
					sort = map[bool]string{false: "ascending", true: "descending"}[p.desc]
				}
				return app.Th().Scope("col").Aria("sort", sort).Body(
					app.Button().Type("button").Class("sort").OnClick(p.sortOn(col[0]), app.EventScope(col[0])).Text(col[1]))
			}),
			app.Th().Scope("col").Text("Change"),
			app.Th().Scope("col").Body(app.Span().Class("sr-only").Text("Actions")),
		)),
		app.TBody().Body(app.Range(rows).Slice(func(i int) app.UI { return p.renderRow(rows[i]) })),
	))
}

func (p *AttemptsPage) renderRow(a shared.Attempt) app.UI {
	state := attemptState(a)
	return app.Tr().Class("attempt", "outcome-"+cmp.Or(a.Outcome, "open")).DataSet("n", a.N).Body(
		app.Td().Class("num").Body(app.A().Href("/sessions/"+a.SessionID).Aria("label", "Open the session of attempt "+strconv.Itoa(a.N)).Text(strconv.Itoa(a.N))),
		app.Td().Text(shared.Visible(a.Agent)),
		app.Td().Body(app.Span().Class("badge", "state-"+state).Title(attrText(shared.Visible(a.Note))).Text(state)),
		app.Td().Class("check-cell").Body(p.checkCell(a)),
		app.Td().Class("num").Text(strconv.Itoa(a.Files)),
		app.Td().Class("num", "lines").Body(
			app.Span().Class("added").Text("+"+strconv.Itoa(a.Added)), app.Text(" "),
			app.Span().Class("removed").Text("\u2212"+strconv.Itoa(a.Removed))),
		app.Td().Class("num").Body(app.Text(strconv.Itoa(a.Commands)), app.If(a.Failed > 0, func() app.UI {
			return app.Span().Class("failed").Text(" · " + strconv.Itoa(a.Failed) + " failed")
		})),
		app.Td().Class("num").Text(map[bool]string{true: tokensLabel(a.Tokens), false: "—"}[a.Tokens > 0]),
		app.Td().Class("num").Text(attemptCost(a.Cost)),
		app.Td().Class("num").Text(durationLabel(time.Duration(a.WallMillis)*time.Millisecond)),
		app.Td().Body(app.If(a.Outcome == shared.AttemptKept || a.Outcome == shared.AttemptClosed, func() app.UI {
			return app.Code().Class("branch").Title("Its branch keeps the change").Text(shared.Visible(a.Branch))
		}).Else(func() app.UI {
			return app.A().Href("/tasks/"+p.taskID+"/changes?attempt="+a.SessionID).
				Aria("label", "Changes of attempt "+strconv.Itoa(a.N)).Text("Changes")
		})),
		app.Td().Class("row-actions").Body(p.rowActions(a)),
	)
}

// checkCell is an attempt's check: a button that opens its output, labelled from the
// list alone (exit code and duration).
func (p *AttemptsPage) checkCell(a shared.Attempt) app.UI {
	if a.CheckMessageID == "" {
		return app.Span().Class("muted").Text(map[bool]string{true: "not run", false: "—"}[p.list.Check != ""])
	}
	label := "running…"
	class := "check-running"
	switch {
	case a.Check == shared.CheckRunning:
	case a.CheckExit == nil:
		label, class = "no exit code · "+durationLabel(time.Duration(a.CheckMillis)*time.Millisecond), "check-failed"
	default:
		label = "exit " + strconv.Itoa(*a.CheckExit) + " · " + durationLabel(time.Duration(a.CheckMillis)*time.Millisecond)
		class = map[bool]string{true: "check-passed", false: "check-failed"}[*a.CheckExit == 0]
	}
	open := p.output != nil && p.output.messageID == a.CheckMessageID
	return app.Button().Type("button").Class("secondary", "check", class).
		Aria("expanded", strconv.FormatBool(open)).Aria("controls", "check-output").
		Aria("label", attrText(map[bool]string{true: "Hide", false: "Show"}[open]+" check output of attempt "+strconv.Itoa(a.N)+" · "+label)).
		OnClick(p.openOutput(a), app.EventScope(a.CheckMessageID)).Text(label)
}

// openOutput fetches an attempt's check output, or closes it when open.
func (p *AttemptsPage) openOutput(a shared.Attempt) app.EventHandler {
	return func(ctx app.Context, _ app.Event) {
		if p.output != nil && p.output.messageID == a.CheckMessageID {
			p.output = nil
			return
		}
		o := &checkOutput{n: a.N, sessionID: a.SessionID, messageID: a.CheckMessageID}
		p.output = o
		c := p.ctx
		ctx.Async(func() {
			snap, err := api.ShellOutput(c, o.sessionID, o.messageID)
			ctx.Dispatch(func(app.Context) {
				if err != nil {
					o.err = whyNot("Command output unavailable", err)
					return
				}
				o.snap = &snap
			})
		})
	}
}

func (p *AttemptsPage) renderOutput() app.UI {
	o := p.output
	if o == nil {
		return nil
	}
	var body app.UI
	switch {
	case o.err != "":
		body = app.P().Class("alert").Role("alert").Text(o.err)
	case o.snap == nil:
		body = app.P().Class("out-note", "loading").Aria("live", "polite").Text("Loading…")
	case o.snap.Output.Stdout == "" && o.snap.Output.Stderr == "":
		body = app.P().Class("out-note").Text("No command output.")
	default:
		body = app.Pre().Class("check-text").Body(
			app.Span().Text(shared.Visible(o.snap.Output.Stdout)),
			app.Span().Class("stderr").Text(shared.Visible(o.snap.Output.Stderr)))
	}
	return app.Section().ID("check-output").Class("check-output").Aria("label", "Check output of attempt "+strconv.Itoa(o.n)).Body(
		app.H2().Text("Check output · attempt "+strconv.Itoa(o.n)),
		body,
		app.If(o.snap != nil && o.snap.Output.Truncated, func() app.UI { return app.P().Class("out-note").Text("Output truncated") }),
	)
}

func (p *AttemptsPage) rowActions(a shared.Attempt) app.UI {
	if a.Outcome != shared.AttemptOpen && a.Outcome != shared.AttemptStopped {
		return nil
	}
	atRest := a.State == shared.SessionReady && a.Check != shared.CheckRunning
	n := strconv.Itoa(a.N)
	if p.keep == a.SessionID {
		return app.Div().Class("confirm").Body(
			app.Span().Text("Land attempt "+n+" and close the others?"),
			disabled(app.Button().Type("button"), p.keeping).OnClick(p.doKeep(a), app.EventScope(a.SessionID)).
				Text(map[bool]string{true: "Keeping…", false: "Keep and merge"}[p.keeping]),
			app.Button().Type("button").Class("secondary").OnClick(func(app.Context, app.Event) { p.keep = "" }).Text("Cancel"),
		)
	}
	return app.Div().Class("actions").Body(
		disabled(app.Button().Type("button").Aria("label", "Keep this one: attempt "+n), !atRest || p.keeping).
			OnClick(func(app.Context, app.Event) { p.keep, p.keepErr = a.SessionID, "" }, app.EventScope(a.SessionID)).Text("Keep this one"),
		disabled(app.Button().Type("button").Class("secondary").Aria("label", "Continue attempt "+n), a.State.Ended()).
			OnClick(func(app.Context, app.Event) { p.cont, p.contErr = a.SessionID, "" }, app.EventScope(a.SessionID)).Text("Continue"),
	)
}

// doKeep lands the attempt and closes the others.
func (p *AttemptsPage) doKeep(a shared.Attempt) app.EventHandler {
	return func(ctx app.Context, _ app.Event) {
		p.keeping, p.keepErr, p.kept = true, "", ""
		c, id := p.ctx, p.taskID
		ctx.Async(func() {
			l, err := api.KeepAttempt(c, id, a.SessionID, "merge")
			ctx.Dispatch(func(app.Context) {
				p.keeping, p.keep = false, ""
				if err != nil {
					p.keepErr = whyNot("Not kept", err)
					return
				}
				p.kept = "Attempt " + strconv.Itoa(a.N) + " landed on the base; the others are closed, their branches kept."
				p.show(l)
			})
		})
	}
}

func (p *AttemptsPage) renderKept() app.UI {
	switch {
	case p.keepErr != "":
		return app.P().Class("alert").Role("alert").Text(p.keepErr)
	case p.kept != "":
		return app.P().Class("land-done").Role("status").Text(p.kept)
	}
	return nil
}

// renderContinue is the follow-up prompt for one attempt.
func (p *AttemptsPage) renderContinue() app.UI {
	if p.cont == "" || p.list == nil {
		return nil
	}
	i := slices.IndexFunc(p.list.Attempts, func(a shared.Attempt) bool { return a.SessionID == p.cont })
	if i < 0 {
		return nil
	}
	n := strconv.Itoa(p.list.Attempts[i].N)
	return app.Form().Class("continue").OnSubmit(p.sendContinue).Body(
		field("continue-text", "Follow-up prompt for attempt "+n,
			app.Textarea().ID("continue-text").Rows(2).Required(true).Text(p.contText).OnInput(bind(&p.contText))),
		app.Div().Class("actions").Body(
			app.Button().Type("submit").Text("Send to attempt "+n),
			app.Button().Type("button").Class("secondary").OnClick(func(app.Context, app.Event) { p.cont = "" }).Text("Cancel"),
		),
		app.If(p.contErr != "", func() app.UI { return app.P().Class("alert").Role("alert").Text(p.contErr) }),
	)
}

func (p *AttemptsPage) sendContinue(ctx app.Context, e app.Event) {
	e.PreventDefault()
	sid, text, c := p.cont, strings.TrimSpace(p.contText), p.ctx
	if text == "" {
		return
	}
	ctx.Async(func() {
		_, err := api.SendMessage(c, sid, text, "")
		ctx.Dispatch(func(ctx app.Context) {
			if err != nil {
				p.contErr = whyNot("Not sent", err)
				return
			}
			p.cont, p.contText, p.acted = "", "", time.Now()
			p.load()
		})
	})
}

// renderCompare compares one file across two attempts, side by side: both diffs are
// fetched when Compare is pressed.
func (p *AttemptsPage) renderCompare() app.UI {
	if p.list == nil || len(p.list.Attempts) < 2 {
		return nil
	}
	pickOne := func(id string, dst *string) app.UI {
		return app.Select().ID(id).OnChange(bind(dst)).Body(app.Range(p.list.Attempts).Slice(func(i int) app.UI {
			a := p.list.Attempts[i]
			return selected(app.Option().Value(a.SessionID), a.SessionID == *dst).Text("Attempt " + strconv.Itoa(a.N) + " · " + shared.Visible(a.Agent))
		}))
	}
	return app.Section().Class("compare").Aria("label", "Compare a file").Body(
		app.H2().Text("Compare a file"),
		app.Form().Class("compare-form").OnSubmit(p.compare).Body(
			field("compare-path", "File", app.Input().ID("compare-path").Required(true).Placeholder("path/in/the/repo.go").Value(p.cmpPath).OnInput(bind(&p.cmpPath))),
			field("compare-a", "Left", pickOne("compare-a", &p.cmpA)),
			field("compare-b", "Right", pickOne("compare-b", &p.cmpB)),
			disabled(app.Button().Type("submit"), p.comparing).Text("Compare"),
		),
		app.If(p.cmp[0] != nil && p.cmp[1] != nil, func() app.UI {
			return app.Div().Class("side-by-side").Body(compareSide(p.cmp[0]), compareSide(p.cmp[1]))
		}),
	)
}

func compareSide(s *compared) app.UI {
	var body app.UI
	switch d := s.diff; {
	case s.err != "":
		body = app.P().Class("out-note").Text(s.err)
	case d == nil:
		body = app.P().Class("out-note", "loading").Text("Loading…")
	case d.Omitted:
		body = app.P().Class("out-note").Text("This file is too large to show here (over " + sizeLabel(shared.DiffSideLimit) + ").")
	case d.File.Binary:
		body = app.P().Class("out-note").Text("A binary file: no diff to show.")
	default:
		body = diffView(d.Hunks, d.HunksTruncated, derefText(d.OldText) == derefText(d.NewText), nil)
	}
	return app.Div().Class("side").Body(app.H3().Text(s.label), app.Div().Class("transcript").Body(body))
}

// compare fetches the file's diff in both attempts.
func (p *AttemptsPage) compare(ctx app.Context, e app.Event) {
	e.PreventDefault()
	path := strings.TrimSpace(p.cmpPath)
	if path == "" || p.list == nil {
		return
	}
	p.comparing = true
	c, id := p.ctx, p.taskID
	pending := 2
	for k, sid := range []string{p.cmpA, p.cmpB} {
		i := slices.IndexFunc(p.list.Attempts, func(a shared.Attempt) bool { return a.SessionID == sid })
		if i < 0 {
			return
		}
		a := p.list.Attempts[i]
		side := &compared{label: "Attempt " + strconv.Itoa(a.N) + " · " + shared.Visible(a.Agent)}
		p.cmp[k] = side
		ctx.Async(func() {
			d, err := api.AttemptDiff(c, id, sid, path)
			ctx.Dispatch(func(app.Context) {
				if pending--; pending == 0 {
					p.comparing = false
				}
				if err != nil {
					side.err = "Not changed in this attempt, or unavailable: " + shared.ErrorMessage(err)
					return
				}
				d.OldText, d.NewText = visiblePtr(d.OldText), visiblePtr(d.NewText)
				side.diff = &d
			})
		})
	}
}

// renderStart is the form that gives one prompt to several agents.
func (p *AttemptsPage) renderStart() app.UI {
	return app.Form().Class("new-attempts").OnSubmit(p.start).Body(
		app.H2().Text("New attempts"),
		field("attempt-prompt", "Prompt", app.Textarea().ID("attempt-prompt").Rows(3).Required(true).Text(p.prompt).OnInput(bind(&p.prompt))),
		app.Div().Class("field").Body(
			app.Span().Class("label").ID("attempt-agents-label").Text("Agents ("+strconv.Itoa(len(p.chosen))+" of "+strconv.Itoa(shared.MaxAttempts)+")"),
			app.Ul().Class("chosen").Aria("labelledby", "attempt-agents-label").Body(app.Range(p.chosen).Slice(func(i int) app.UI {
				return app.Li().Body(app.Text(shared.Visible(p.chosen[i])),
					app.Button().Type("button").Class("secondary", "remove").Aria("label", "Remove agent "+strconv.Itoa(i+1)).
						OnClick(p.removeAgent(i), app.EventScope(i)).Text("×"))
			})),
			app.Div().Class("actions").Body(
				app.Select().ID("attempt-agent").Aria("label", "Agent to add").OnChange(bind(&p.pick)).Body(
					app.Range(p.agents).Slice(func(i int) app.UI {
						a := p.agents[i]
						return selected(app.Option().Value(attrText(a.Name)), a.Name == p.pick).Text(a.Name)
					})),
				disabled(app.Button().Type("button").Class("secondary"), len(p.chosen) >= shared.MaxAttempts || p.pick == "").
					OnClick(func(app.Context, app.Event) { p.chosen = append(p.chosen, p.pick) }).Text("Add agent"),
			),
		),
		field("attempt-check", "Check command, run in each attempt's worktree when its turn ends", app.Input().ID("attempt-check").Placeholder("go test ./...").Value(p.check).OnInput(bind(&p.check))),
		field("attempt-cost", "Cost cap for the task's attempts (optional)", app.Input().ID("attempt-cost").Type("number").Min(0).Step(0.01).Value(p.maxCost).OnInput(bind(&p.maxCost))),
		disabled(app.Button().Type("submit"), p.starting || len(p.chosen) < shared.MinAttempts).
			Text(map[bool]string{true: "Starting…", false: "Start " + strconv.Itoa(len(p.chosen)) + " attempts"}[p.starting]),
		app.If(p.startErr != "", func() app.UI { return app.P().Class("alert").Role("alert").Text(p.startErr) }),
	)
}

func (p *AttemptsPage) removeAgent(i int) app.EventHandler {
	return func(app.Context, app.Event) {
		if i < len(p.chosen) {
			p.chosen = slices.Delete(p.chosen, i, i+1)
		}
	}
}

func (p *AttemptsPage) start(ctx app.Context, e app.Event) {
	e.PreventDefault()
	req := shared.AttemptsRequest{Prompt: p.prompt, Agents: slices.Clone(p.chosen), Check: strings.TrimSpace(p.check)}
	if s := strings.TrimSpace(p.maxCost); s != "" {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v < 0 {
			p.startErr = "The cost cap is an amount such as 2.50."
			return
		}
		req.MaxCost = v
	}
	p.starting, p.startErr = true, ""
	c, id := p.ctx, p.taskID
	ctx.Async(func() {
		l, err := api.StartAttempts(c, id, req)
		ctx.Dispatch(func(app.Context) {
			p.starting = false
			if err != nil {
				p.startErr = whyNot("Not started", err)
				return
			}
			p.prompt, p.acted = "", time.Now()
			p.show(l)
		})
	})
}

// attemptCost is what an attempt cost, "—" when its agent reported none.
func attemptCost(c *shared.Cost) string {
	if c == nil {
		return "—"
	}
	return costLabel([]shared.Cost{*c})
}

// attemptsLink leads from a task on a repository to its Attempts page.
func attemptsLink(t shared.Task) app.UI {
	return app.If(t.Repo != "", func() app.UI {
		return app.A().Class("button", "secondary").Href("/tasks/"+t.ID+"/attempts").
			Aria("label", attrText("Attempts of task "+t.Title)).Text("Attempts")
	})
}
