package ui

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/shared"
)

// The session page's bar: the task's title, the session's state, its links (Replay,
// Terminal, Changes), the agent's controls, its usage and its sandbox. It holds no state:
// the page passes down the session and what its pieces draw there.

// barParts are what the session bar shows of the page's other pieces.
type barParts struct {
	replay   bool     // the conversation has messages to step through
	controls []app.UI // the agent's controls (agentControls.barViews)
	live     app.UI   // the live indicator (pageStatus.liveView)
}

// sessionBar is the header of the session page.
func sessionBar(in sessionIn, parts barParts) app.UI {
	s := in.session
	state, stopped := shared.SessionState(""), false
	if s != nil {
		state, stopped = s.State, s.Stopped
	}
	title := "Session"
	if in.task != nil {
		title = shared.Visible(in.task.Title)
	}
	items := []app.UI{
		app.A().Class("back").Href("/").Text("← Tasks"),
		app.H1().Text(title),
		app.If(state != "", func() app.UI {
			return app.Span().Class("badge", "state-"+string(state)).Text(string(state))
		}),
		app.If(parts.replay, func() app.UI {
			return app.A().Class("replay-link").Href("/sessions/" + in.id + "/replay").Title("Step through this conversation, read-only").Text("Replay")
		}),
		app.If(stopped, func() app.UI {
			return app.Span().Class("badge", "agent-stopped").Title("The next prompt starts the agent again").Text("agent stopped")
		}),
	}
	items = append(items, parts.controls...)
	return app.Header().Class("bar").Body(append(items,
		usageView(s),
		app.If(s != nil && !state.Ended() && !stopped, func() app.UI {
			// A page of its own (web/terminal.html, xterm.js), in a tab of its own: the
			// person watches the chat and types in the terminal side by side.
			return app.A().Class("terminal-link").Href("/web/terminal.html?session_id=" + in.id).Target("_blank").Rel("noopener").
				Title("A shell in the session's directory and sandbox; its commands are recorded here").Text("Terminal")
		}),
		parts.live,
		sessionContext(s, in.task),
		sandboxView(s),
	)...)
}

// usageView is the agent's latest usage report on the session bar: a gauge of its
// context window and what the session cost. The numbers are the agent's, checked by the
// store (bounded, a three-letter currency); nil when it sent none.
func usageView(s *shared.Session) app.UI {
	if s == nil || s.Usage == nil {
		return nil
	}
	u := s.Usage
	var cost []shared.Cost
	if u.Cost != nil {
		cost = []shared.Cost{*u.Cost}
	}
	return app.Span().Class("usage").Body(
		app.If(u.ContextSize > 0, func() app.UI {
			label := fmt.Sprintf("Context window: %s of %s tokens", tokensLabel(u.ContextUsed), tokensLabel(u.ContextSize))
			return app.Span().Class("context").Title(label).Body(
				app.Meter().Min(0).Max(float64(u.ContextSize)).High(0.8*float64(u.ContextSize)).Value(float64(min(u.ContextUsed, u.ContextSize))).Aria("label", label),
				app.Span().Text(fmt.Sprintf("%d%%", min(100, u.ContextUsed*100/u.ContextSize))),
			)
		}),
		app.If(len(cost) > 0, func() app.UI {
			return app.Span().Class("cost").Title("What the agent reports this session cost").Text(costLabel(cost))
		}),
	)
}

// noSandbox says what a session without a sandbox means.
const noSandbox = "The server runs with --no-sandbox: the agent and its commands can reach everything the server's user can"

// sandboxView is what the session's agent and its commands may reach, as it was when the
// agent last started (shared.Sandbox), on a line of its own at the foot of the session
// bar. A narrow screen cuts the directories short before the network; the whole line is in
// the DOM, and in its title with the private home. Nothing for an agent not started since
// sessions had sandboxes.
func sandboxView(s *shared.Session) app.UI {
	if s == nil || s.Sandbox == nil {
		return nil
	}
	if s.Sandbox.Off {
		return app.Span().Class("badge", "attention", "sandbox-off").Title(noSandbox).Text("Not sandboxed")
	}
	dirs, network, title := sandboxLabel(*s.Sandbox)
	return app.Span().Class("sandbox").Title(attrText(title)).Body(
		app.Span().Text(dirs),
		// A no-break space: a space that starts a line's text is not drawn.
		app.Span().Class("sandbox-network").Text("\u00a0· "+network),
	)
}

// sandboxLabel renders a sandbox that is on: the line "Sandboxed: /work/repo, /data ·
// network: all" in its two parts, the directories (those it may only read too, when
// there are) and the network, and the title: the line and the private home. The session
// was marked on its way in (Session.Visible): a directory may be named anything.
func sandboxLabel(b shared.Sandbox) (dirs, network, title string) {
	list := func(items []string, none string) string {
		if len(items) == 0 {
			return none
		}
		return strings.Join(items, ", ")
	}
	network = "network: " + b.Network
	if b.Network == shared.NetworkHosts {
		network = "network: " + list(b.Hosts, "no host")
	}
	dirs = "Sandboxed: " + list(b.Dirs, "no directory")
	if len(b.Read) > 0 {
		dirs += " · read-only: " + list(b.Read, "")
	}
	title = dirs + " · " + network
	if b.Home != "" {
		title += "\nhome: " + b.Home
	}
	return dirs, network, title + "\nBesides these, the agent and its commands see the system read-only, and no other file on this machine."
}

// tokensLabel renders a token count short: 950, 52k, 1.2M.
func tokensLabel(n int64) string {
	switch {
	case n < 1000:
		return strconv.FormatInt(n, 10)
	case n < 1_000_000:
		return strconv.FormatInt((n+500)/1000, 10) + "k"
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1e6), ".0") + "M"
}

// costLabel renders costs per currency: "0.25 USD", "1.20 EUR + 0.03 USD"; a cost below a
// cent keeps four decimals.
func costLabel(costs []shared.Cost) string {
	parts := make([]string, 0, len(costs))
	for _, c := range costs {
		format := "%.2f %s"
		if c.Amount > 0 && c.Amount < 0.01 {
			format = "%.4f %s"
		}
		parts = append(parts, fmt.Sprintf(format, c.Amount, c.Currency))
	}
	return strings.Join(parts, " + ")
}

// sessionContext is the header's line under the title: the session's agent, where it
// works (its task's branch, or its directory) and, for a task with a worktree, a link to
// the task's Changes.
func sessionContext(s *shared.Session, task *shared.Task) app.UI {
	if s == nil {
		return nil
	}
	return app.Div().Class("session-context").Body(
		app.Span().Class("session-agent").Text(s.Agent+" session"),
		app.If(task != nil && task.Worktree != "", func() app.UI {
			return app.Span().Class("where").Title(attrText("Worktree: "+shared.Visible(task.Worktree))).Body(
				app.Text("on branch "), app.Code().Text(shared.Visible(task.Branch)))
		}).Else(func() app.UI {
			return app.Span().Class("where").Title(attrText("Working directory: "+s.Cwd)).Body(
				app.Text("in "), app.Code().Text(s.Cwd))
		}),
		app.If(task != nil && task.Worktree != "", func() app.UI {
			return app.A().Class("changes-link").Href("/tasks/" + task.ID + "/changes").Text("Changes")
		}),
	)
}
