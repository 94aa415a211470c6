package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"conch/shared"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

type messageRow struct {
	ID              string
	SessionID       string
	TaskID          string
	AuthorType      string
	Type            string
	Content         string
	Metadata        []byte // JSON of shared.Metadata: summary only, never a body
	Status          string // metadata.status, kept in a column for recovery queries
	ClientMessageID *string
	CreatedAt       int64
	UpdatedAt       int64
}

func (messageRow) TableName() string { return "messages" }

type outputRow struct {
	MessageID   string `gorm:"primaryKey"`
	Stdout      string
	Stderr      string
	ExitCode    *int
	Signal      string
	Truncated   bool
	StdoutTotal int64
	StderrTotal int64
	StartedAt   *int64
	FinishedAt  *int64
}

func (outputRow) TableName() string { return "shell_outputs" }

// message is the projection: every message leaving the store is built here, from the row
// alone, so a message published live and the same message listed later are identical.
func (r messageRow) message() (shared.Message, error) {
	m := shared.Message{ID: r.ID, SessionID: r.SessionID, TaskID: r.TaskID,
		AuthorType: shared.AuthorType(r.AuthorType), Type: shared.MessageType(r.Type), Content: r.Content,
		CreatedAt: fromNanos(r.CreatedAt), UpdatedAt: fromNanos(r.UpdatedAt)}
	if len(r.Metadata) > 0 {
		m.Metadata = new(shared.Metadata)
		if err := json.Unmarshal(r.Metadata, m.Metadata); err != nil {
			return shared.Message{}, fmt.Errorf("decode metadata of message %s: %w", r.ID, err)
		}
	}
	if se := shared.ShellOf(m); se != nil {
		// Summaries stored before the totals existed count none: produced >= kept.
		o := &se.Output
		o.StdoutTotalBytes, o.StderrTotalBytes = max(o.StdoutTotalBytes, int64(o.StdoutBytes)), max(o.StderrTotalBytes, int64(o.StderrBytes))
	}
	return m, nil
}

// NewMessage is a message to store. Output is the output of a tool_execute message as
// captured, before any bound: the store applies the output rules (the bound, the summary,
// a failed status on a known non-zero exit), so a writer hands over facts only and a
// summary in Metadata is replaced.
type NewMessage struct {
	SessionID  string
	AuthorType shared.AuthorType
	Type       shared.MessageType
	Content    string
	Metadata   *shared.Metadata
	Output     *shared.ShellOutput
	// ToolContent is the content of a tool call that is not a shell command (metadata
	// normalized as tool_content), before any bound; the store bounds and summarizes it.
	ToolContent []shared.ToolContentItem
}

// Update changes a stored message; nil fields stay as they are. Output and ToolContent
// are taken as in NewMessage.
type Update struct {
	Content     *string
	Metadata    *shared.Metadata
	Output      *shared.ShellOutput
	ToolContent []shared.ToolContentItem
}

// settle applies the output rules to metadata about to be stored. Every write passes
// here, so the rules run once and no writer can store other results: the output is
// bounded, the summary comes from it (or stays prev when there is no new output), and a
// known non-zero exit code makes the status failed whatever the agent said. It works on
// a copy; the caller's values are never changed.
func settle(md *shared.Metadata, out *shared.ShellOutput, prev shared.ShellOutputSummary) (*shared.Metadata, *shared.ShellOutput) {
	if md == nil {
		return nil, nil
	}
	c := *md
	if c.Normalized == nil || c.Normalized.ShellExec == nil {
		return &c, nil
	}
	n := *c.Normalized
	se := *n.ShellExec
	se.Output = prev
	if out != nil {
		b := out.Bounded()
		out = &b
		se.Output = b.Summarize()
	}
	if code := se.Output.ExitCode; code != nil && *code != 0 {
		c.Status = shared.StatusFailed
	}
	n.ShellExec = &se
	c.Normalized = &n
	return &c, out
}

func encodeMetadata(md *shared.Metadata) ([]byte, error) {
	if md == nil {
		return nil, nil
	}
	return json.Marshal(md)
}

