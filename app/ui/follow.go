package ui

import (
	"context"
	"errors"
	"time"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/app/client"
	"conch/shared"
	"conch/shared/poll"
)

// follow keeps the page in sync: a WebSocket subscription, and after each reconnect (and
// after a boot: loaded) a re-list so that nothing missed is lost and nothing is doubled
// (the timeline merges by id).
func (p *SessionPage) follow(ctx app.Context, c context.Context, id string, loaded bool) {
	go p.refreshSession(ctx, c, id) // meanwhile, the messages
	failures := 0
	for c.Err() == nil {
		synced, err := p.connect(ctx, c, id, loaded)
		if c.Err() != nil {
			return
		}
		if shared.ErrorCode(err) == shared.CodeNotFound {
			dispatchIn(ctx, c, p.notFound)
			return // retrying cannot help
		}
		if synced {
			loaded, failures = true, 0
		}
		failures++
		dispatchIn(ctx, c, func(app.Context) {
			p.live = liveReconnecting
			p.fail("", err)
		})
		select {
		case <-c.Done():
			return
		case <-time.After(poll.Backoff(failures)):
		}
	}
}

func (p *SessionPage) refreshSession(ctx app.Context, c context.Context, id string) {
	s, err := api.GetSession(c, id)
	if c.Err() != nil {
		return
	}
	dispatchIn(ctx, c, func(ctx app.Context) {
		switch {
		case err == nil:
			p.setSession(s)
			go p.checkAccess(ctx, c, s.TaskID)
		case shared.ErrorCode(err) == shared.CodeNotFound:
			p.notFound(ctx)
		case errors.Is(err, client.ErrUnreachable):
			p.offline = true
		default:
			p.err = err.Error()
		}
	})
}

// connect runs one WebSocket connection until it ends; synced reports whether the
// messages were listed on it.
func (p *SessionPage) connect(ctx app.Context, c context.Context, id string, loaded bool) (synced bool, err error) {
	conn, err := api.Dial(c)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	stop := context.AfterFunc(c, func() { conn.Close() })
	defer stop()

	if err := conn.Subscribe(c, id); err != nil {
		return false, err
	}
	// Subscribed first, listed second: whatever happens in between arrives twice, and
	// merging by id keeps one copy.
	var msgs []shared.Message
	latest, err := conn.List(c, shared.ListRequest{SessionID: id, Limit: new(pageSize), Sort: shared.SortDesc})
	if err != nil {
		return false, err
	}
	if loaded {
		if msgs, err = p.catchUp(ctx, c, conn, id); err != nil {
			return false, err
		}
	}
	// The session too, once subscribed: a change between the first fetch (started before
	// the WebSocket, for a quicker header) and the subscription would be missed otherwise.
	// The newer version wins (setSession).
	p.refreshSession(ctx, c, id)
	// The first load shows the newest messages at once and the rest of the page in steps
	// (olderInSteps), as older chunks: the end of the chat, where the reader starts, paints sooner.
	var rest []shared.Message
	if !loaded {
		latest.Messages, rest = firstPaintOf(latest.Messages)
	}
	msgs = append(msgs, latest.Messages...)
	dispatchIn(ctx, c, func(ctx app.Context) {
		p.show(ctx, msgs)
		p.conv.listed(ctx, latest.HasMore)
		p.live, p.offline, p.err, p.kept = liveOn, false, "", time.Time{}
	})
	p.conv.paint(ctx, c, rest)

	for env := range conn.Notifications() {
		p.notify(ctx, c, id, env)
	}
	return true, conn.Err()
}

// catchUp lists every message newer than the newest one shown, page by page.
func (p *SessionPage) catchUp(ctx app.Context, c context.Context, conn *client.Conn, id string) ([]shared.Message, error) {
	lastCh := make(chan string, 1)
	dispatchIn(ctx, c, func(app.Context) { lastCh <- p.conv.last() })
	var after string
	select {
	case after = <-lastCh:
	case <-c.Done():
		return nil, c.Err()
	}
	var msgs []shared.Message
	for after != "" {
		page, err := conn.List(c, shared.ListRequest{SessionID: id, After: after, Limit: new(shared.MaxPageLimit)})
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, page.Messages...)
		if !page.HasMore || page.Cursor == "" {
			break
		}
		after = page.Cursor
	}
	return msgs, nil
}

func (p *SessionPage) notify(ctx app.Context, c context.Context, id string, env shared.Envelope) {
	switch env.Action {
	case shared.ActionMessageAdded, shared.ActionMessageUpdated:
		var m shared.Message
		if env.Decode(&m) != nil || m.SessionID != id {
			return
		}
		dispatchIn(ctx, c, func(ctx app.Context) {
			if env.Action == shared.ActionMessageAdded {
				notifyHidden(ctx, m)
			}
			p.show(ctx, []shared.Message{m})
		})
	case shared.ActionSessionUpdated:
		var s shared.Session
		if env.Decode(&s) != nil || s.ID != id {
			return
		}
		dispatchIn(ctx, c, func(app.Context) { p.setSession(s) })
	case shared.ActionSessionDeleted:
		dispatchIn(ctx, c, func(app.Context) {
			p.live, p.err = "", "This session was deleted with its task."
			p.cancel() // nothing more will come of it: stop following
		})
	}
}
