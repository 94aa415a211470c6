package ui

import (
	"context"
	"slices"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/shared"
)

// The agent's session modes and config options, as selects and toggles in the page's
// bar (agentControls.barViews).

// modeSelect lets the person switch among the modes the agent offers. An agent whose
// config options set its mode has that select instead (ACP: a client that shows config
// options shows them rather than the modes).
func (a *agentControls) modeSelect() app.UI {
	s := a.host.in().session
	if s == nil || s.Modes == nil || len(s.Modes.Available) < 2 ||
		slices.ContainsFunc(s.ConfigOptions, func(o shared.ConfigOption) bool { return o.Category == "mode" }) {
		return nil
	}
	modes := s.Modes.Available
	return app.Label().Class("mode").Body(
		app.Span().Text("Mode"),
		disabled(app.Select().ID("mode-select"), !a.canChange()).OnChange(a.switchMode).Body(
			app.Range(modes).Slice(func(i int) app.UI {
				m := modes[i]
				return selected(app.Option().Value(attrText(m.ID)), m.ID == s.Modes.Current).Title(attrText(m.Description)).Text(m.Name)
			}),
		),
	)
}

// canChange reports whether the agent's settings can be changed now: it is live, and no
// other change is on its way.
func (a *agentControls) canChange() bool {
	s := a.host.in().session
	return !a.switching && s != nil && (s.State == shared.SessionReady || s.State == shared.SessionRunning)
}

func (a *agentControls) switchMode(ctx app.Context, _ app.Event) {
	mode := ctx.JSSrc().Get("value").String()
	id := a.host.in().id
	a.change(ctx, "Mode not switched: ", func(c context.Context) (shared.Session, error) { return api.SetMode(c, id, mode) },
		func(s shared.Session) {
			if sel := app.Window().GetElementByID("mode-select"); sel.Truthy() && s.Modes != nil {
				sel.Set("value", s.Modes.Current) // the select shows what the agent is in
			}
		})
}

// configControls lets the person set the agent's config options: a select of values, or
// a checkbox for a boolean.
func (a *agentControls) configControls() app.UI {
	s := a.host.in().session
	if s == nil || len(s.ConfigOptions) == 0 {
		return nil
	}
	opts, off := s.ConfigOptions, !a.canChange()
	return app.Range(opts).Slice(func(i int) app.UI {
		o := opts[i]
		if o.Type == shared.ConfigBoolean {
			return app.Label().Class("mode", "config-toggle").Title(attrText(o.Description)).Body(
				checked(disabled(app.Input().Type("checkbox").Class("config").DataSet("config", attrText(o.ID)), off), o.On).
					OnChange(a.setConfig(o.ID), app.EventScope(o.ID)),
				app.Span().Text(o.Name),
			)
		}
		return app.Label().Class("mode", "config-select").Title(attrText(o.Description)).Body(
			app.Span().Text(o.Name),
			disabled(app.Select().Class("config").DataSet("config", attrText(o.ID)), off).OnChange(a.setConfig(o.ID), app.EventScope(o.ID)).Body(valueList(o)...),
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
func (a *agentControls) setConfig(configID string) app.EventHandler {
	return func(ctx app.Context, _ app.Event) {
		src := ctx.JSSrc()
		var value any = src.Get("value").String()
		if src.Get("type").String() == "checkbox" {
			value = src.Get("checked").Bool()
		}
		id := a.host.in().id
		a.change(ctx, "Setting not changed: ", func(c context.Context) (shared.Session, error) { return api.SetConfig(c, id, configID, value) },
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
func (a *agentControls) change(ctx app.Context, failed string, send func(context.Context) (shared.Session, error), undo func(shared.Session)) {
	in := a.host.in()
	if in.c == nil || a.switching {
		return
	}
	a.switching = true
	a.host.say("")
	c := in.c
	ctx.Async(func() {
		s, err := send(c)
		dispatchIn(ctx, c, func(app.Context) {
			a.switching = false
			if err != nil {
				a.host.say(failed + shared.ErrorMessage(err))
				if now := a.host.in().session; now != nil {
					undo(*now)
				}
				return
			}
			a.host.setSession(s)
		})
	})
}
