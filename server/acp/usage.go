package acp

import (
	"context"

	sdk "github.com/coder/acp-go-sdk"

	"conch/shared"
)

// An agent's usage reports (ACP usage_update) may come after every model call: the
// reader keeps only the latest one and a writer of its own stores it, so that a stream of
// them never holds the reader up (the SDK drops a connection whose notifications queue
// up). The store checks and bounds what they say.

// usage takes a usage_update on the reader.
func (s *session) usage(u *sdk.SessionUsageUpdate) {
	v := shared.Usage{ContextUsed: int64(u.Used), ContextSize: int64(u.Size)}
	if u.Cost != nil {
		v.Cost = &shared.Cost{Amount: u.Cost.Amount, Currency: u.Cost.Currency}
	}
	s.do(func(c *core) {
		c.nextUsage = &v
		if c.usageWriter == nil {
			c.usageWriter = make(chan struct{})
			go s.storeUsage(c.usageWriter)
		}
	})
}

// usageStored returns once the usage reports received so far are stored: a turn's cost
// counts against its task's cap (attempt.go) when the turn ends.
func (s *session) usageStored() {
	var writer chan struct{}
	s.do(func(c *core) { writer = c.usageWriter })
	if writer != nil {
		select {
		case <-writer:
		case <-s.over:
		}
	}
}

// storeUsage stores the latest usage report until none is waiting; then it closes
// writer.
func (s *session) storeUsage(writer chan struct{}) {
	for {
		var v *shared.Usage
		if !s.do(func(c *core) {
			if v, c.nextUsage = c.nextUsage, nil; v == nil {
				c.usageWriter = nil
				close(writer)
			}
		}) || v == nil {
			return
		}
		_, err := s.write(func() (shared.Session, error) {
			return s.m.cfg.Store.SetSessionUsage(context.Background(), s.id, *v)
		})
		if shared.ErrorCode(err) == shared.CodeInvalid {
			s.log.Warn("the agent's usage report is refused", "err", err)
		} else if err != nil {
			s.log.Error("store usage", "err", err)
		}
	}
}
