package ui

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/shared"
	"conch/shared/poll"
)

// CommandRow is one shell command: the whole command, its working directory, its status,
// and the output disclosure. The transcript is fetched from the snapshot endpoint only
// while the disclosure is open, driven by shared/poll; message metadata never carries it.
type CommandRow struct {
	app.Compo

	SessionID string
	Cwd       string // the session's directory: a command run there names no directory
	Msg       shared.Message

	m        *poll.Machine
	ctx      context.Context // cancelled on dismount: go-app's context is not
	cancel   context.CancelFunc
	requests map[uint64]context.CancelFunc
	shown    rendered  // the snapshot on screen as terminal lines
	tools    readTools // search, wrap, full screen
	ticking  bool      // a redraw of the running time is scheduled
}

// workDirLabel is where a command ran, as its row says it: nothing for the session's own
// directory (the session's header names it), a path relative to it below it, else the
// whole path.
func workDirLabel(cwd, dir string) string {
	if strings.TrimRight(dir, "/") == strings.TrimRight(cwd, "/") {
		return ""
	}
	return relative(cwd, dir)
}

// now is the UI's clock; tests set it.
var now = time.Now

// CompoID keeps a row bound to its message when messages are inserted before it.
func (c *CommandRow) CompoID() string { return c.Msg.ID }

func (c *CommandRow) status() shared.ToolStatus {
	if c.Msg.Metadata == nil {
		return ""
	}
	return c.Msg.Metadata.Status
}

func (c *CommandRow) machine() *poll.Machine {
	if c.m == nil {
		c.m = poll.New(c.status())
	}
	return c.m
}

// OnMount runs only in the browser.
func (c *CommandRow) OnMount(ctx app.Context) {
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.requests = map[uint64]context.CancelFunc{}
	c.machine()
	c.tick(ctx)
}

// OnUpdate follows the projected status: turning terminal triggers the one final fetch.
func (c *CommandRow) OnUpdate(ctx app.Context) {
	c.run(ctx, c.machine().StatusChanged(c.status()))
	c.tick(ctx)
}

// tick redraws the row every second while the command runs, for its running time.
func (c *CommandRow) tick(ctx app.Context) {
	sh := shared.ShellOf(c.Msg)
	if c.ticking || c.ctx == nil || c.ctx.Err() != nil || sh == nil || sh.Output.StartedAt == nil || c.status().IsTerminal() {
		return
	}
	c.ticking = true
	time.AfterFunc(time.Second, func() {
		ctx.Dispatch(func(ctx app.Context) {
			c.ticking = false
			c.tick(ctx)
		})
	})
}

// OnDismount aborts everything in flight; no final fetch.
func (c *CommandRow) OnDismount() {
	if c.cancel != nil {
		c.cancel()
	}
	c.machine().Close()
}

func (c *CommandRow) toggle(ctx app.Context, _ app.Event) {
	if c.machine().View().Open {
		c.run(ctx, c.m.Close())
		c.tools = readTools{}
	} else {
		c.run(ctx, c.m.Open())
	}
}

func (c *CommandRow) retry(ctx app.Context, _ app.Event) {
	c.run(ctx, c.machine().Retry())
}

// run performs the machine's commands. Answers and timers come back on the UI goroutine
// through dispatch, which does nothing once the row is gone.
func (c *CommandRow) run(ctx app.Context, cmds []poll.Command) {
	if c.ctx == nil || c.ctx.Err() != nil {
		return // prerendering, or dismounted
	}
	for _, cmd := range cmds {
		seq := cmd.Seq
		switch cmd.Kind {
		case poll.Fetch:
			reqCtx, cancel := context.WithCancel(c.ctx)
			c.requests[seq] = cancel
			sid, mid, etag, from := c.SessionID, c.Msg.ID, cmd.ETag, cmd.From
			ctx.Async(func() {
				snap, version, unchanged, err := api.ShellOutputIfChanged(reqCtx, sid, mid, etag, from)
				c.dispatch(ctx, func(ctx app.Context) {
					cancel()
					delete(c.requests, seq)
					switch {
					case err != nil:
						c.run(ctx, c.m.Failed(seq))
					case unchanged:
						c.run(ctx, c.m.Unchanged(seq))
					default:
						c.follow(ctx, snap.Status)
						c.run(ctx, c.m.Loaded(seq, snap, version))
						c.landLine(ctx)
					}
				})
			})
		case poll.Abort:
			if cancel := c.requests[seq]; cancel != nil {
				cancel()
				delete(c.requests, seq)
			}
		case poll.Schedule:
			// Timers are not cancelled: the machine ignores old ones, and Dispatch does
			// nothing after dismount.
			time.AfterFunc(cmd.Delay, func() {
				c.dispatch(ctx, func(ctx app.Context) { c.run(ctx, c.m.Timer(seq)) })
			})
		}
	}
}

// dispatch runs f on the UI goroutine, and renders again only when the machine's View
// changed: a poll that finds the output unchanged, or a timer that sends the next
// request, draws nothing. (Dispatch alone would render the row and every component above it.)
func (c *CommandRow) dispatch(ctx app.Context, f func(app.Context)) {
	ctx.Dispatch(func(ctx app.Context) {
		before := c.m.View()
		f(ctx)
		if c.m.View() == before {
			ctx.PreventUpdate()
		}
	})
}

