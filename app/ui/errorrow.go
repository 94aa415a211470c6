package ui

import (
	"context"
	"strconv"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/shared"
)

// ErrorRow is an error message: its headline, and when the agent's text is more than
// that (metadata.detail_bytes), a collapsed disclosure whose first opening fetches the
// whole text, like a tool call's content; closing it or leaving the page aborts the fetch.
type ErrorRow struct {
	app.Compo

	SessionID string
	Msg       shared.Message

	open   bool
	detail *shared.ErrorDetail
	onDemand
}

// OnDismount aborts a fetch in flight.
func (r *ErrorRow) OnDismount() { r.abort() }

func (r *ErrorRow) toggle(ctx app.Context, _ app.Event) {
	r.open = !r.open
	switch {
	case !r.open:
		r.abort()
	case !r.loading && r.detail == nil:
		r.fetch(ctx)
	}
}

func (r *ErrorRow) fetch(ctx app.Context) {
	sid, mid := r.SessionID, r.Msg.ID
	fetchOnDemand(&r.onDemand, ctx, "Details",
		func(c context.Context) (shared.ErrorDetail, error) { return api.ErrorDetail(c, sid, mid) },
		func(d shared.ErrorDetail) {
			d = d.Visible() // like the message it belongs to
			r.detail = &d
		})
}

// Render draws the headline and, when there is more, the disclosure.
func (r *ErrorRow) Render() app.UI {
	row := app.Div().Class("msg", "error").DataSet("message-id", r.Msg.ID)
	md := r.Msg.Metadata
	if md == nil || md.DetailBytes == 0 {
		return row.Body(app.P().Class("error-line").Text(r.Msg.Content))
	}
	label := "Details · " + sizeLabel(md.DetailBytes)
	bodyID := "error-" + r.Msg.ID
	return row.Body(
		app.P().Class("error-line").Text(r.Msg.Content),
		app.Div().Class("disclosure").Body(
			app.Button().Class("disclosure-toggle").Type("button").
				Aria("label", disclosureName(r.open, "the whole error", label)).
				Aria("expanded", strconv.FormatBool(r.open)).Aria("controls", bodyID).
				OnClick(r.toggle).
				Body(app.Span().Class("chevron").Aria("hidden", "true"), app.Text(label)),
			app.If(r.open, func() app.UI {
				return app.Div().ID(bodyID).Class("transcript").Body(r.renderBody())
			}),
		),
	)
}

func (r *ErrorRow) renderBody() app.UI {
	switch {
	case r.detail != nil:
		return app.Pre().Class("tool-text", "error-text").Text(r.detail.Text)
	case r.err != "":
		return app.P().Class("out-error").Role("alert").Text(r.err)
	}
	return app.P().Class("out-note", "loading").Aria("live", "polite").Text("Loading…")
}

// errorAlert is the session's error (why it ended, the agent's stderr tail), which the
// session carries whole: its headline, and the whole text behind a disclosure.
func errorAlert(text string) app.UI {
	line, more := shared.Headline(text)
	alert := app.Div().Class("alert", "session-error").Role("alert")
	if !more {
		return alert.Body(app.P().Class("error-line").Text("Agent error: " + line))
	}
	return alert.Body(
		app.P().Class("error-line").Text("Agent error: "+line),
		app.Details().Body(
			app.Summary().Text("Details · "+sizeLabel(len(text))),
			app.Pre().Class("tool-text", "error-text").Text(text),
		),
	)
}