// CreateMessage stores a message (and the output of a shell command) in one transaction.
func (s *Store) CreateMessage(ctx context.Context, nm NewMessage) (shared.Message, error) {
	msgs, err := s.CreateMessages(ctx, []NewMessage{nm})
	if err != nil {
		return shared.Message{}, err
	}
	return msgs[0], nil
}

// CreateMessages stores messages, in order, in one transaction: all or none. Importing
// or seeding many costs one commit instead of one each.
func (s *Store) CreateMessages(ctx context.Context, nms []NewMessage) ([]shared.Message, error) {
	rows := make([]messageRow, len(nms))
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		sessions := map[string]sessionRow{}
		for i, nm := range nms {
			sess, ok := sessions[nm.SessionID]
			if !ok {
				var err error
				if sess, err = getSession(tx, nm.SessionID); err != nil {
					return err
				}
				sessions[nm.SessionID] = sess
			}
			md, out := settle(nm.Metadata, nm.Output, shared.ShellOutputSummary{})
			content := settleContent(md, nm.ToolContent, nil)
			row, err := s.insertMessage(tx, sess, nm.AuthorType, nm.Type, nm.Content, md, nil)
			if err != nil {
				return err
			}
			if err := putContent(tx, row.ID, content); err != nil {
				return err
			}
			if err := putOutput(tx, row.ID, out); err != nil {
				return err
			}
			rows[i] = row
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("create message: %w", err)
	}
	msgs := make([]shared.Message, len(rows))
	for i, r := range rows {
		m, err := r.message()
		if err != nil {
			return nil, err
		}
		msgs[i] = m
	}
	return msgs, nil
}

func (s *Store) insertMessage(tx *gorm.DB, sess sessionRow, author shared.AuthorType, typ shared.MessageType,
	content string, md *shared.Metadata, clientID *string) (messageRow, error) {
	raw, err := encodeMetadata(md)
	if err != nil {
		return messageRow{}, err
	}
	now := s.stamp()
	row := messageRow{ID: newID(), SessionID: sess.ID, TaskID: sess.TaskID, AuthorType: string(author),
		Type: string(typ), Content: storable(content), Metadata: raw, ClientMessageID: clientID, CreatedAt: now, UpdatedAt: now}
	if md != nil {
		row.Status = string(md.Status)
	}
	if err := tx.Create(&row).Error; err != nil {
		return messageRow{}, err
	}
	err = tx.Model(&sessionRow{}).Where("id = ?", sess.ID).
		UpdateColumn("message_count", gorm.Expr("message_count + 1")).Error
	return row, err
}

func putOutput(tx *gorm.DB, messageID string, out *shared.ShellOutput) error {
	if out == nil {
		return nil
	}
	row := outputRow{MessageID: messageID, Stdout: out.Stdout, Stderr: out.Stderr,
		ExitCode: out.ExitCode, Signal: out.Signal, Truncated: out.Truncated,
		StdoutTotal: out.StdoutTotalBytes, StderrTotal: out.StderrTotalBytes,
		StartedAt: toNanos(out.StartedAt), FinishedAt: toNanos(out.FinishedAt)}
	return tx.Clauses(clause.OnConflict{UpdateAll: true}).Create(&row).Error
}

// AddUserMessage stores a user prompt. A repeated clientMessageID in the same session
// returns the first message with created == false. Failed and closed sessions take no
// new prompts (a conflict).
func (s *Store) AddUserMessage(ctx context.Context, sessionID, content, clientMessageID string) (shared.Message, bool, error) {
	var (
		row     messageRow
		created bool
	)
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		// Locked: a concurrent request with the same client id waits, then finds this one.
		sess, err := getSession(locked(tx), sessionID)
		if err != nil {
			return err
		}
		var clientID *string
		var md *shared.Metadata
		if clientMessageID != "" {
			if err := shared.CheckText("client_message_id", clientMessageID); err != nil {
				return err
			}
			err := tx.Take(&row, "session_id = ? AND client_message_id = ?", sessionID, clientMessageID).Error
			if err == nil {
				return nil
			}
			if !errors.Is(err, gorm.ErrRecordNotFound) {
				return err
			}
			clientID = &clientMessageID
			md = &shared.Metadata{ClientMessageID: clientMessageID}
		}
		if st := shared.SessionState(sess.State); st == shared.SessionFailed || st == shared.SessionClosed {
			return shared.Errorf(shared.CodeConflict, "session is %s", st)
		}
		row, err = s.insertMessage(tx, sess, shared.AuthorUser, shared.TypeMessage, content, md, clientID)
		if err != nil {
			return err
		}
		created = true
		// An agent another replica runs gets the prompt through the inbox (inbox.go).
		_, err = s.forward(tx, sess, Command{SessionID: sessionID, Kind: CommandPrompt, MessageID: row.ID, Body: content})
		return err
	})
	if err != nil {
		return shared.Message{}, false, fmt.Errorf("add user message: %w", err)
	}
	m, err := row.message()
	return m, created, err
}

