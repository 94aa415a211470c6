package store

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"conch/shared"
)

// A task's archive (GET /api/v1/tasks/{id}/export, docs/API.md "Export and import"): a
// gzip-compressed tar of JSON lines and files, written as it is read, a page of messages at a
// time, so that a task of any size is exported with bounded memory. Its entries, in this
// order (ImportTask checks each against archiveNames and the order):
//
//	manifest.json                 archiveManifest: the format, its version, what is in it
//	task.json                     the task (shared.Task)
//	sessions.jsonl                its sessions (shared.Session), oldest first
//	messages/SESSION/FIRST.jsonl  a page of a session's messages (archivedMessage) by seq
//	outputs/MESSAGE/stdout|stderr a shell command's kept output, as text
//	tool-contents/MESSAGE.json    a tool call's diffs and texts ([]shared.ToolContentItem)
//	attachments/MESSAGE/ID        a file a prompt carried, as its bytes
//	usage.jsonl                   what the agents reported they cost (archivedUsage)
//	audit/N.jsonl                 the audit entries that name the task (shared.AuditEvent)
//
// The files of a page's messages follow that page. The files are what was stored; the
// sizes the messages' summaries give are made again from them when imported.

// Archive formats: ArchiveVersion grows when an entry changes its shape.
const (
	ArchiveFormat  = "conch-task-archive"
	ArchiveVersion = 1
)

// archivePage is how many messages a messages entry holds at most.
const archivePage = 200

type archiveManifest struct {
	Format     string    `json:"format"`
	Version    int       `json:"version"`
	ExportedAt time.Time `json:"exported_at"`
	TaskID     string    `json:"task_id"`
	Redacted   bool      `json:"redacted"` // secret-like strings were replaced (ExportOptions.Redact)
	Audit      bool      `json:"audit"`    // the audit entries are in it
}

// archivedMessage is a message as stored: its whole content (an error's too), its place in
// its session, and its metadata without what the store derives (the markdown trees).
type archivedMessage struct {
	ID         string           `json:"id"`
	SessionID  string           `json:"session_id"`
	Seq        int64            `json:"seq"`
	AuthorType string           `json:"author_type"`
	Type       string           `json:"type"`
	Content    string           `json:"content"`
	Metadata   *shared.Metadata `json:"metadata,omitempty"`
	CreatedAt  time.Time        `json:"created_at"`
	UpdatedAt  time.Time        `json:"updated_at"`
}

// archivedUsage is one row of what a session's agent reported it cost on a day.
type archivedUsage struct {
	SessionID string `json:"session_id"`
	Day       string `json:"day"`
	Currency  string `json:"currency"`
	Micros    int64  `json:"micros"`
}

// ExportOptions say what an export holds.
type ExportOptions struct {
	// Redact, when set, is applied to every text the archive holds (JSON lines, outputs,
	// diffs, text files); it must keep JSON text valid (it replaces no quote or backslash).
	Redact func(string) string
	// Audit puts the audit entries that name the task in the archive.
	Audit bool
}

// ExportTask writes the task's archive to w. It reads a page at a time, outside a
// transaction: a task being written meanwhile is exported as each page found it.
func (s *Store) ExportTask(ctx context.Context, taskID string, w io.Writer, o ExportOptions) error {
	task, err := s.GetTask(ctx, taskID)
	if err != nil {
		return err
	}
	redact := o.Redact
	if redact == nil {
		redact = func(s string) string { return s }
	}
	zw := gzip.NewWriter(w)
	a := &archiveWriter{tw: tar.NewWriter(zw), redact: redact, now: s.now()}
	if err := s.exportTask(ctx, a, task, o); err != nil {
		return fmt.Errorf("export task: %w", err)
	}
	if err := a.tw.Close(); err != nil {
		return fmt.Errorf("export task: %w", err)
	}
	return zw.Close()
}

func (s *Store) exportTask(ctx context.Context, a *archiveWriter, task shared.Task, o ExportOptions) error {
	db := s.db.WithContext(ctx)
	if err := a.json("manifest.json", archiveManifest{Format: ArchiveFormat, Version: ArchiveVersion, ExportedAt: a.now.UTC(),
		TaskID: task.ID, Redacted: o.Redact != nil, Audit: o.Audit}); err != nil {
		return err
	}
	if err := a.json("task.json", task); err != nil {
		return err
	}
	var sessions []sessionRow
	if err := db.Where("task_id = ?", task.ID).Order("created_at, id").Find(&sessions).Error; err != nil {
		return err
	}
	var lines jsonLines
	for _, r := range sessions {
		if err := lines.add(r.session()); err != nil {
			return err
		}
	}
	if err := a.file("sessions.jsonl", lines.String()); err != nil {
		return err
	}
	for _, sess := range sessions {
		if err := s.exportMessages(ctx, a, sess.ID); err != nil {
			return err
		}
	}
	var usage []usageDayRow
	if err := db.Where("task_id = ?", task.ID).Order("session_id, day, currency").Find(&usage).Error; err != nil {
		return err
	}
	lines.Reset()
	for _, u := range usage {
		if err := lines.add(archivedUsage{SessionID: u.SessionID, Day: u.Day, Currency: u.Currency, Micros: u.Micros}); err != nil {
			return err
		}
	}
	if err := a.file("usage.jsonl", lines.String()); err != nil {
		return err
	}
	if o.Audit {
		return s.exportAudit(ctx, a, task.ID)
	}
	return nil
}

