package ui

import (
	"time"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/shared"
)

// The session page's status: the live indicator of its WebSocket on the bar, and under
// the bar the notices (offline, a new version) and the alerts (the session's error, the
// page's alert line). The page owns what they show (follow.go, SessionPage.say and fail).

// Live states of a session page's WebSocket.
const (
	liveConnecting   = "Connecting…"
	liveOn           = "Live"
	liveReconnecting = "Reconnecting…"
)

// liveView is the live indicator: nothing once the page follows no session.
func liveView(live string) app.UI {
	if live == "" {
		return nil
	}
	return app.Span().Class("live", "live-"+map[bool]string{true: "on", false: "off"}[live == liveOn]).Text(live)
}

// statusViews are the notices (offline: the server cannot be reached, showing what it
// read at kept when that is known) and the alerts: the session's error (a closed
// session's reason is where the prompt box was) and the page's alert line.
func statusViews(offline bool, kept time.Time, session *shared.Session, alert string) []app.UI {
	return []app.UI{
		&Notices{Offline: offline, Kept: kept},
		// What comes and goes sits in boxes that stay: go-app matches children by position,
		// so a banner appearing before the chat would replace the chat, and every open
		// output in it would close and forget its search.
		app.Div().Class("alerts").Body(
			app.If(session != nil && session.Error != "" && session.State != shared.SessionClosed, func() app.UI {
				return errorAlert(session.Error)
			}),
			app.If(alert != "", func() app.UI { return app.P().Class("alert").Text(alert) }),
		),
	}
}
