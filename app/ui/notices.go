package ui

import (
	"time"

	"github.com/maxence-charriere/go-app/v10/pkg/app"
)

// Notices shows that the server cannot be reached and that a new version is ready.
type Notices struct {
	app.Compo

	Offline bool
	Kept    time.Time // when what the page shows was read from the server, if it came with the page

	update bool
}

// OnMount picks up an update found before this page was shown.
func (n *Notices) OnMount(ctx app.Context) { n.update = updated(ctx) }

// OnAppUpdate is called by go-app when a worker has been activated, also the first one.
func (n *Notices) OnAppUpdate(ctx app.Context) { n.update = updated(ctx) }

// updated reports whether a new version is ready: go-app says so also when the first
// worker takes a page on a first visit, so the page's script (conch.js) must have seen a
// worker replace an older one.
func updated(ctx app.Context) bool {
	return ctx.AppUpdateAvailable() && app.Window().Get("conchWorkerReplaced").Truthy()
}

func (n *Notices) reload(ctx app.Context, _ app.Event) { ctx.Reload() }

// Render draws the notices, or an empty live region.
func (n *Notices) Render() app.UI {
	return app.Div().Class("notices").Aria("live", "polite").Body(
		app.If(n.Offline, func() app.UI {
			if !n.Kept.IsZero() {
				return app.P().Class("notice", "offline").Text("You are offline: the Conch server cannot be reached. Showing the messages as they were at " +
					n.Kept.Local().Format("Jan 2, 15:04") + "; they may be out of date. Retrying…")
			}
			return app.P().Class("notice", "offline").Text("You are offline: the Conch server cannot be reached. Showing what was loaded; retrying…")
		}),
		app.If(n.update, func() app.UI {
			return app.P().Class("notice", "update").Body(
				app.Span().Text("A new version of Conch is available. "),
				app.Button().Type("button").OnClick(n.reload).Text("Reload"),
			)
		}),
	)
}
