package store

import (
	"context"
	"fmt"
	"slices"

	"gorm.io/gorm"

	"conch/shared"
)

// attachmentRow is a file uploaded to a session: pending (no message) until a prompt
// carries it, then bound to that prompt at its position. It goes with its session.
type attachmentRow struct {
	ID        string
	SessionID string
	MessageID *string
	Name      string
	MimeType  string
	Size      int
	Data      []byte
	Position  int
	CreatedAt int64
}

func (attachmentRow) TableName() string { return "attachments" }

func (r attachmentRow) summary() shared.Attachment {
	return shared.Attachment{ID: r.ID, Name: r.Name, MimeType: r.MimeType, Size: r.Size}
}

// AttachmentBody is an attachment with its bytes, as the agent is sent it.
type AttachmentBody struct {
	shared.Attachment
	Data []byte
}

// CreateAttachment stores a file for a prompt of the session to carry. name and
// mimeType are the caller's to check (the API sniffs the type); the store bounds the
// size and the files a session holds pending. A session that ended is a conflict; a file
// past the storage limit is insufficient_storage.
func (s *Store) CreateAttachment(ctx context.Context, sessionID, name, mimeType string, data []byte) (shared.Attachment, error) {
	if len(data) > shared.MaxAttachmentBytes {
		return shared.Attachment{}, shared.Errorf(shared.CodeTooLarge, "a file is at most %d MiB", shared.MaxAttachmentBytes>>20)
	}
	row := attachmentRow{ID: newID(), SessionID: sessionID, Name: name, MimeType: mimeType, Size: len(data), Data: data, CreatedAt: s.stamp()}
	use := s.usage()
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		sess, err := getSession(locked(tx), sessionID) // locked: concurrent uploads count in turn
		if err != nil {
			return err
		}
		if st := shared.SessionState(sess.State); st.Ended() {
			return shared.Errorf(shared.CodeConflict, "session is %s", st)
		}
		var pending int64
		if err := tx.Model(&attachmentRow{}).Where("session_id = ? AND message_id IS NULL", sessionID).Count(&pending).Error; err != nil {
			return err
		}
		if pending >= shared.MaxPendingAttachments {
			return shared.Errorf(shared.CodeInvalid, "this session holds %d files not sent yet: send or drop them first", pending)
		}
		if !use.take(tx, int64(len(data))) {
			return use.q.full
		}
		return tx.Create(&row).Error
	})
	use.done(err)
	if err != nil {
		return shared.Attachment{}, fmt.Errorf("create attachment: %w", err)
	}
	return row.summary(), nil
}

// GetAttachment returns an attachment of the session with its bytes; one of another
// session is not found.
func (s *Store) GetAttachment(ctx context.Context, sessionID, id string) (AttachmentBody, error) {
	var row attachmentRow
	if err := s.db.WithContext(ctx).Take(&row, "id = ? AND session_id = ?", id, sessionID).Error; err != nil {
		return AttachmentBody{}, fmt.Errorf("get attachment: %w", notFound(err, "attachment"))
	}
	return AttachmentBody{row.summary(), row.Data}, nil
}

// PromptAttachments returns the files a prompt carried, with their bytes, in its order.
func (s *Store) PromptAttachments(ctx context.Context, messageID string) ([]AttachmentBody, error) {
	var rows []attachmentRow
	if err := s.db.WithContext(ctx).Where("message_id = ?", messageID).Order("position").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("prompt attachments: %w", err)
	}
	out := make([]AttachmentBody, len(rows))
	for i, r := range rows {
		out[i] = AttachmentBody{r.summary(), r.Data}
	}
	return out, nil
}

// pendingAttachments reads the files ids names, pending in the session, for a prompt:
// each once, all found (else not found: another session's is not found either), and
// each one the session's agent takes (caps, else invalid, saying which).
func pendingAttachments(tx *gorm.DB, sess sessionRow, caps *shared.PromptCapabilities, ids []string) ([]attachmentRow, error) {
	if len(ids) > shared.MaxAttachments {
		return nil, shared.Errorf(shared.CodeInvalid, "a prompt carries at most %d files", shared.MaxAttachments)
	}
	var rows []attachmentRow
	err := tx.Select("id", "name", "mime_type", "size").
		Where("id IN ? AND session_id = ? AND message_id IS NULL", ids, sess.ID).Find(&rows).Error
	if err != nil {
		return nil, err
	}
	if len(rows) != len(ids) || len(slices.Compact(slices.Sorted(slices.Values(ids)))) != len(ids) {
		return nil, missing("attachment")
	}
	slices.SortFunc(rows, func(a, b attachmentRow) int { return slices.Index(ids, a.ID) - slices.Index(ids, b.ID) })
	for _, r := range rows {
		if why := caps.Refusal(r.MimeType); why != "" {
			return nil, shared.Errorf(shared.CodeInvalid, "%s: %s", r.Name, why)
		}
	}
	return rows, nil
}

// bindAttachments makes rows the files of the prompt messageID, in their order.
func bindAttachments(tx *gorm.DB, messageID string, rows []attachmentRow) error {
	for i, r := range rows {
		if err := tx.Model(&attachmentRow{}).Where("id = ?", r.ID).
			Updates(map[string]any{"message_id": messageID, "position": i}).Error; err != nil {
			return err
		}
	}
	return nil
}
