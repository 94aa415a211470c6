package ui

import (
	"context"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/shared"
)

// host is a session page as a piece sees it (sessionHost), for a piece on its own: the
// state it passes down, and what the piece reported.
type host struct {
	sessionIn
	said     []string
	sessions []shared.Session
	shown    []shared.Message
}

func (h *host) in() sessionIn                          { return h.sessionIn }
func (h *host) say(text string)                        { h.said = append(h.said, text) }
func (h *host) fail(prefix string, err error)          { h.said = append(h.said, prefix+err.Error()) }
func (h *host) setSession(s shared.Session)            { h.sessions = append(h.sessions, s) }
func (h *host) show(_ app.Context, m []shared.Message) { h.shown = append(h.shown, m...) }

var _ = context.Background
