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
	s.usageMu.Lock()
	defer s.usageMu.Unlock()
	s.nextUsage = &v
	if !s.usageWriting {
		s.usageWriting = true
		go s.storeUsage()
	}
}

// usageStored returns once the usage reports received so far are stored: a turn's cost
// counts against its task's cap (attempt.go) when the turn ends.
func (s *session) usageStored() {
	s.usageMu.Lock()
	defer s.usageMu.Unlock()
	for s.usageWriting {
		s.usageIdle.Wait()
	}
}

// storeUsage stores the latest usage report until none is waiting.
func (s *session) storeUsage() {
	for {
		s.usageMu.Lock()
		v := s.nextUsage
		s.nextUsage = nil
		if v == nil {
			s.usageWriting = false
			s.usageIdle.Broadcast()
			s.usageMu.Unlock()
			return
		}
		s.usageMu.Unlock()
		sess, err := s.m.cfg.Store.SetSessionUsage(context.Background(), s.id, *v)
		if shared.ErrorCode(err) == shared.CodeInvalid {
			s.log.Warn("the agent's usage report is refused", "err", err)
			continue
		}
		s.publish(sess, err)
	}
}
