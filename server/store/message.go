package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	jsonv1 "github.com/go-json-experiment/json/v1"
	"golang.org/x/net/idna"

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
	UpdatedAt       int64 `gorm:"autoUpdateTime:false"` // nanoseconds, written by each update itself
	Seq             int64 // its place in its session's commit order, from 1 (insertMessage)
}

func (messageRow) TableName() string { return "messages" }

// message is the projection: every message leaving the store is built here, from the row
// alone, so a message published live and the same message listed later are identical.
func (r messageRow) message() (shared.Message, error) {
	m := shared.Message{ID: r.ID, SessionID: r.SessionID, TaskID: r.TaskID,
		AuthorType: shared.AuthorType(r.AuthorType), Type: shared.MessageType(r.Type), Content: r.Content,
		CreatedAt: fromNanos(r.CreatedAt), UpdatedAt: fromNanos(r.UpdatedAt)}
	if len(r.Metadata) > 0 {
		var err error
		if m.Metadata, err = decodeMetadata(r.Metadata); err != nil {
			return shared.Message{}, fmt.Errorf("decode metadata of message %s: %w", r.ID, err)
		}
	}
	if m.Type == shared.TypeError {
		// An error's whole text can fill screens: messages carry its headline (GetErrorDetail).
		if line, more := shared.Headline(r.Content); more {
			if m.Metadata == nil {
				m.Metadata = new(shared.Metadata)
			}
			m.Content, m.Metadata.DetailBytes = line, len(r.Content)
		}
	}
	if md := m.Metadata; md != nil && md.Elicitation != nil && md.Elicitation.Mode == shared.ElicitURL {
		e := *md.Elicitation
		e.Host = urlHost(e.URL)
		md.Elicitation = &e
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
// here, so the rules run once and no writer can store other results: the summary comes
// from the output as bounded (or stays prev when there is no new output), and a
// known non-zero exit code makes the status failed whatever the agent said. It returns the
// output to store (putOutput), nil for a message that is not a shell command or whose
// output the storage limit stopped (prev.StorageFull): that output stays as it was stored.
// It works on a copy; the caller's values are never changed.
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
		se.Output = out.Bounded().Summarize()
	}
	if prev.StorageFull {
		se.Output, out = stopped(prev, se.Output), nil
	}
	if code := se.Output.ExitCode; code != nil && *code != 0 {
		c.Status = shared.StatusFailed
	}
	n.ShellExec = &se
	c.Normalized = &n
	return &c, out
}

// stopped is the summary of an output the storage limit stopped: the bytes as stored
// (prev), how the command ended as now says.
func stopped(prev, now shared.ShellOutputSummary) shared.ShellOutputSummary {
	prev.ExitCode, prev.Signal, prev.StartedAt, prev.FinishedAt = now.ExitCode, now.Signal, now.StartedAt, now.FinishedAt
	prev.Truncated, prev.StorageFull = true, true
	return prev
}

// putSettled stores out for the message id, whose metadata md (settled) is about to be or
// has been stored. When the storage limit has no room for out, md is returned with the
// output stopped where it was stored (prev), and changed reports it.
func putSettled(tx *gorm.DB, use *usage, id string, md *shared.Metadata, out *shared.ShellOutput,
	prev shared.ShellOutputSummary) (_ *shared.Metadata, changed bool, _ error) {
	stored, err := putOutput(tx, use, id, out)
	if err == nil && stored && out != nil && md.Status.IsTerminal() {
		err = finishIndex(tx, id) // the output of a finished command: its last chunk too
	}
	if err != nil || stored {
		return md, false, err
	}
	c, n := *md, *md.Normalized
	se := *n.ShellExec
	se.Output = stopped(prev, se.Output)
	n.ShellExec, c.Normalized = &se, &n
	return &c, true, nil
}

