package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"conch/shared"

	"gorm.io/gorm"
)

// Several `conch serve` processes may share one PostgreSQL database. Each is a replica: it
// holds a lease (a row of replicas) that it renews, and a session belongs to the replica
// that started its agent (task_sessions.owner). A replica whose lease ran out is gone: any
// other takes over its sessions in Sweep. SQLite serves one process, so there a replica
// that joins takes over every other at once, and start-up recovery is the same sweep.

type replicaRow struct {
	ID         string `gorm:"primaryKey"`
	LeaseUntil int64
	Draining   int // 1 once the replica drains (Drain): it takes no new prompt
}

func (replicaRow) TableName() string { return "replicas" }

// ErrLeaseLost is Renew's error when the replica's lease was taken over: its sessions were
// closed by another replica, so its agents must stop.
var ErrLeaseLost = errors.New("this server's lease ran out and another server took over its sessions")

// ErrLeaseLapsed is Renew's error when the replica's lease had run out (it could not
// reach the database for that long) but no replica had taken it over. The others may
// have been cut off as long: it does not sweep before they had a turn to renew.
var ErrLeaseLapsed = errors.New("this server's lease had run out")

// SweptError is the error of a session Sweep closed, which people read.
const SweptError = "the server stopped while this session was live"

// Join makes this store's process the replica id, holding a lease of the given length
// from now; sessions created afterwards belong to it. On SQLite it takes over every other
// replica at once (Sweep then ends their sessions).
func (s *Store) Join(ctx context.Context, id string, lease time.Duration) error {
	if id == "" || lease <= 0 {
		return fmt.Errorf("join: a replica needs an id and a positive lease, got %q and %s", id, lease)
	}
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		until := s.now().Add(lease).UnixNano()
		if s.dialect.sqlite {
			if err := tx.Where("id <> ?", id).Delete(&replicaRow{}).Error; err != nil {
				return err
			}
			// One process serves a SQLite file: no other replica can take its lease over
			// while it lives, only a process that joins after it. So the lease never runs
			// out and is never renewed (Renew), and a running command's flushes are not
			// joined by a write of the lease every few seconds (docs/PERFORMANCE.md,
			// "Where each page goes").
			until = math.MaxInt64
		}
		return tx.Create(&replicaRow{ID: id, LeaseUntil: until}).Error
	})
	if err != nil {
		return fmt.Errorf("join as replica %s: %w", id, err)
	}
	s.replica, s.lease = id, lease
	return nil
}

// Drain marks this replica as stopping: from now on a prompt another replica takes for one
// of its sessions is refused (CodeDraining) before anything is stored, as it would be here,
// instead of being addressed to an agent that will not take another turn. The person sends
// it again; once this replica is gone, the session is anyone's (its agent resumes).
func (s *Store) Drain(ctx context.Context) error {
	if err := s.db.WithContext(ctx).Model(&replicaRow{}).Where("id = ?", s.replica).Update("draining", 1).Error; err != nil {
		return fmt.Errorf("mark the replica draining: %w", err)
	}
	return nil
}

// Renew extends the replica's lease by its length from now. ErrLeaseLapsed says it had
// run out, though no replica took it over yet; ErrLeaseLost that another replica had
// taken it over (the lease is taken anew for the sessions started from now). On SQLite,
// where a lease never runs out (Join), it only reads whether the lease is still there:
// once a newer process has taken the file over, this one gets no lease again and every
// renewal says ErrLeaseLost, so only the newest process runs agents on a SQLite file.
func (s *Store) Renew(ctx context.Context) error {
	if s.dialect.sqlite {
		var held int64
		if err := s.db.WithContext(ctx).Model(&replicaRow{}).Where("id = ?", s.replica).Count(&held).Error; err != nil {
			return fmt.Errorf("renew the lease: %w", err)
		}
		if held == 0 {
			return ErrLeaseLost
		}
		return nil
	}
	now := s.now()
	until := now.Add(s.lease).UnixNano()
	for _, cond := range []struct {
		where string
		err   error
	}{{"id = ? AND lease_until >= ?", nil}, {"id = ? AND lease_until < ?", ErrLeaseLapsed}} {
		res := s.db.WithContext(ctx).Model(&replicaRow{}).Where(cond.where, s.replica, now.UnixNano()).Update("lease_until", until)
		if res.Error != nil {
			return fmt.Errorf("renew the lease: %w", res.Error)
		}
		if res.RowsAffected > 0 {
			return cond.err
		}
	}
	if err := s.db.WithContext(ctx).Create(&replicaRow{ID: s.replica, LeaseUntil: until}).Error; err != nil {
		return fmt.Errorf("renew the lease: %w", err)
	}
	return ErrLeaseLost
}

