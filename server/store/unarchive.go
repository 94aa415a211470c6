package store

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"conch/shared"

	"gorm.io/gorm"
)

// Importing an archive (archive.go). Everything in it is hostile: each entry's name, kind,
// size, order and text are checked, and any fault stores nothing (one transaction). The
// import makes new ids, gives the task and its prompts and answers to the importing
// account, drops what names places on the exporting machine (the repository, worktree and
// directories), and leaves every session closed with nothing running or waiting: nothing
// is executed.

// Bounds of an import, past which it is refused.
const (
	maxArchiveExpanded = 4 << 30  // bytes, all entries decompressed
	maxArchiveLines    = 64 << 20 // bytes of one JSON lines entry
	maxToolContentFile = 2*shared.ToolContentLimit + 1<<20
)

// archiveID is an id as an archive names it: anything else (a path, "..") is refused.
var archiveID = regexp.MustCompile(`^[A-Za-z0-9-]{1,64}$`)

// The stages of an archive, in the order its entries must come.
const (
	stageManifest = iota
	stageTask
	stageSessions
	stageMessages // messages and their files
	stageUsage
	stageAudit
)

// ImportOptions say who imports an archive.
type ImportOptions struct {
	// Owner is the importing account (task.Person): it owns the task, and is the author of
	// its prompts and answers; the zero account for the server's token.
	Owner shared.Account
	// SniffType is a file's type as its bytes show it: a prompt's file keeps its type only
	// when its bytes agree.
	SniffType func([]byte) string
}

// ImportTask stores the task an archive (ExportTask) holds, as a new task, and returns it.
func (s *Store) ImportTask(ctx context.Context, r io.Reader, o ImportOptions) (shared.Task, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return shared.Task{}, invalidArchive("not a gzip-compressed archive: %v", err)
	}
	im := &importer{s: s, o: o, use: s.usage(), sessions: map[string]*importedSession{},
		messages: map[string]*importedMessage{}, expect: map[string]bool{}, seen: map[string]bool{}}
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		im.tx = tx
		return im.read(tar.NewReader(&limitedReader{r: zr, left: maxArchiveExpanded}))
	})
	im.use.done(err)
	if err != nil {
		if shared.ErrorCode(err) != shared.CodeInternal {
			return shared.Task{}, err
		}
		return shared.Task{}, fmt.Errorf("import task: %w", err)
	}
	return im.task.task(), nil
}

func invalidArchive(format string, args ...any) error {
	return shared.Errorf(shared.CodeInvalid, "archive: "+format, args...)
}

// limitedReader fails once more than left bytes were read: a small archive that expands
// without end (a gzip bomb) is refused rather than cut.
type limitedReader struct {
	r    io.Reader
	left int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if l.left -= int64(n); l.left < 0 {
		return n, invalidArchive("it expands to more than %d GiB", maxArchiveExpanded>>30)
	}
	return n, err
}

type importer struct {
	s   *Store
	tx  *gorm.DB
	o   ImportOptions
	use *usage

	stage    int
	task     taskRow
	sessions map[string]*importedSession // by the archive's id
	messages map[string]*importedMessage // by the archive's id
	expect   map[string]bool             // the files the messages stored so far name, not yet read
	seen     map[string]bool             // the names read, each once
	usage    int
	page     []messageRow // the messages of the page being read, stored once it is read (storePage)
	texts    []string     // their search texts
}

type importedSession struct {
	row     sessionRow
	lastSeq int64
}

type importedMessage struct {
	id, sessionID string
	created       int64
	attachments   map[string]int // the position of each of its files, by the archive's id
}