// decodeMetadata decodes stored metadata, as every list does for each row: with
// encoding/json's semantics, by go-json-experiment's implementation of them, which takes
// less than half the time and allocations on a reply's markdown tree (docs/PERFORMANCE.md,
// "A list page of replies").
func decodeMetadata(raw []byte) (*shared.Metadata, error) {
	md := new(shared.Metadata)
	if err := jsonv1.Unmarshal(raw, md); err != nil {
		return nil, err
	}
	return md, nil
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
	parsed := make([]*shared.Metadata, len(nms))
	for i, nm := range nms { // outside the transaction (markdown.go)
		parsed[i] = withMarkdown(nm.AuthorType, nm.Type, nm.Content, nm.Metadata)
	}
	use := s.usage()
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
			md, out := settle(parsed[i], nm.Output, shared.ShellOutputSummary{})
			content := settleContent(md, nm.ToolContent, nil)
			row, err := s.insertMessage(tx, sess, nm.AuthorType, nm.Type, nm.Content, md, nil)
			if err != nil {
				return err
			}
			if err := putContent(tx, row.ID, content); err != nil {
				return err
			}
			md, changed, err := putSettled(tx, use, row.ID, md, out, shared.ShellOutputSummary{})
			if err != nil {
				return err
			}
			if changed {
				if row.Metadata, err = encodeMetadata(md); err != nil {
					return err
				}
				if err := tx.Model(&messageRow{}).Where("id = ?", row.ID).Update("metadata", row.Metadata).Error; err != nil {
					return err
				}
			}
			rows[i] = row
		}
		return nil
	})
	use.done(err)
	if err != nil {
		return nil, fmt.Errorf("create message: %w", err)
	}
	return messagesOf(rows)
}

func (s *Store) insertMessage(tx *gorm.DB, sess sessionRow, author shared.AuthorType, typ shared.MessageType,
	content string, md *shared.Metadata, clientID *string) (messageRow, error) {
	content, md = bounded(content, md)
	raw, err := encodeMetadata(md)
	if err != nil {
		return messageRow{}, err
	}
	now := s.stamp()
	row := messageRow{ID: newID(), SessionID: sess.ID, TaskID: sess.TaskID, AuthorType: string(author),
		Type: string(typ), Content: content, Metadata: raw, ClientMessageID: clientID, CreatedAt: now, UpdatedAt: now}
	if md != nil {
		row.Status = string(md.Status)
	}
	// Lists page on seq, so seqs follow commit order: a seq that committed after a larger
	// one would be behind the cursor of a reader that already listed the larger. The
	// session's count is the seq: its row stays locked until the commit, so the writers of
	// a session count in turn, and PostgreSQL returns the count from the row as the writer
	// before left it. (SQLite's writers take turns anyway.)
	counted := sessionRow{ID: sess.ID}
	if err := tx.Model(&counted).Clauses(clause.Returning{Columns: []clause.Column{{Name: "message_count"}}}).
		UpdateColumn("message_count", gorm.Expr("message_count + 1")).Error; err != nil {
		return messageRow{}, err
	}
	row.Seq = counted.MessageCount
	if err := tx.Create(&row).Error; err != nil {
		return messageRow{}, err
	}
	if text := searchText(typ, content, md); text != "" {
		return row, index(tx, row.ID, row.TaskID, text)
	}
	return row, nil
}

