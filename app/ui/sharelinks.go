package ui

import (
	"context"
	"strconv"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/shared"
)

// ShareLinks is a task's read-only links, among the task's actions: a Share button opens
// them; its owner or an admin makes one (1, 7 or 30 days), sees its link once, and revokes
// any. Whoever may not share is told so by the server's refusal.
type ShareLinks struct {
	app.Compo

	TaskID string

	open  bool
	days  int
	links []shared.ShareLink
	made  string // the link just made: shown once
	err   string
}

func (s *ShareLinks) toggle(ctx app.Context, _ app.Event) {
	if s.open = !s.open; s.open {
		s.load(ctx)
	}
}

func (s *ShareLinks) load(ctx app.Context) {
	id := s.TaskID
	ctx.Async(func() {
		links, err := api.ShareLinks(context.Background(), id)
		ctx.Dispatch(func(app.Context) { s.links, s.err = links, errText(err) })
	})
}

func (s *ShareLinks) create(ctx app.Context, e app.Event) {
	e.PreventDefault()
	id, days := s.TaskID, s.days
	if days == 0 {
		days = 7 // the one selected at first
	}
	ctx.Async(func() {
		l, err := api.CreateShareLink(context.Background(), id, days)
		ctx.Dispatch(func(ctx app.Context) {
			if s.err = errText(err); err == nil {
				s.made = app.Window().Get("location").Get("origin").String() + l.URL
				s.load(ctx)
			}
		})
	})
}

func (s *ShareLinks) revoke(linkID string) app.EventHandler {
	return func(ctx app.Context, _ app.Event) {
		id := s.TaskID
		ctx.Async(func() {
			err := api.RevokeShareLink(context.Background(), id, linkID)
			ctx.Dispatch(func(ctx app.Context) {
				if s.err = errText(err); err == nil {
					s.made = ""
					s.load(ctx)
				}
			})
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return shared.ErrorMessage(err)
}

// Render draws the Share button, and the links while open.
func (s *ShareLinks) Render() app.UI {
	return app.Span().Class("share-links").Body(
		app.Button().Type("button").Class("secondary").Aria("expanded", strconv.FormatBool(s.open)).OnClick(s.toggle).Text("Share link"),
		app.If(s.open, func() app.UI {
			return app.Div().Class("share-panel").Body(
				app.Form().Class("inline-form").OnSubmit(s.create).Body(
					app.Label().For("share-days-"+s.TaskID).Text("A read-only link for"),
					app.Select().ID("share-days-"+s.TaskID).OnChange(func(ctx app.Context, _ app.Event) {
						s.days, _ = strconv.Atoi(ctx.JSSrc().Get("value").String())
					}).Body(
						app.Option().Value("1").Text("1 day"),
						app.Option().Value("7").Selected(true).Text("7 days"),
						app.Option().Value("30").Text("30 days"),
					),
					app.Button().Type("submit").Text("Make link"),
				),
				app.If(s.made != "", func() app.UI {
					return app.P().Body(app.Span().Text("Anyone with this link may read the task until it expires: "),
						app.Code().Class("secret-value").Text(s.made))
				}),
				app.If(s.err != "", func() app.UI { return app.P().Class("alert").Role("alert").Text(s.err) }),
				app.Ul().Class("account-list").Body(
					app.Range(s.links).Slice(func(i int) app.UI {
						l := s.links[i]
						return app.Li().Body(
							app.Span().Text("By "+shared.Visible(l.CreatedBy)+", until "+l.ExpiresAt.Local().Format("Jan 2 15:04")),
							app.Button().Type("button").Class("secondary", "danger").OnClick(s.revoke(l.ID), app.EventScope(l.ID)).Text("Revoke"),
						)
					}),
				),
			)
		}),
	)
}
