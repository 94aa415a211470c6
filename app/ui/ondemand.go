package ui

import (
	"context"
	"errors"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/app/client"
	"conch/shared"
)

// onDemand is the state of a body fetched when its disclosure opens (a tool call's
// content, an error's whole text): at most one fetch in flight, which closing the
// disclosure or leaving the page aborts.
type onDemand struct {
	loading bool
	err     string
	cancel  context.CancelFunc // the fetch in flight
}

func (o *onDemand) abort() {
	if o.cancel != nil {
		o.cancel()
		o.cancel = nil
	}
	o.loading = false
}

// fetchOnDemand runs get in the background and hands its answer to done on the UI
// goroutine, unless aborted meanwhile; a failure sets err, naming what is unavailable.
func fetchOnDemand[T any](o *onDemand, ctx app.Context, what string, get func(context.Context) (T, error), done func(T)) {
	c, cancel := context.WithCancel(context.Background())
	o.cancel, o.loading, o.err = cancel, true, ""
	ctx.Async(func() {
		v, err := get(c)
		ctx.Dispatch(func(app.Context) {
			if c.Err() != nil { // closed or left meanwhile
				return
			}
			o.cancel, o.loading = nil, false
			switch {
			case err == nil:
				done(v)
			case errors.Is(err, client.ErrUnreachable):
				o.err = what + " unavailable: the server is unreachable."
			default:
				o.err = what + " unavailable: " + shared.ErrorMessage(err)
			}
		})
	})
}