// UpdateMessage changes a message. A message whose stored status is terminal never goes
// back to a non-terminal one: such a late update is ignored (changed == false), so an
// earlier final state is never lost. Only the columns that change are written; output
// bodies go to their own row.
func (s *Store) UpdateMessage(ctx context.Context, id string, u Update) (shared.Message, bool, error) {
	var (
		row     messageRow
		changed bool
	)
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := locked(tx).Take(&row, "id = ?", id).Error; err != nil {
			return notFound(err, "message")
		}
		cur, err := row.message()
		if err != nil {
			return err
		}
		md := u.Metadata
		if md == nil {
			md = cur.Metadata
		}
		var prev shared.ShellOutputSummary
		if se := shared.ShellOf(cur); se != nil {
			prev = se.Output
		}
		// Settled first: a status the exit code makes failed is terminal, so an update
		// that also carries more output is not taken for a late one.
		md, out := settle(md, u.Output, prev)
		content := settleContent(md, u.ToolContent, shared.ToolContentOf(cur))
		if shared.ToolStatus(row.Status).IsTerminal() && md != nil && !md.Status.IsTerminal() {
			return nil
		}
		// The row is changed in memory as in the database, so the message returned is
		// built without reading the row back.
		row.UpdatedAt = s.stamp()
		cols := map[string]any{"updated_at": row.UpdatedAt}
		if u.Content != nil {
			row.Content = storable(*u.Content)
			cols["content"] = row.Content
		}
		if md != nil {
			raw, err := encodeMetadata(md)
			if err != nil {
				return err
			}
			row.Metadata, row.Status = raw, string(md.Status)
			cols["metadata"], cols["status"] = row.Metadata, row.Status
		}
		if err := tx.Model(&messageRow{}).Where("id = ?", id).Updates(cols).Error; err != nil {
			return err
		}
		changed = true
		if err := putContent(tx, id, content); err != nil {
			return err
		}
		return putOutput(tx, id, out)
	})
	if err != nil {
		return shared.Message{}, false, fmt.Errorf("update message: %w", err)
	}
	m, err := row.message()
	return m, changed, err
}

// GetMessage returns one message, projected, whatever its session: scripts that hold
// only a message id (conch output) learn its session from it.
func (s *Store) GetMessage(ctx context.Context, id string) (shared.Message, error) {
	rows, err := scanMessages(s.db.WithContext(ctx).Model(&messageRow{}).Select(messageColumns).Where("id = ?", id).Limit(1), 1)
	if err != nil {
		return shared.Message{}, fmt.Errorf("get message: %w", err)
	}
	if len(rows) == 0 {
		return shared.Message{}, missing("message")
	}
	return rows[0].message()
}

// CancelActiveToolCalls marks the session's unfinished tool calls cancelled, keeping their
// output, and its pending permission requests cancelled (their status is pending too), and
// returns the changed messages.
func (s *Store) CancelActiveToolCalls(ctx context.Context, sessionID string) ([]shared.Message, error) {
	var rows []messageRow
	if err := s.db.WithContext(ctx).Where("session_id = ? AND "+unfinished, sessionID).
		Order("created_at, id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("cancel tool calls: %w", err)
	}
	var out []shared.Message
	for _, r := range rows {
		m, err := r.message()
		if err != nil {
			return nil, err
		}
		md := *m.Metadata
		md.Status = shared.StatusCancelled
		m, changed, err := s.UpdateMessage(ctx, r.ID, Update{Metadata: &md})
		if err != nil {
			return nil, err
		}
		if changed {
			out = append(out, m)
		}
	}
	return out, nil
}

