package ui

import (
	"errors"
	"time"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/app/client"
	"conch/shared"
)

// Live states of a session page's WebSocket.
const (
	liveConnecting   = "Connecting…"
	liveOn           = "Live"
	liveReconnecting = "Reconnecting…"
)

// pageStatus is what the session page says of itself: the live indicator of its
// WebSocket, the offline notice and the alert line. The page's other pieces report to it
// through say and fail (sessionIn), never by setting its fields.
type pageStatus struct {
	live    string
	offline bool
	err     string
	kept    time.Time // when the server read the messages shown, until the app has listed them itself
}

// begin is the status of a page that starts following a session; kept stays when the
// page shows what came with it (its boot).
func (s *pageStatus) begin(booted bool) {
	kept := s.kept
	*s = pageStatus{live: liveConnecting}
	if booted {
		s.kept = kept
	}
}

// keptAt says that the page shows messages as the server read them at at, until the app
// has listed them itself (synced).
func (s *pageStatus) keptAt(at time.Time) { s.kept = at }

// isOffline reports whether the server cannot be reached.
func (s *pageStatus) isOffline() bool { return s.offline }

// say puts text on the alert line ("" clears it).
func (s *pageStatus) say(text string) { s.err = text }

// fail reports a request that failed: the offline notice when the server cannot be
// reached, else the alert line with prefix and the error.
func (s *pageStatus) fail(prefix string, err error) {
	s.offline = errors.Is(err, client.ErrUnreachable)
	if !s.offline {
		s.err = prefix + err.Error()
	}
}

// reconnecting is the status between a WebSocket that ended with err and the next.
func (s *pageStatus) reconnecting(err error) {
	s.live = liveReconnecting
	s.fail("", err)
}

// synced is the status of a page whose WebSocket is up and whose messages are listed.
func (s *pageStatus) synced() { *s = pageStatus{live: liveOn} }

// ended is the status of a page whose session is gone (why: "" when the page says it
// otherwise): nothing more will come of it.
func (s *pageStatus) ended(why string) { s.live, s.err = "", why }

// liveView is the live indicator on the session bar.
func (s *pageStatus) liveView() app.UI {
	if s.live == "" {
		return nil
	}
	return app.Span().Class("live", "live-"+map[bool]string{true: "on", false: "off"}[s.live == liveOn]).Text(s.live)
}

// views are the notices and the alerts under the session bar: the session's error (a
// closed session's reason is where the prompt box was) and the page's alert line.
func (s *pageStatus) views(session *shared.Session) []app.UI {
	return []app.UI{
		&Notices{Offline: s.offline, Kept: s.kept},
		// What comes and goes sits in boxes that stay: go-app matches children by position,
		// so a banner appearing before the chat would replace the chat, and every open
		// output in it would close and forget its search.
		app.Div().Class("alerts").Body(
			app.If(session != nil && session.Error != "" && session.State != shared.SessionClosed, func() app.UI {
				return errorAlert(session.Error)
			}),
			app.If(s.err != "", func() app.UI { return app.P().Class("alert").Text(s.err) }),
		),
	}
}