// read stores each entry of the archive in turn.
func (im *importer) read(tr *tar.Reader) error {
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var invalid *shared.Error
			if errors.As(err, &invalid) {
				return err
			}
			return invalidArchive("unreadable tar: %v", err)
		}
		if hdr.Typeflag != tar.TypeReg {
			return invalidArchive("%q is not a regular file", hdr.Name)
		}
		if im.seen[hdr.Name] {
			return invalidArchive("%q is there twice", hdr.Name)
		}
		im.seen[hdr.Name] = true
		if err := im.entry(hdr, tr); err != nil {
			return err
		}
	}
	if !im.seen["usage.jsonl"] {
		return invalidArchive("it ends before usage.jsonl: it is incomplete")
	}
	for name := range im.expect {
		return invalidArchive("%s is missing", name)
	}
	for _, sess := range im.sessions {
		if err := im.tx.Model(&sessionRow{}).Where("id = ?", sess.row.ID).UpdateColumn("message_count", sess.lastSeq).Error; err != nil {
			return err
		}
	}
	return nil
}

// entry stores one entry, after checking that its name is one an archive has, at its
// stage, and its size within that kind's bound.
func (im *importer) entry(hdr *tar.Header, r io.Reader) error {
	name, parts := hdr.Name, strings.Split(hdr.Name, "/")
	for _, p := range parts[1:] {
		if !archiveID.MatchString(strings.TrimSuffix(strings.TrimSuffix(p, ".json"), ".jsonl")) {
			return invalidArchive("%q is no entry of an archive", name)
		}
	}
	var (
		stage int
		limit int64 = maxArchiveLines
		store func([]byte) error
	)
	switch {
	case name == "manifest.json":
		stage, store = stageManifest, im.manifest
	case name == "task.json":
		stage, store = stageTask, im.taskEntry
	case name == "sessions.jsonl":
		stage, store = stageSessions, im.sessionsEntry
	case len(parts) == 3 && parts[0] == "messages" && strings.HasSuffix(parts[2], ".jsonl"):
		stage, store = stageMessages, func(b []byte) error { return im.messagesEntry(parts[1], b) }
	case len(parts) == 3 && parts[0] == "outputs" && (parts[2] == "stdout" || parts[2] == "stderr"):
		stage, limit, store = stageMessages, shared.OutputLimit, func(b []byte) error { return im.output(name, parts[1], parts[2], b) }
	case len(parts) == 2 && parts[0] == "tool-contents" && strings.HasSuffix(parts[1], ".json"):
		stage, limit = stageMessages, maxToolContentFile
		store = func(b []byte) error { return im.toolContent(name, strings.TrimSuffix(parts[1], ".json"), b) }
	case len(parts) == 3 && parts[0] == "attachments":
		stage, limit, store = stageMessages, shared.MaxAttachmentBytes, func(b []byte) error { return im.attachment(name, parts[1], parts[2], b) }
	case name == "usage.jsonl":
		stage, store = stageUsage, im.usageEntry
	case len(parts) == 2 && parts[0] == "audit" && strings.HasSuffix(parts[1], ".jsonl"):
		stage, store = stageAudit, im.auditEntry
	default:
		return invalidArchive("%q is no entry of an archive", name)
	}
	if stage < im.stage {
		return invalidArchive("%q is out of order", name)
	}
	for _, before := range []struct {
		stage int
		name  string
	}{{stageTask, "manifest.json"}, {stageSessions, "task.json"}, {stageMessages, "sessions.jsonl"}, {stageAudit, "usage.jsonl"}} {
		if stage >= before.stage && !im.seen[before.name] {
			return invalidArchive("%q comes before %s", name, before.name)
		}
	}
	if hdr.Size > limit {
		return invalidArchive("%q is larger than %d bytes", name, limit)
	}
	im.stage = stage
	b, err := io.ReadAll(io.LimitReader(r, limit))
	if err != nil {
		return err
	}
	if err := store(b); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// decodeLines decodes JSON lines into values of T strictly (unknown fields refused).
func decodeLines[T any](b []byte, each func(T) error) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	for line := 1; ; line++ {
		var v T
		if err := dec.Decode(&v); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return invalidArchive("item %d: %v", line, err)
		}
		if err := each(v); err != nil {
			return fmt.Errorf("item %d: %w", line, err)
		}
	}
}

