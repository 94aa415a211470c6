package ui

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/app/client"
	"conch/shared"
)

// ElicitationRow is an agent's question (shared.Elicitation): a form of labelled fields,
// or a page to visit, with Accept and Decline while it is pending; then what the person
// answered, in every tab, as PermissionRow does for a permission request. The answer is
// checked here as the server checks it (CheckAnswer), so a refusal reads the same.
type ElicitationRow struct {
	app.Compo

	SessionID string
	Msg       shared.Message

	values   map[string]any // what the person typed, by field name, over the defaults
	sending  bool
	readOnly string // why the person may not answer (stateReadOnly), when they may not
	err      string
	offer    bool // offer system notifications of later questions
}

// OnMount decides whether to offer notifications (in the browser only).
func (r *ElicitationRow) OnMount(ctx app.Context) {
	r.offer = offerNotifications(ctx)
	ctx.ObserveState(stateReadOnly, &r.readOnly)
}

func (r *ElicitationRow) askNotifications(ctx app.Context, _ app.Event) {
	r.offer = false
	askNotifications(ctx)
}

// Render draws the question.
func (r *ElicitationRow) Render() app.UI {
	md := shared.Metadata{}
	if r.Msg.Metadata != nil {
		md = *r.Msg.Metadata
	}
	e := shared.Elicitation{}
	if md.Elicitation != nil {
		e = *md.Elicitation
	}
	pending := md.Status == shared.StatusPending
	answering := pending && r.readOnly == ""
	titleID := "elic-title-" + r.Msg.ID
	state := "perm-unknown" // a class name never carries what came with the message
	switch md.Status {
	case shared.StatusPending, shared.StatusSelected, shared.StatusCompleted, shared.StatusCancelled:
		state = "perm-" + string(md.Status)
	}
	return app.Div().Class("msg", "perm", "elic", state).DataSet("message-id", r.Msg.ID).
		Role("group").Aria("labelledby", titleID).Body(
		app.P().Class("perm-label").Text(elicitationLabel(md, e)),
		app.P().ID(titleID).Class("elic-question").Text(r.Msg.Content),
		app.If(e.Mode == shared.ElicitURL, func() app.UI { return urlLine(r.Msg.ID, e.URL, e.Host) }),
		app.If(pending && e.Mode == shared.ElicitForm, func() app.UI { return r.form(e, answering) }),
		app.If(md.Status == shared.StatusSelected && e.Action == shared.ElicitAccept && len(e.Content) > 0, func() app.UI { return answerList(e) }),
		app.If(answering, func() app.UI {
			accept := "Accept"
			if e.Mode == shared.ElicitURL {
				accept = "Done"
			}
			return app.Div().Class("perm-options").Body(
				disabled(app.Button().Type("button").Class("perm-option", "perm-allow", "elic-accept"), r.sending).
					OnClick(r.send(shared.ElicitAccept)).Text(accept),
				disabled(app.Button().Type("button").Class("perm-option", "perm-reject", "elic-decline"), r.sending).
					OnClick(r.send(shared.ElicitDecline)).Text("Decline"),
			)
		}),
		app.If(r.err != "", func() app.UI { return app.P().Class("perm-error").Role("alert").Text(r.err) }),
		app.If(answering && r.offer, func() app.UI {
			return app.Button().Type("button").Class("perm-notify").OnClick(r.askNotifications).
				Text("Notify me when an agent asks while this tab is hidden")
		}),
	)
}

// urlLine shows the page a question sends the person to: beside the link, the host it
// opens (the server's, in its xn-- form: see shared.Elicitation.Host), prominently (an
// agent may name any site, and the rest of an address can be made to look like another's);
// then the whole address as text. The link is there only when it is http(s) with a host:
// never a javascript: or data: link, whatever the server let by.
func urlLine(id, raw, host string) app.UI {
	u, err := url.Parse(raw)
	web := err == nil && (u.Scheme == "http" || u.Scheme == "https") && host != ""
	hostID := "elic-host-" + id
	return app.P().Class("elic-url").Body(
		app.If(web, func() app.UI {
			return app.A().Class("elic-open").Href(attrText(raw)).Target("_blank").Rel("noopener noreferrer").
				Aria("describedby", hostID).Text("Open the page")
		}),
		app.If(web, func() app.UI {
			return app.Span().ID(hostID).Class("elic-host").Body(app.Text("Opens "), app.Strong().Body(app.Code().Text(host)))
		}),
		app.Code().Class("elic-address").Text(raw),
	)
}