// AddUserMessage stores a user prompt. A repeated clientMessageID in the same session
// returns the first message with created == false; author is the login of the account
// that sent it ("" for none). Failed and closed sessions take no
// new prompts (a conflict). When another replica runs the session's agent, the prompt is
// addressed to it in the same transaction (inbox.go), and owner is that replica; "" when
// this process runs the turn. attachments are ids of files pending in the session, which
// the prompt carries (listed in its metadata) and the agent must take (pendingAttachments).
func (s *Store) AddUserMessage(ctx context.Context, sessionID, content, clientMessageID, author string, attachments ...string) (m shared.Message, created bool, owner string, err error) {
	var row messageRow
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
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
		}
		if st := shared.SessionState(sess.State); st.Ended() {
			return shared.Errorf(shared.CodeConflict, "session is %s", st)
		}
		var files []attachmentRow
		if len(attachments) > 0 {
			if files, err = pendingAttachments(tx, sess, sess.session().PromptCapabilities, attachments); err != nil {
				return err
			}
		}
		if clientMessageID != "" || author != "" || len(files) > 0 {
			md = &shared.Metadata{ClientMessageID: clientMessageID, Author: author}
			for _, f := range files {
				md.Attachments = append(md.Attachments, f.summary())
			}
		}
		row, err = s.insertMessage(tx, sess, shared.AuthorUser, shared.TypeMessage, content, md, clientID)
		if err != nil {
			return err
		}
		if err := bindAttachments(tx, row.ID, files); err != nil {
			return err
		}
		created = true
		owner, err = s.forward(tx, sess, Command{SessionID: sessionID, Kind: CommandPrompt, MessageID: row.ID, Body: content})
		return err
	})
	if err != nil {
		return shared.Message{}, false, "", fmt.Errorf("add user message: %w", err)
	}
	m, err = row.message()
	return m, created, owner, err
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
	// The markdown of a reply's new text or of a plan's entries, parsed outside the
	// transaction (markdown.go): a text's update carries no metadata, a plan's its entries.
	var (
		tree  []shared.MarkdownNode
		reply bool
	)
	if u.Content != nil && u.Metadata == nil || u.Metadata != nil && len(u.Metadata.Entries) > 0 {
		var kind messageRow
		if err := s.db.WithContext(ctx).Select("author_type, type").Take(&kind, "id = ?", id).Error; err != nil {
			return shared.Message{}, false, fmt.Errorf("update message: %w", notFound(err, "message"))
		}
		switch author, typ := shared.AuthorType(kind.AuthorType), shared.MessageType(kind.Type); {
		case typ == shared.TypePlan:
			u.Metadata = withPlan(u.Metadata)
		case parsesMarkdown(author, typ) && u.Content != nil:
			tree, reply = parseReply(*u.Content), true
		}
	}
	use := s.usage()
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
		if reply {
			md = withTree(md, tree)
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
		// The output first: past the storage limit it stops, and the metadata says so.
		if md, _, err = putSettled(tx, use, id, md, out, prev); err != nil {
			return err
		}
		// The row is changed in memory as in the database, so the message returned is
		// built without reading the row back. Only the columns whose values change are
		// set: SQLite rewrites an index whose column is set, even to the same value (a
		// status unchanged would cost a page of the unfinished index on every flush).
		row.UpdatedAt = s.stamp()
		cols := map[string]any{"updated_at": row.UpdatedAt}
		text := row.Content
		if u.Content != nil {
			text = *u.Content
		}
		text, md = bounded(text, md)
		if text != row.Content {
			row.Content = text
			cols["content"] = row.Content
		}
		if md != nil {
			raw, err := encodeMetadata(md)
			if err != nil {
				return err
			}
			row.Metadata = raw
			cols["metadata"] = row.Metadata
			if string(md.Status) != row.Status {
				row.Status = string(md.Status)
				cols["status"] = row.Status
			}
		}
		if err := tx.Model(&messageRow{}).Where("id = ?", id).Updates(cols).Error; err != nil {
			return err
		}
		changed = true
		if text := searchText(cur.Type, row.Content, md); text != searchText(cur.Type, cur.Content, cur.Metadata) {
			if err := index(tx, id, row.TaskID, text); err != nil {
				return err
			}
		}
		if err := putContent(tx, id, content); err != nil {
			return err
		}
		if _, ended := cols["status"]; ended && md.Status.IsTerminal() {
			return finishOutput(tx, use, id)
		}
		return nil
	})
	use.done(err)
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
		Order("seq").Find(&rows).Error; err != nil {
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

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// urlHost is the host a link to raw opens, with its port when raw names one, or "" when raw
// is no http(s) address. An international name is given in its ASCII (xn--) form, and
// left in it when it comes so: a lookalike of a known name in other scripts cannot pass
// for it in the page. (idna.ToASCII, not the browser's full mapping, idna.Lookup: a name
// the mapping would change, like a full-width one, shows as xn-- too.) The server works it
// out so that app.wasm carries no IDNA tables (21 KB of app.wasm.br).
func urlHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	h := u.Hostname()
	if strings.HasPrefix(u.Host, "[") { // an IPv6 address
		h = "[" + h + "]"
	} else if a, err := idna.ToASCII(strings.ToLower(h)); err == nil {
		h = a
	} else { // a bad xn-- label, which no browser opens: escaped, never shown as Unicode
		h = strconv.QuoteToASCII(h)
	}
	if p := u.Port(); p != "" {
		h += ":" + p
	}
	return h
}
