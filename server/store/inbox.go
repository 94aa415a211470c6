package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"conch/shared"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// The inbox carries what a person asked of a session to the replica that runs its agent,
// when another replica took the request: the row is committed with what the request
// stored (the prompt, the permission answer), and the owner takes its rows in order.

// CommandKind is what an inbox command asks of the session's agent.
type CommandKind string

const (
	CommandPrompt     CommandKind = "prompt"     // run Body as a turn (the prompt is stored)
	CommandCancel     CommandKind = "cancel"     // cancel the running turn
	CommandPermission CommandKind = "permission" // hand the stored answer (an option, or a question's answer) Body of request MessageID to the agent
	CommandMode       CommandKind = "mode"       // switch to mode Body; the sender waits for the outcome
	CommandStop       CommandKind = "stop"       // stop the agent (its task is being deleted, Body says); the sender waits
	CommandStopAgent  CommandKind = "stop_agent" // stop the agent, the session stays (a person asked); the sender waits
	CommandResume     CommandKind = "resume"     // start the stopped agent and resume, no prompt; the sender waits
	CommandConfig     CommandKind = "config"     // set a config option (Body: JSON of shared.ConfigRequest); the sender waits
)

// Command is one request addressed to the replica that owns its session.
type Command struct {
	ID        string // given by Forward when empty
	Sender    string // the replica that forwarded it (Forward sets it)
	SessionID string
	Kind      CommandKind
	MessageID string
	Body      string
}

type commandRow struct {
	ID        string `gorm:"primaryKey"`
	Owner     string
	Sender    string
	SessionID string
	Kind      string
	MessageID string
	Body      string
	CreatedAt int64
}

func (commandRow) TableName() string { return "inbox" }

// errOwnerGone answers a request for a session whose replica is gone and not swept yet:
// the same answer as for the closed session it is about to become.
var errOwnerGone = shared.Errorf(shared.CodeConflict, "session is closed: the server running its agent stopped")

// errOwnerDraining answers a prompt for a session whose replica is stopping (Drain), as
// that replica itself would: nothing is stored, and it is sent again in a moment.
var errOwnerDraining = shared.Errorf(shared.CodeDraining,
	"the server running this session's agent is stopping: send it again in a moment (Retry-After), and another server takes it")

// Forward addresses c to the replica that runs its session and returns that replica, or
// "" when this process runs it (or no replica does: the session has ended), and the
// caller acts itself. A session whose replica lost its lease is a conflict.
func (s *Store) Forward(ctx context.Context, c Command) (string, error) {
	var owner string
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		sess, err := getSession(tx, c.SessionID)
		if err != nil {
			return err
		}
		owner, err = s.forward(tx, sess, c)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("forward %s: %w", c.Kind, err)
	}
	return owner, nil
}

// forward is Forward in the caller's transaction, for the session as it read it.
func (s *Store) forward(tx *gorm.DB, sess sessionRow, c Command) (string, error) {
	if sess.Owner == "" || sess.Owner == s.replica || shared.SessionState(sess.State).Ended() {
		return "", nil
	}
	var owner []replicaRow
	if err := tx.Where("id = ? AND lease_until >= ?", sess.Owner, s.stamp()).Limit(1).Find(&owner).Error; err != nil {
		return "", err
	}
	if len(owner) == 0 {
		return "", errOwnerGone
	}
	if owner[0].Draining != 0 && c.Kind == CommandPrompt {
		return "", errOwnerDraining
	}
	if c.ID == "" {
		c.ID = newID()
	}
	row := commandRow{ID: c.ID, Owner: sess.Owner, Sender: s.replica, SessionID: sess.ID, Kind: string(c.Kind),
		MessageID: c.MessageID, Body: c.Body, CreatedAt: s.stamp()}
	if err := tx.Create(&row).Error; err != nil {
		return "", err
	}
	return sess.Owner, nil
}

// TakeCommands removes and returns the commands addressed to this replica, oldest first.
func (s *Store) TakeCommands(ctx context.Context) ([]Command, error) {
	var rows []commandRow
	if err := s.db.WithContext(ctx).Clauses(clause.Returning{}).Where("owner = ?", s.replica).Delete(&rows).Error; err != nil {
		return nil, fmt.Errorf("take commands: %w", err)
	}
	slices.SortFunc(rows, func(a, b commandRow) int {
		return cmp.Or(cmp.Compare(a.CreatedAt, b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	out := make([]Command, len(rows))
	for i, r := range rows {
		out[i] = Command{ID: r.ID, Sender: r.Sender, SessionID: r.SessionID, Kind: CommandKind(r.Kind), MessageID: r.MessageID, Body: r.Body}
	}
	return out, nil
}

// ChangedSince returns the session's messages added or changed at or after since, oldest
// first: what a replica whose notifications stopped for a while may have missed.
func (s *Store) ChangedSince(ctx context.Context, sessionID string, since time.Time) ([]shared.Message, error) {
	rows, err := scanMessages(s.db.WithContext(ctx).Model(&messageRow{}).Select(messageColumns).
		Where("session_id = ? AND updated_at >= ?", sessionID, since.UnixNano()).Order("seq"), 0)
	if err != nil {
		return nil, fmt.Errorf("changed messages: %w", err)
	}
	return messagesOf(rows)
}