// form is one labelled input per field, disabled for a person who may not answer.
func (r *ElicitationRow) form(e shared.Elicitation, answering bool) app.UI {
	return app.FieldSet().Class("elic-form").Disabled(!answering || r.sending).Body(
		app.Range(e.Fields).Slice(func(i int) app.UI {
			f := e.Fields[i]
			id := "elic-" + r.Msg.ID + "-" + strconv.Itoa(i) // never the agent's name: an id is an attribute
			label := []app.UI{
				app.Text(f.Label()),
				app.If(f.Required, func() app.UI { return app.Span().Class("elic-required").Aria("hidden", "true").Text(" *") }),
			}
			// The description is read before typing.
			desc := app.If(f.Description != "", func() app.UI { return app.P().Class("elic-desc").Text(f.Description) })
			if f.Type == shared.FieldArray { // a group of checkboxes, named by its legend
				return app.FieldSet().Class("elic-field", "elic-checks").DataSet("field", attrText(f.Name)).Body(
					app.Legend().Class("elic-label").Body(label...), desc, r.checks(id, f))
			}
			return app.Div().Class("elic-field").DataSet("field", attrText(f.Name)).Body(
				app.Label().For(id).Class("elic-label").Body(label...), desc, r.input(id, f))
		}),
	)
}

// value is what the person typed in the field, or its default.
func (r *ElicitationRow) value(f shared.ElicitationField) any {
	if v, typed := r.values[f.Name]; typed {
		return v
	}
	return f.Default
}

// set is the handler that keeps what the person typed in the field.
func (r *ElicitationRow) set(f shared.ElicitationField, value func(app.Value) any) app.EventHandler {
	return func(ctx app.Context, _ app.Event) {
		if r.values == nil {
			r.values = map[string]any{}
		}
		r.values[f.Name], r.err = value(ctx.JSSrc()), ""
	}
}

// checks is a multi-select's checkbox per option, ticked as the person left it (or as
// its default); the answer lists the ticked values in the options' order.
func (r *ElicitationRow) checks(id string, f shared.ElicitationField) app.UI {
	ticked, _ := r.value(f).([]any)
	return app.Div().Class("elic-choices").Body(
		app.Range(f.Options).Slice(func(i int) app.UI {
			o := f.Options[i]
			toggle := func(s app.Value) any {
				now, _ := r.value(f).([]any) // not ticked: another box may have changed since this render
				list := []any{}
				for _, p := range f.Options {
					if p.Value == o.Value && s.Get("checked").Bool() || p.Value != o.Value && slices.Contains(now, any(p.Value)) {
						list = append(list, p.Value)
					}
				}
				return list
			}
			box := id + "-" + strconv.Itoa(i)
			return app.Label().For(box).Class("elic-choice").Body(
				app.Input().Type("checkbox").ID(box).Class("elic-check").
					Checked(slices.Contains(ticked, any(o.Value))).OnChange(r.set(f, toggle), app.EventScope(f.Name)),
				app.Span().Text(cmpOr(o.Title, o.Value)),
			)
		}),
	)
}

// input is the field's control, showing what the person typed or the field's default.
func (r *ElicitationRow) input(id string, f shared.ElicitationField) app.UI {
	v := r.value(f)
	text := func(s app.Value) any { return s.Get("value").String() }
	switch {
	case f.Type == shared.FieldBoolean:
		on, _ := v.(bool)
		return app.Input().Type("checkbox").ID(id).Class("elic-check").Checked(on).
			OnChange(r.set(f, func(s app.Value) any { return s.Get("checked").Bool() }), app.EventScope(f.Name))
	case len(f.Options) > 0:
		current, _ := v.(string)
		return app.Select().ID(id).Required(f.Required).OnChange(r.set(f, text), app.EventScope(f.Name)).Body(
			app.Option().Value("").Selected(current == "").Text("—"),
			app.Range(f.Options).Slice(func(i int) app.UI {
				o := f.Options[i]
				return app.Option().Value(attrText(o.Value)).Selected(o.Value == current).Text(cmpOr(o.Title, o.Value))
			}),
		)
	case f.Type == shared.FieldNumber || f.Type == shared.FieldInteger:
		in := app.Input().Type("number").ID(id).Required(f.Required).Step(1).OnInput(r.set(f, number), app.EventScope(f.Name))
		if f.Type == shared.FieldNumber {
			in = in.Attr("step", "any")
		}
		if f.Min != nil {
			in = in.Min(*f.Min)
		}
		if f.Max != nil {
			in = in.Max(*f.Max)
		}
		if n, ok := v.(float64); ok {
			in = in.Value(formatNumber(n))
		}
		return in
	}
	s, _ := v.(string)
	in := app.Input().Type("text").ID(id).Required(f.Required).Value(attrText(s)).OnInput(r.set(f, text), app.EventScope(f.Name))
	if f.Max != nil && *f.Max >= 0 && *f.Max < 1<<20 {
		in = in.MaxLength(int(*f.Max))
	}
	return in
}