// Leave gives the lease up, after a clean stop has closed the replica's sessions.
func (s *Store) Leave(ctx context.Context) error {
	if err := s.db.WithContext(ctx).Delete(&replicaRow{}, "id = ?", s.replica).Error; err != nil {
		return fmt.Errorf("give the lease up: %w", err)
	}
	return nil
}

// Replica is the id Join gave this store's process ("" before Join).
func (s *Store) Replica() string { return s.replica }

// ResumableNote is the status message of a session a sweep left resumable.
const ResumableNote = "The server stopped while this session was live. Your next prompt starts the agent again, in the same directory, and it resumes this conversation."

// Swept is what a sweep changed, for publishing.
type Swept struct {
	Sessions []shared.Session // closed, or left resumable
	Messages []shared.Message // cancelled tool calls and permission requests
	Added    []shared.Message // the status messages of the sessions left resumable
}

// Sweep ends what no live replica runs: the leases that ran out are deleted, and the live
// sessions of replicas without a lease (and of none, like sessions of a process before
// this one) become closed, their unfinished tool calls and pending permission requests
// cancelled, output kept. A session whose agent can take it up again (SetAgentSession)
// is left resumable instead: ready, its agent stopped, owned by no replica, so that the
// next prompt on any replica resumes it (ClaimSession). Sessions are closed in one
// transaction with row locks, so of two replicas sweeping at once each session is closed
// by one. Commands addressed to a
// replica that is gone are dropped: its sessions are closed.
func (s *Store) Sweep(ctx context.Context) (Swept, error) {
	var (
		out    Swept
		closed []string
		now    = s.stamp()
	)
	// The sessions of replicas that hold a lease; the subquery's condition repeats the
	// partial index's.
	const leased = "SELECT id FROM task_sessions WHERE " + live + " AND owner IN (SELECT id FROM replicas)"
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Where("lease_until < ? AND id <> ?", now, s.replica).Delete(&replicaRow{}).Error; err != nil {
			return err
		}
		// Not those left resumable already: no replica owns them until a prompt claims one.
		q := locked(tx.Model(&sessionRow{})).Where(live + " AND id NOT IN (" + leased + ") AND NOT (stopped AND owner = '' AND agent_resume <> '')")
		if s.replica != "" { // its own, when its lease was taken over, are its to end (Renew)
			q = q.Where("owner <> ?", s.replica)
		}
		if err := q.Pluck("id", &closed).Error; err != nil {
			return err
		}
		if len(closed) == 0 {
			return tx.Where("owner NOT IN (SELECT id FROM replicas)").Delete(&commandRow{}).Error
		}
		var resumable []sessionRow
		if err := tx.Where("id IN ? AND agent_resume <> ''", closed).Find(&resumable).Error; err != nil {
			return err
		}
		if err := tx.Model(&sessionRow{}).Where("id IN ? AND agent_resume = ''", closed).
			Updates(map[string]any{"state": string(shared.SessionClosed), "error": SweptError, "updated_at": now}).Error; err != nil {
			return err
		}
		for _, r := range resumable {
			if err := tx.Model(&sessionRow{}).Where("id = ?", r.ID).Updates(map[string]any{"state": string(shared.SessionReady),
				"error": "", "stopped": true, "owner": "", "updated_at": now}).Error; err != nil {
				return err
			}
			if r.Stopped { // its stop was said already, and what the next prompt does
				continue
			}
			status, err := s.addStatus(tx, r, ResumableNote, nil)
			if err != nil {
				return err
			}
			out.Added = append(out.Added, *status)
		}
		return tx.Where("owner NOT IN (SELECT id FROM replicas)").Delete(&commandRow{}).Error
	})
	if err != nil {
		return Swept{}, fmt.Errorf("sweep: %w", err)
	}
	// Apart from the sessions' transaction: a call left unfinished by a sweep that stopped
	// half way is found by the next, because its session is no longer live and leased.
	var active []string
	if err := s.db.WithContext(ctx).Model(&messageRow{}).Distinct("session_id").
		Where(unfinished+" AND session_id NOT IN ("+leased+")").Pluck("session_id", &active).Error; err != nil {
		return Swept{}, fmt.Errorf("sweep: %w", err)
	}
	for _, id := range active {
		msgs, err := s.CancelActiveToolCalls(ctx, id)
		if err != nil {
			return Swept{}, fmt.Errorf("sweep session %s: %w", id, err)
		}
		out.Messages = append(out.Messages, msgs...)
	}
	if len(closed) > 0 {
		var rows []sessionRow
		if err := s.db.WithContext(ctx).Where("id IN ?", closed).Find(&rows).Error; err != nil {
			return Swept{}, fmt.Errorf("sweep: %w", err)
		}
		for _, r := range rows {
			out.Sessions = append(out.Sessions, r.session())
		}
	}
	return out, nil
}
