package ui

import (
	"context"
	"slices"
	"strings"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/shared"
)

// The agent's session modes and config options, as selects and toggles in the page's
// bar, and its slash commands, as completions of a prompt that starts with "/".

// modeSelect lets the person switch among the modes the agent offers. An agent whose
// config options set its mode has that select instead (ACP: a client that shows config
// options shows them rather than the modes).
func (p *SessionPage) modeSelect() app.UI {
	s := p.session
	if s == nil || s.Modes == nil || len(s.Modes.Available) < 2 ||
		slices.ContainsFunc(s.ConfigOptions, func(o shared.ConfigOption) bool { return o.Category == "mode" }) {
		return nil
	}
	modes := s.Modes.Available
	return app.Label().Class("mode").Body(
		app.Span().Text("Mode"),
		disabled(app.Select().ID("mode-select"), !p.canChange()).OnChange(p.switchMode).Body(
			app.Range(modes).Slice(func(i int) app.UI {
				m := modes[i]
				return selected(app.Option().Value(attrText(m.ID)), m.ID == s.Modes.Current).Title(attrText(m.Description)).Text(m.Name)
			}),
		),
	)
}

// canChange reports whether the agent's settings can be changed now: it is live, and no
// other change is on its way.
func (p *SessionPage) canChange() bool {
	s := p.session
	return !p.switching && s != nil && (s.State == shared.SessionReady || s.State == shared.SessionRunning)
}

func (p *SessionPage) switchMode(ctx app.Context, _ app.Event) {
	mode := ctx.JSSrc().Get("value").String()
	id := p.id
	p.change(ctx, "Mode not switched: ", func(c context.Context) (shared.Session, error) { return api.SetMode(c, id, mode) },
		func(s shared.Session) {
			if sel := app.Window().GetElementByID("mode-select"); sel.Truthy() && s.Modes != nil {
				sel.Set("value", s.Modes.Current) // the select shows what the agent is in
			}
		})
}

// configControls lets the person set the agent's config options: a select of values, or
// a checkbox for a boolean.
func (p *SessionPage) configControls() app.UI {
	if p.session == nil || len(p.session.ConfigOptions) == 0 {
		return nil
	}
	opts, off := p.session.ConfigOptions, !p.canChange()
	return app.Range(opts).Slice(func(i int) app.UI {
		o := opts[i]
		if o.Type == shared.ConfigBoolean {
			return app.Label().Class("mode", "config-toggle").Title(attrText(o.Description)).Body(
				checked(disabled(app.Input().Type("checkbox").Class("config").DataSet("config", attrText(o.ID)), off), o.On).
					OnChange(p.setConfig(o.ID), app.EventScope(o.ID)),
				app.Span().Text(o.Name),
			)
		}
		return app.Label().Class("mode", "config-select").Title(attrText(o.Description)).Body(
			app.Span().Text(o.Name),
			disabled(app.Select().Class("config").DataSet("config", attrText(o.ID)), off).OnChange(p.setConfig(o.ID), app.EventScope(o.ID)).Body(valueList(o)...),
		)
	})
}

// valueList is a select's values, those the agent groups under their group's name.
func valueList(o shared.ConfigOption) []app.UI {
	var out []app.UI
	for i := 0; i < len(o.Values); {
		group, j := o.Values[i].Group, i
		var opts []app.UI
		for ; j < len(o.Values) && o.Values[j].Group == group; j++ {
			v := o.Values[j]
			opts = append(opts, selected(app.Option().Value(attrText(v.ID)), v.ID == o.Current).Title(attrText(v.Description)).Text(v.Name))
		}
		if group == "" {
			out = append(out, opts...)
		} else {
			out = append(out, app.OptGroup().Label(attrText(group)).Body(opts...))
		}
		i = j
	}
	return out
}

// setConfig sends the value of the control that changed: a checkbox's state, a select's
// value. When the agent does not take it, the control shows the value it has again.
func (p *SessionPage) setConfig(configID string) app.EventHandler {
	return func(ctx app.Context, _ app.Event) {
		src := ctx.JSSrc()
		var value any = src.Get("value").String()
		if src.Get("type").String() == "checkbox" {
			value = src.Get("checked").Bool()
		}
		id := p.id
		p.change(ctx, "Setting not changed: ", func(c context.Context) (shared.Session, error) { return api.SetConfig(c, id, configID, value) },
			func(s shared.Session) {
				for _, o := range s.ConfigOptions {
					if o.ID == configID {
						src.Set("value", o.Current)
						src.Set("checked", o.On)
					}
				}
			})
	}
}

// change sends one change of the agent's settings, one at a time; when it fails, the page
// says why and undo puts the control back as the session has it.
func (p *SessionPage) change(ctx app.Context, failed string, send func(context.Context) (shared.Session, error), undo func(shared.Session)) {
	if p.ctx == nil || p.switching {
		return
	}
	p.switching, p.err = true, ""
	c := p.ctx
	ctx.Async(func() {
		s, err := send(c)
		p.apply(ctx, c, func(app.Context) {
			p.switching = false
			if err != nil {
				p.err = failed + shared.ErrorMessage(err)
				if p.session != nil {
					undo(*p.session)
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
				app.Button().Type("button").Class("command").OnClick(p.useCommand(c.Name), app.EventScope(c.Name)).Body(
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