// number is what a number input holds: nil when empty, the text when it is not a number
// (CheckAnswer then says so).
func number(s app.Value) any {
	raw := strings.TrimSpace(s.Get("value").String())
	if raw == "" {
		return nil
	}
	if n, err := strconv.ParseFloat(raw, 64); err == nil {
		return n
	}
	return raw
}

func formatNumber(n float64) string { return strconv.FormatFloat(n, 'f', -1, 64) }

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// answer is the form's content: each field's default, overridden by what was typed;
// empty fields (and lists with nothing ticked) are left out.
func (r *ElicitationRow) answer(e shared.Elicitation) map[string]any {
	content := map[string]any{}
	for _, f := range e.Fields {
		v := r.value(f)
		if list, ok := v.([]any); v != nil && v != "" && (!ok || len(list) > 0) {
			content[f.Name] = v
		}
	}
	return content
}

// send sends the answer; one that the question does not take is refused here, as the
// server would refuse it, and the person may try again.
func (r *ElicitationRow) send(action string) app.EventHandler {
	return func(ctx app.Context, _ app.Event) {
		if r.sending || r.Msg.Metadata == nil || r.Msg.Metadata.Elicitation == nil {
			return
		}
		e := *r.Msg.Metadata.Elicitation
		a := shared.ElicitationAnswer{Action: action}
		if action == shared.ElicitAccept && e.Mode == shared.ElicitForm {
			a.Content = r.answer(e)
		}
		if err := e.CheckAnswer(a); err != nil {
			r.err = shared.ErrorMessage(err) + "."
			return
		}
		r.sending, r.err = true, ""
		sid, mid := r.SessionID, r.Msg.ID
		ctx.Async(func() {
			m, err := api.AnswerElicitation(context.Background(), sid, mid, a)
			ctx.Dispatch(func(ctx app.Context) {
				switch {
				case err == nil:
					ctx.NewActionWithValue(actionMessage, m)
					return
				case shared.ErrorCode(err) == shared.CodeConflict:
					r.err = "This question was already answered."
				case errors.Is(err, client.ErrUnreachable):
					r.err = "Not sent: the server is unreachable. Try again."
				default:
					r.err = "Not sent: " + shared.ErrorMessage(err)
				}
				r.sending = false
			})
		})
	}
}

// elicitationLabel says where the question stands, and who answered it.
func elicitationLabel(md shared.Metadata, e shared.Elicitation) string {
	switch md.Status {
	case shared.StatusPending:
		return "The agent asks"
	case shared.StatusSelected:
		what := map[string]string{shared.ElicitAccept: "Accepted", shared.ElicitDecline: "Declined", shared.ElicitCancel: "Cancelled"}[e.Action]
		if what == "" {
			what = "Answered"
		}
		if md.AnsweredBy != "" {
			return what + " by " + md.AnsweredBy
		}
		return what
	case shared.StatusCompleted:
		return "Done: the agent says the step on its page is complete"
	}
	return "Not answered: the question was withdrawn"
}

// answerList is what the person answered, field by field, in the form's order.
func answerList(e shared.Elicitation) app.UI {
	var fields []shared.ElicitationField
	for _, f := range e.Fields {
		if _, ok := e.Content[f.Name]; ok {
			fields = append(fields, f)
		}
	}
	return app.Dl().Class("elic-answer").Body(
		app.Range(fields).Slice(func(i int) app.UI {
			f := fields[i]
			return app.Div().Body(app.Dt().Text(f.Label()), app.Dd().Text(answerText(f, e.Content[f.Name])))
		}),
	)
}

// answerText is one answered value as a person reads it.
func answerText(f shared.ElicitationField, v any) string {
	switch v := v.(type) {
	case bool:
		if v {
			return "yes"
		}
		return "no"
	case float64:
		return formatNumber(v)
	case string:
		for _, o := range f.Options {
			if o.Value == v && o.Title != "" {
				return o.Title
			}
		}
		return v
	case []any:
		items := make([]string, len(v))
		for i, item := range v {
			items[i] = answerText(f, item)
		}
		return strings.Join(items, ", ")
	}
	return ""
}