func (im *importer) manifest(b []byte) error {
	return decodeLines(b, func(m archiveManifest) error {
		if m.Format != ArchiveFormat || m.Version != ArchiveVersion {
			return invalidArchive("it is %q version %d; this server reads %q version %d", m.Format, m.Version, ArchiveFormat, ArchiveVersion)
		}
		return nil
	})
}

// taskEntry stores the task, the importer's, saying whose it was.
func (im *importer) taskEntry(b []byte) error {
	return decodeLines(b, func(t shared.Task) error {
		if strings.TrimSpace(t.Title) == "" {
			return invalidArchive("the task has no title")
		}
		if err := errors.Join(shared.CheckLength("title", t.Title, shared.MaxTitleBytes),
			shared.CheckLength("description", t.Description, shared.MaxDescriptionBytes),
			shared.CheckLength("owner", t.Owner, 64)); err != nil {
			return err
		}
		desc := t.Description
		if t.Owner != "" && t.Owner != im.o.Owner.Login {
			note := "Imported; first written by " + t.Owner + "."
			if desc != "" {
				desc = CutText(desc, shared.MaxDescriptionBytes-len(note)-2) + "\n\n"
			}
			desc += note
		}
		now := im.s.stamp()
		im.task = taskRow{ID: newID(), Title: t.Title, Description: desc, OwnerID: im.o.Owner.ID, OwnerLogin: im.o.Owner.Login,
			CreatedAt: now, UpdatedAt: now}
		return im.tx.Create(&im.task).Error
	})
}

// sessionsEntry stores the sessions, closed: no agent runs or resumes them.
func (im *importer) sessionsEntry(b []byte) error {
	return decodeLines(b, func(s shared.Session) error {
		if !archiveID.MatchString(s.ID) || im.sessions[s.ID] != nil {
			return invalidArchive("session id %q is not an id, or not unique", s.ID)
		}
		if err := errors.Join(shared.CheckLength("agent", s.Agent, 256), shared.CheckLength("cwd", s.Cwd, shared.MaxPathBytes),
			shared.CheckLength("error", s.Error, MaxTextBytes), shared.CheckLength("last_stop_reason", string(s.LastStopReason), 64)); err != nil {
			return err
		}
		if s.Usage != nil {
			if err := checkUsage(*s.Usage); err != nil {
				return err
			}
		}
		created, updated, err := nanos(s.CreatedAt, s.UpdatedAt)
		if err != nil {
			return err
		}
		row := sessionRow{ID: newID(), TaskID: im.task.ID, Agent: s.Agent, Cwd: s.Cwd, State: string(shared.SessionClosed),
			Error: s.Error, LastStopReason: string(s.LastStopReason), CreatedAt: created, UpdatedAt: updated}
		for _, col := range []struct {
			to *string
			v  any
			ok bool
		}{{&row.Modes, s.Modes, s.Modes != nil}, {&row.Commands, s.Commands, s.Commands != nil},
			{&row.Config, s.ConfigOptions, s.ConfigOptions != nil}, {&row.Usage, s.Usage, s.Usage != nil},
			{&row.PromptCaps, s.PromptCapabilities, s.PromptCapabilities != nil}, {&row.Sandbox, s.Sandbox, s.Sandbox != nil}} {
			if col.ok {
				raw, err := json.Marshal(col.v)
				if err != nil {
					return err
				}
				if err := shared.CheckText("session", string(raw)); err != nil {
					return err
				}
				*col.to = string(raw)
			}
		}
		im.sessions[s.ID] = &importedSession{row: row}
		return im.tx.Create(&row).Error
	})
}