// shellMessage scopes a query of "messages AS m" to one shell command of one session: an
// absent message, one of another session and one that is not a shell command all fall
// outside alike.
func shellMessage(sessionID, messageID string) func(*gorm.DB) *gorm.DB {
	return func(db *gorm.DB) *gorm.DB {
		return db.Where("m.id = ? AND m.session_id = ? AND m.type = ?", messageID, sessionID, string(shared.TypeToolExecute))
	}
}

// GetShellOutputStamp answers as GetShellOutput does, but with only the output's
// updated_at, without reading the body: enough to validate a cached snapshot.
func (s *Store) GetShellOutputStamp(ctx context.Context, sessionID, messageID string) (time.Time, error) {
	stamp, err := s.stampOf(ctx, shellMessage(sessionID, messageID))
	if err != nil {
		return time.Time{}, fmt.Errorf("get shell output stamp: %w", err)
	}
	return stamp, nil
}

// stampOf returns the updated_at of the message scope selects in "messages AS m", or
// "message not found".
func (s *Store) stampOf(ctx context.Context, scope func(*gorm.DB) *gorm.DB) (time.Time, error) {
	var stamps []int64
	if err := s.db.WithContext(ctx).Table("messages AS m").Scopes(scope).Limit(1).Pluck("m.updated_at", &stamps).Error; err != nil {
		return time.Time{}, err
	}
	if len(stamps) == 0 {
		return time.Time{}, missing("message")
	}
	return fromNanos(stamps[0]), nil
}

// GetShellOutput returns the full stored output of a shell command of the session. An
// absent message, one of another session and one that is not a shell command are all
// "message not found", so the answer tells nothing about other sessions.
func (s *Store) GetShellOutput(ctx context.Context, sessionID, messageID string) (shared.ShellOutputSnapshot, error) {
	// Columns of the outer join are NULL when no output is stored yet.
	var r struct {
		ID          string
		Status      string
		UpdatedAt   int64
		Stdout      *string
		Stderr      *string
		ExitCode    *int
		Signal      *string
		Truncated   *bool
		StdoutTotal *int64
		StderrTotal *int64
		StartedAt   *int64
		FinishedAt  *int64
	}
	res := s.db.WithContext(ctx).Table("messages AS m").
		Select("m.id, m.status, m.updated_at, o.stdout, o.stderr, o.exit_code, o.signal, o.truncated, " +
			"o.stdout_total, o.stderr_total, o.started_at, o.finished_at").
		Joins("LEFT JOIN shell_outputs AS o ON o.message_id = m.id").
		Scopes(shellMessage(sessionID, messageID)).
		Limit(1).Scan(&r)
	if res.Error != nil {
		return shared.ShellOutputSnapshot{}, fmt.Errorf("get shell output: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return shared.ShellOutputSnapshot{}, missing("message")
	}
	return shared.ShellOutputSnapshot{MessageID: r.ID, Status: shared.ToolStatus(r.Status),
		UpdatedAt: fromNanos(r.UpdatedAt), Output: shared.ShellOutput{Stdout: deref(r.Stdout), Stderr: deref(r.Stderr),
			ExitCode: r.ExitCode, Signal: deref(r.Signal), Truncated: deref(r.Truncated),
			StdoutTotalBytes: deref(r.StdoutTotal), StderrTotalBytes: deref(r.StderrTotal),
			StartedAt: fromNanosPtr(r.StartedAt), FinishedAt: fromNanosPtr(r.FinishedAt)}.Bounded()}, nil
}

func toNanos(t *time.Time) *int64 {
	if t == nil {
		return nil
	}
	n := t.UnixNano()
	return &n
}

func fromNanosPtr(n *int64) *time.Time {
	if n == nil {
		return nil
	}
	t := fromNanos(*n)
	return &t
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