// Render draws the row; the transcript exists only while the disclosure is open.
func (c *CommandRow) Render() app.UI {
	sh := shared.ShellOf(c.Msg)
	if sh == nil {
		sh = &shared.ShellExec{}
	}
	command := sh.Command
	if command == "" {
		command = c.Msg.Content
	}
	out, text := outcome(c.status(), sh.Output.ExitCode, sh.Output.Signal)
	if rejected(c.Msg) {
		out, text = OutcomeNeutral, "Command rejected"
	}
	view := c.machine().View()
	bodyID := "output-" + c.Msg.ID

	cls := []string{"msg", "cmd", "cmd-" + string(out)}
	if c.tools.full {
		cls = append(cls, "full") // lifts the row's containment so the transcript can fill the window
	}
	return app.Div().Class(cls...).DataSet("message-id", c.Msg.ID).Body(
		app.Div().Class("cmd-head").Body(
			statusIcon(out, text),
			app.Code().Class("cmd-text").Text(command),
		),
		app.Div().Class("cmd-meta").Body(
			app.If(workDirLabel(c.Cwd, sh.WorkDir) != "", func() app.UI {
				return app.Span().Class("cwd").Title(attrText("Working directory: " + sh.WorkDir)).Text(workDirLabel(c.Cwd, sh.WorkDir))
			}),
			app.Span().Class("status-text").Text(text),
			app.If(sh.Output.StartedAt != nil, func() app.UI { return timing(sh.Output, c.status().IsTerminal()) }),
			app.If(keptLabel(sh.Output) != "", func() app.UI { return app.Span().Class("kept").Text(keptLabel(sh.Output)) }),
			app.If(sh.Output.Signal != "" && !strings.Contains(text, sh.Output.Signal), func() app.UI {
				return app.Span().Class("signal").Text("ended by " + sh.Output.Signal)
			}),
		),
		app.If(sh.Output.HasOutput || view.Open, func() app.UI {
			return c.renderDisclosure(sh.Output, view, bodyID)
		}).ElseIf(sentNothing(c.status(), sh.Output), func() app.UI {
			return app.P().Class("cmd-note").Text("The agent ran this itself and sent no output.")
		}),
	)
}

// sentNothing reports a finished command of which nothing is known but that it ended: no
// output, no exit code, no signal. Conch's own terminals know how their commands end, so
// the agent ran it itself and reported no output (Gemini CLI 0.61.0 in its interactive
// shell never does), which is not the same as a command that printed nothing.
func sentNothing(status shared.ToolStatus, o shared.ShellOutputSummary) bool {
	return (status == shared.StatusCompleted || status == shared.StatusFailed) &&
		!o.HasOutput && !o.StorageFull && o.ExitCode == nil && o.Signal == ""
}

func (c *CommandRow) renderDisclosure(sum shared.ShellOutputSummary, view poll.View, bodyID string) app.UI {
	label := outputLabel(sum)
	return app.Div().Class("disclosure").Body(
		app.Button().
			Class("disclosure-toggle").
			Type("button").
			Aria("label", disclosureName(view.Open, "command output", label)).
			Aria("expanded", strconv.FormatBool(view.Open)).
			Aria("controls", bodyID).
			OnClick(c.toggle).
			Body(
				app.Span().Class("chevron").Aria("hidden", "true"),
				app.Text(label),
			),
		app.If(view.Open, func() app.UI {
			return app.Div().ID(bodyID).Class(c.transcriptClasses()...).OnKeyDown(c.transcriptKey).Body(c.transcript(view)...)
		}),
	)
}

// disclosureName is a disclosure button's accessible name: what it shows or hides, then
// its visible label whole, as written ("Show command output: Output · 8.7 KB"). The label
// must appear verbatim (WCAG 2.5.3, axe's label-content-name-mismatch), so that speech
// input and scripts that find the control by the text they see find it.
func disclosureName(open bool, subject, label string) string {
	verb := "Show "
	if open {
		verb = "Hide "
	}
	return verb + subject + ": " + label
}

// timing shows how long the command ran (or has been running), and on hover or focus
// when it started and finished.
func timing(o shared.ShellOutputSummary, terminal bool) app.UI {
	times := "Started " + clockLabel(*o.StartedAt)
	label := "for " + elapsedLabel(now().Sub(*o.StartedAt))
	switch {
	case o.FinishedAt != nil:
		times += " · finished " + clockLabel(*o.FinishedAt)
		label = "ran " + durationLabel(o.FinishedAt.Sub(*o.StartedAt))
	case terminal:
		return app.Span().Class("timing").Title(times).Text("started " + clockLabel(*o.StartedAt))
	}
	return app.Span().Class("timing").TabIndex(0).Title(times).Body(
		app.Text(label),
		app.Span().Class("times").Text(" ("+times+")"),
	)
}

func statusIcon(o Outcome, text string) app.UI {
	glyph := map[Outcome]string{OutcomeRunning: "", OutcomeSucceeded: "✓", OutcomeFailed: "✕", OutcomeNeutral: "–"}[o]
	return app.Span().Class("icon", "icon-"+string(o)).Role("img").Aria("label", attrText(text)).Text(glyph)
}