// messagesEntry stores a page of a session's messages, in its order, each with nothing left
// waiting (a command running, a question pending is cancelled: nothing will answer it).
func (im *importer) messagesEntry(sessionID string, b []byte) error {
	sess := im.sessions[sessionID]
	if sess == nil {
		return invalidArchive("no session %q", sessionID)
	}
	err := decodeLines(b, func(m archivedMessage) error {
		switch {
		case m.SessionID != sessionID:
			return invalidArchive("message %q is of another session", m.ID)
		case !archiveID.MatchString(m.ID) || im.messages[m.ID] != nil:
			return invalidArchive("message id %q is not an id, or not unique", m.ID)
		case m.Seq <= sess.lastSeq || m.Seq > 1<<40:
			return invalidArchive("message %q is out of order", m.ID)
		case !slices.Contains([]shared.AuthorType{shared.AuthorUser, shared.AuthorAgent, shared.AuthorSystem}, shared.AuthorType(m.AuthorType)):
			return invalidArchive("message %q has author_type %q", m.ID, m.AuthorType)
		case !slices.Contains(messageTypes, shared.MessageType(m.Type)):
			return invalidArchive("message %q has type %q", m.ID, m.Type)
		}
		if err := shared.CheckText("content", m.Content); err != nil {
			return err
		}
		created, updated, err := nanos(m.CreatedAt, m.UpdatedAt)
		if err != nil {
			return err
		}
		sess.lastSeq = m.Seq
		im.messages[m.ID] = &importedMessage{id: newID(), sessionID: sess.row.ID, created: created}
		return im.message(m, updated)
	})
	if err != nil {
		return err
	}
	return im.storePage()
}

var messageTypes = []shared.MessageType{shared.TypeMessage, shared.TypeThinking, shared.TypeToolExecute, shared.TypeToolCall,
	shared.TypeError, shared.TypeStatus, shared.TypePermissionRequest, shared.TypePlan, shared.TypeElicitation, shared.TypeSignIn}

func (im *importer) message(m archivedMessage, updated int64) error {
	im2 := im.messages[m.ID]
	md := m.Metadata
	if md != nil {
		if md.Status != "" && !md.Status.IsTerminal() {
			md.Status = shared.StatusCancelled
		}
		if md.Author != "" {
			md.Author = im.o.Owner.Login
		}
		if md.AnsweredBy != "" {
			md.AnsweredBy = im.o.Owner.Login
		}
		md.DetailBytes = 0
		if n := md.Normalized; n != nil && n.ShellExec != nil {
			// The sizes come from the files (output); until then there is no output.
			o := &n.ShellExec.Output
			if o.StdoutBytes > 0 {
				im.expect["outputs/"+m.ID+"/stdout"] = true
			}
			if o.StderrBytes > 0 {
				im.expect["outputs/"+m.ID+"/stderr"] = true
			}
			if o.StdoutTotalBytes < 0 || o.StderrTotalBytes < 0 {
				return invalidArchive("message %q has a negative size", m.ID)
			}
			o.HasOutput, o.StdoutBytes, o.StderrBytes = false, 0, 0
		}
		if n := md.Normalized; n != nil && n.ToolContent != nil {
			if n.Kind != shared.NormalizedToolContent || m.Type != string(shared.TypeToolCall) {
				return invalidArchive("message %q has tool content but is no tool call", m.ID)
			}
			im.expect["tool-contents/"+m.ID+".json"] = true
		}
		if len(md.Attachments) > shared.MaxAttachments {
			return invalidArchive("message %q carries more than %d files", m.ID, shared.MaxAttachments)
		}
		im2.attachments = map[string]int{}
		for i, a := range md.Attachments {
			if !archiveID.MatchString(a.ID) || im2.attachments[a.ID] != 0 {
				return invalidArchive("message %q names a file %q that is not an id, or twice", m.ID, a.ID)
			}
			if err := shared.CheckLength("name", a.Name, shared.MaxAttachmentName); err != nil {
				return err
			}
			im2.attachments[a.ID] = i + 1
			im.expect["attachments/"+m.ID+"/"+a.ID] = true
			md.Attachments[i].ID = newID()
		}
	}
	author, typ := shared.AuthorType(m.AuthorType), shared.MessageType(m.Type)
	md = withMarkdown(author, typ, m.Content, md)
	content, md := bounded(m.Content, md)
	raw, err := encodeMetadata(md)
	if err != nil {
		return err
	}
	if err := shared.CheckText("metadata", string(raw)); err != nil {
		return err
	}
	row := messageRow{ID: im2.id, SessionID: im2.sessionID, TaskID: im.task.ID, AuthorType: m.AuthorType, Type: m.Type,
		Content: content, Metadata: raw, CreatedAt: im2.created, UpdatedAt: updated, Seq: m.Seq}
	if md != nil {
		row.Status = string(md.Status)
	}
	im.page = append(im.page, row)
	im.texts = append(im.texts, searchText(typ, content, md))
	return nil
}