// exportMessages writes a session's messages a page at a time, each page followed by the
// files of its messages.
func (s *Store) exportMessages(ctx context.Context, a *archiveWriter, sessionID string) error {
	db := s.db.WithContext(ctx)
	for after := int64(0); ; {
		var rows []messageRow
		if err := db.Where("session_id = ? AND seq > ?", sessionID, after).Order("seq").Limit(archivePage).Find(&rows).Error; err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		var lines jsonLines
		msgs := make([]archivedMessage, len(rows))
		for i, r := range rows {
			m, err := r.archived()
			if err != nil {
				return err
			}
			msgs[i] = m
			if err := lines.add(m); err != nil {
				return err
			}
		}
		if err := a.file(fmt.Sprintf("messages/%s/%d.jsonl", sessionID, rows[0].Seq), lines.String()); err != nil {
			return err
		}
		for _, m := range msgs {
			if err := s.exportFiles(ctx, a, m); err != nil {
				return err
			}
		}
		after = rows[len(rows)-1].Seq
	}
}

// archived is the row as an archive holds it.
func (r messageRow) archived() (archivedMessage, error) {
	m := archivedMessage{ID: r.ID, SessionID: r.SessionID, Seq: r.Seq, AuthorType: r.AuthorType, Type: r.Type,
		Content: r.Content, CreatedAt: fromNanos(r.CreatedAt), UpdatedAt: fromNanos(r.UpdatedAt)}
	if len(r.Metadata) > 0 {
		m.Metadata = new(shared.Metadata)
		if err := json.Unmarshal(r.Metadata, m.Metadata); err != nil {
			return m, fmt.Errorf("decode metadata of message %s: %w", r.ID, err)
		}
		m.Metadata.Markdown = nil // parsed again from the content when imported
		for i := range m.Metadata.Entries {
			m.Metadata.Entries[i].Markdown = nil
		}
	}
	return m, nil
}

// exportFiles writes the bodies a message has: a command's output, a tool call's content,
// a prompt's files.
func (s *Store) exportFiles(ctx context.Context, a *archiveWriter, m archivedMessage) error {
	db := s.db.WithContext(ctx)
	md := m.Metadata
	if md == nil {
		return nil
	}
	if n := md.Normalized; n != nil && n.ShellExec != nil && n.ShellExec.Output.HasOutput {
		var rows []chunkRow
		if err := db.Select(chunkColumns).Where("message_id = ?", m.ID).Order("stream, start").Find(&rows).Error; err != nil {
			return err
		}
		stdout, stderr := keptOf(rows)
		for _, st := range []struct {
			name string
			k    kept
		}{{"stdout", stdout}, {"stderr", stderr}} {
			if len(st.k) == 0 {
				continue
			}
			body, _ := shared.Bound(string(st.k.text(st.k.from())), shared.OutputLimit)
			if err := a.file("outputs/"+m.ID+"/"+st.name, body); err != nil {
				return err
			}
		}
	}
	if n := md.Normalized; n != nil && n.Kind == shared.NormalizedToolContent && n.ToolContent != nil {
		var rows []toolContentRow
		if err := db.Where("message_id = ?", m.ID).Limit(1).Find(&rows).Error; err != nil {
			return err
		}
		for _, r := range rows {
			if err := a.file("tool-contents/"+m.ID+".json", string(r.Items)); err != nil {
				return err
			}
		}
	}
	for _, att := range md.Attachments {
		var rows []attachmentRow
		if err := db.Where("id = ? AND message_id = ?", att.ID, m.ID).Limit(1).Find(&rows).Error; err != nil {
			return err
		}
		for _, r := range rows {
			data := string(r.Data)
			if shared.IsText(r.MimeType) {
				data = a.redact(data)
			}
			if err := a.raw("attachments/"+m.ID+"/"+r.ID, data); err != nil {
				return err
			}
		}
	}
	return nil
}

// exportAudit writes the audit entries that name the task, oldest first, a page an entry.
func (s *Store) exportAudit(ctx context.Context, a *archiveWriter, taskID string) error {
	const page = 500
	at, id := int64(-1<<63), ""
	for n := 1; ; n++ {
		var rows []auditRow
		err := s.db.WithContext(ctx).Where("task_id = ? AND (at > ? OR at = ? AND id > ?)", taskID, at, at, id).
			Order("at, id").Limit(page).Find(&rows).Error
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		var lines jsonLines
		for _, r := range rows {
			if err := lines.add(shared.AuditEvent{At: fromNanos(r.At), Login: r.Login, Action: r.Action,
				TaskID: r.TaskID, SessionID: r.SessionID, MessageID: r.MessageID, Detail: r.Detail}); err != nil {
				return err
			}
		}
		if err := a.file("audit/"+strconv.Itoa(n)+".jsonl", lines.String()); err != nil {
			return err
		}
		at, id = rows[len(rows)-1].At, rows[len(rows)-1].ID
	}
}

// archiveWriter writes an archive's entries, each text through redact.
type archiveWriter struct {
	tw     *tar.Writer
	redact func(string) string
	now    time.Time
}

func (a *archiveWriter) json(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return a.file(name, string(b))
}

// file writes a text entry, redacted.
func (a *archiveWriter) file(name, text string) error { return a.raw(name, a.redact(text)) }

// raw writes an entry as it is.
func (a *archiveWriter) raw(name, data string) error {
	hdr := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: a.now.Truncate(time.Second), Typeflag: tar.TypeReg}
	if err := a.tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err := io.WriteString(a.tw, data)
	return err
}

// jsonLines is JSON values, one a line.
type jsonLines struct{ bytes.Buffer }

func (l *jsonLines) add(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	l.Write(b)
	return l.WriteByte('\n')
}
