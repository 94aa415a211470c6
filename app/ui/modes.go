package ui

import (
	"strings"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/shared"
)

// The agent's session modes, as a select in the page's bar, and its slash commands, as
// completions of a prompt that starts with "/".

// modeSelect lets the person switch among the modes the agent offers.
func (p *SessionPage) modeSelect() app.UI {
	s := p.session
	if s == nil || s.Modes == nil || len(s.Modes.Available) < 2 {
		return nil
	}
	live := s.State == shared.SessionReady || s.State == shared.SessionRunning
	modes := s.Modes.Available
	return app.Label().Class("mode").Body(
		app.Span().Text("Mode"),
		disabled(app.Select().ID("mode-select"), !live || p.switching).OnChange(p.switchMode).Body(
			app.Range(modes).Slice(func(i int) app.UI {
				m := modes[i]
				return selected(app.Option().Value(attrText(m.ID)), m.ID == s.Modes.Current).Title(attrText(m.Description)).Text(m.Name)
			}),
		),
	)
}

func (p *SessionPage) switchMode(ctx app.Context, _ app.Event) {
	mode := ctx.JSSrc().Get("value").String()
	if p.ctx == nil || p.switching {
		return
	}
	p.switching, p.err = true, ""
	c, id := p.ctx, p.id
	ctx.Async(func() {
		s, err := api.SetMode(c, id, mode)
		p.apply(ctx, c, func(app.Context) {
			p.switching = false
			if err != nil {
				p.err = "Mode not switched: " + shared.ErrorMessage(err)
				if sel := app.Window().GetElementByID("mode-select"); sel.Truthy() && p.session != nil && p.session.Modes != nil {
					sel.Set("value", p.session.Modes.Current) // the select shows what the agent is in
				}
				return
			}
			p.setSession(s)
		})
	})
}

// commandList offers the agent's slash commands that complete the prompt, while it is a
// "/" and the start of a command name.
func (p *SessionPage) commandList() app.UI {
	if p.session == nil || len(p.session.Commands) == 0 || !strings.HasPrefix(p.draft, "/") || strings.ContainsAny(p.draft, " \n") {
		return nil
	}
	var matches []shared.Command
	for _, c := range p.session.Commands {
		if strings.HasPrefix(c.Name, p.draft[1:]) {
			matches = append(matches, c)
		}
	}
	if len(matches) == 0 {
		return nil
	}
	return app.Ul().ID("command-list").Class("commands").Aria("label", "Commands the agent offers").Body(
		app.Range(matches).Slice(func(i int) app.UI {
			c := matches[i]
			return app.Li().Body(
				app.Button().Type("button").Class("command").OnClick(p.useCommand(c.Name)).Body(
					app.Span().Class("command-name").Text("/"+c.Name),
					app.Span().Class("command-desc").Text(c.Description+optional(" · ", c.Hint)),
				),
			)
		}),
	)
}

// useCommand puts "/name " in the prompt box and the cursor after it.
func (p *SessionPage) useCommand(name string) app.EventHandler {
	return func(ctx app.Context, _ app.Event) {
		p.draft = "/" + name + " "
		if box := app.Window().GetElementByID("prompt-input"); box.Truthy() {
			box.Set("value", p.draft)
			box.Call("focus")
		}
	}
}