// storePage stores the messages of a page in one statement (or a few), and their search
// text: a statement a message would cost most of an import's time.
func (im *importer) storePage() error {
	defer func() { im.page, im.texts = im.page[:0], im.texts[:0] }()
	if len(im.page) == 0 {
		return nil
	}
	if err := im.tx.CreateInBatches(&im.page, 100).Error; err != nil {
		return err
	}
	for i, row := range im.page {
		if im.texts[i] != "" {
			if err := index(im.tx, row.ID, row.TaskID, im.texts[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// nanos are the times as stored, each of a year a time is stored in (1970 to 2261).
func nanos(created, updated time.Time) (int64, int64, error) {
	for _, t := range []time.Time{created, updated} {
		if t.Year() < 1970 || t.Year() > 2261 {
			return 0, 0, invalidArchive("a time of the year %d", t.Year())
		}
	}
	return created.UnixNano(), updated.UnixNano(), nil
}

// file is the message a file of the archive belongs to, when it names one the archive
// listed and it was not read yet.
func (im *importer) file(name, messageID string) (*importedMessage, error) {
	m := im.messages[messageID]
	if m == nil || !im.expect[name] {
		return nil, invalidArchive("%q belongs to no message before it", name)
	}
	delete(im.expect, name)
	return m, nil
}

// output stores one stream of a command's output, where it stood in the stream.
func (im *importer) output(name, messageID, stream string, b []byte) error {
	m, err := im.file(name, messageID)
	if err != nil {
		return err
	}
	if !utf8.Valid(b) {
		return invalidArchive("output is not valid UTF-8")
	}
	return im.rewrite(m.id, func(md *shared.Metadata) error {
		o := &md.Normalized.ShellExec.Output
		o.HasOutput = true
		n, total, code := &o.StdoutBytes, &o.StdoutTotalBytes, streamStdout
		if stream == "stderr" {
			n, total, code = &o.StderrBytes, &o.StderrTotalBytes, streamStderr
		}
		*n, *total = len(b), max(*total, int64(len(b)))
		stored, err := putStream(im.tx, im.use, m.id, code, string(b), new(*total-int64(len(b))))
		if err == nil && !stored {
			err = im.use.q.full
		}
		if err == nil {
			err = finishStream(im.tx, m.id, code) // an imported command has ended: its whole output is searchable
		}
		return err
	})
}

// toolContent stores a tool call's diffs and texts, under the same bounds as an agent's,
// and their summary.
func (im *importer) toolContent(name, messageID string, b []byte) error {
	m, err := im.file(name, messageID)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var items []shared.ToolContentItem
	if err := dec.Decode(&items); err != nil {
		return invalidArchive("%v", err)
	}
	for _, it := range items {
		if it.Type != shared.ContentDiff && it.Type != shared.ContentText || it.Hunks != nil || it.HunksTruncated {
			return invalidArchive("an item of type %q, or with hunks", it.Type)
		}
		if err := errors.Join(shared.CheckLength("path", it.Path, shared.MaxPathBytes), shared.CheckText("old_text", deref(it.OldText)),
			shared.CheckText("new_text", deref(it.NewText)), shared.CheckText("text", deref(it.Text))); err != nil {
			return err
		}
	}
	return im.rewrite(m.id, func(md *shared.Metadata) error {
		archived := md.Normalized.ToolContent
		kept, sum := boundContent(items)
		// An omitted diff has no texts to count: its sizes are the archive's.
		for i, it := range items {
			if !it.Omitted {
				continue
			}
			if i >= len(archived.Items) || !archived.Items[i].Omitted || archived.Items[i].Path != it.Path {
				return invalidArchive("an omitted diff that its message does not list")
			}
			kept.items[i], sum.Items[i], kept.truncated = it, archived.Items[i], true
		}
		sum.Truncated = kept.truncated
		md.Normalized.ToolContent = &sum
		return putContent(im.tx, m.id, &kept)
	})
}

// attachment stores a file a prompt carried, of the type its bytes show.
func (im *importer) attachment(name, messageID, id string, b []byte) error {
	m, err := im.file(name, messageID)
	if err != nil {
		return err
	}
	if len(b) == 0 {
		return invalidArchive("the file is empty")
	}
	if !im.use.take(im.tx, int64(len(b))) {
		return im.use.q.full
	}
	pos := m.attachments[id] - 1
	return im.rewrite(m.id, func(md *shared.Metadata) error {
		a := &md.Attachments[pos]
		a.MimeType, a.Size = im.o.SniffType(b), len(b)
		mid := m.id
		return im.tx.Create(&attachmentRow{ID: a.ID, SessionID: m.sessionID, MessageID: &mid, Name: a.Name, MimeType: a.MimeType,
			Size: a.Size, Data: b, Position: pos, CreatedAt: m.created}).Error
	})
}

// rewrite changes a stored message's metadata with change.
func (im *importer) rewrite(id string, change func(*shared.Metadata) error) error {
	var row messageRow
	if err := im.tx.Select("metadata").Take(&row, "id = ?", id).Error; err != nil {
		return err
	}
	var md shared.Metadata
	if err := json.Unmarshal(row.Metadata, &md); err != nil {
		return err
	}
	if err := change(&md); err != nil {
		return err
	}
	raw, err := encodeMetadata(&md)
	if err != nil {
		return err
	}
	return im.tx.Model(&messageRow{}).Where("id = ?", id).UpdateColumn("metadata", raw).Error
}

// usageEntry stores what the agents reported they cost.
func (im *importer) usageEntry(b []byte) error {
	return decodeLines(b, func(u archivedUsage) error {
		sess := im.sessions[u.SessionID]
		if sess == nil {
			return invalidArchive("no session %q", u.SessionID)
		}
		if _, err := time.Parse(time.DateOnly, u.Day); err != nil || u.Micros < 0 || !currency.MatchString(u.Currency) {
			return invalidArchive("a day %q, cost %d or currency %q that is none", u.Day, u.Micros, u.Currency)
		}
		if im.usage++; im.usage > maxUsageRows {
			return invalidArchive("more than %d days of costs", maxUsageRows)
		}
		return im.tx.Create(&usageDayRow{SessionID: sess.row.ID, Day: u.Day, Currency: u.Currency, TaskID: im.task.ID, Micros: u.Micros}).Error
	})
}

var currency = regexp.MustCompile(`^[A-Za-z]{1,16}$`)

const maxUsageRows = 1 << 20

// auditEntry checks the exporting server's audit entries, and keeps none: this server's
// audit says what was done here (the import itself).
func (im *importer) auditEntry(b []byte) error {
	return decodeLines(b, func(e shared.AuditEvent) error {
		return errors.Join(shared.CheckText("login", e.Login), shared.CheckText("action", e.Action), shared.CheckText("detail", e.Detail))
	})
}
