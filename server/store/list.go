package store

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"conch/shared"

	"gorm.io/gorm"
)

// ListMessages returns one page of a session's messages in q.Sort order, projected (no
// output bodies are read). A page ends at q.Limit messages or MaxPageBytes, whichever
// comes first, and says has_more when it stopped short. A cursor that is not a message of this session is invalid; an
// unknown session is not found.
func (s *Store) ListMessages(ctx context.Context, q shared.ListRequest) (shared.MessagePage, error) {
	q, err := q.Normalize()
	if err != nil {
		return shared.MessagePage{}, err
	}
	limit, sessionID := *q.Limit, q.SessionID
	db := s.db.WithContext(ctx)
	sess, err := getSession(db, sessionID)
	if err != nil {
		return shared.MessagePage{}, err
	}
	// Walk the index away from the cursor; reverse afterwards if Sort says so.
	newerFirst := q.Before != "" || (q.After == "" && q.Sort == shared.SortDesc)
	tx := db.Model(&messageRow{}).Where("session_id = ?", sessionID)
	if cursor := q.Before + q.After; cursor != "" {
		var c messageRow
		err := db.Select("seq").Take(&c, "id = ? AND session_id = ?", cursor, sessionID).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return shared.MessagePage{}, shared.Errorf(shared.CodeInvalid, "cursor is not a message of this session")
		} else if err != nil {
			return shared.MessagePage{}, fmt.Errorf("list messages: %w", err)
		}
		op := ">"
		if q.Before != "" {
			op = "<"
		}
		tx = tx.Where("seq "+op+" ?", c.Seq)
	}
	// Commit order (insertMessage): a reader paging after its cursor while others write
	// never passes a message that commits later.
	if newerFirst {
		tx = tx.Order("seq DESC")
	} else {
		tx = tx.Order("seq ASC")
	}
	// No more rows than the session holds: a small session's page allocates little.
	rows, err := scanMessages(tx.Select(messageColumns).Limit(limit+1), int(min(int64(limit+1), sess.MessageCount)))
	if err != nil {
		return shared.MessagePage{}, fmt.Errorf("list messages: %w", err)
	}
	page := shared.MessagePage{Total: sess.MessageCount, HasMore: len(rows) > limit}
	rows = rows[:min(len(rows), limit)]
	if n := withinBudget(rows); n < len(rows) {
		rows, page.HasMore = rows[:n], true
	}
	if newerFirst != (q.Sort == shared.SortDesc) {
		slices.Reverse(rows)
	}
	if page.Messages, err = messagesOf(rows); err != nil {
		return shared.MessagePage{}, err
	}
	if n := len(page.Messages); n > 0 {
		page.Cursor = page.Messages[n-1].ID
	}
	return page, nil
}

// messagesOf projects rows (message) in their order; [] rather than null when empty.
func messagesOf(rows []messageRow) ([]shared.Message, error) {
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

// rowOverhead is what a message's JSON adds to its content and metadata (ids, times,
// field names), counted so that a page's JSON, not only its texts, fits the budget.
const rowOverhead = 512

// withinBudget is how many of rows, in the order they were read (away from the cursor),
// fit in shared.MaxPageBytes; at least one, so a page always moves.
func withinBudget(rows []messageRow) int {
	used := 0
	for i, r := range rows {
		used += len(r.Content) + len(r.Metadata) + rowOverhead
		if used > shared.MaxPageBytes && i > 0 {
			return i
		}
	}
	return len(rows)
}

// messageColumns are the columns scanMessages reads, in its order.
const messageColumns = "id, session_id, task_id, author_type, type, content, metadata, status, client_message_id, created_at, updated_at"

// scanMessages runs a query selecting messageColumns, which returns about n rows (room
// for n is allocated at once rather than regrown). It scans by hand: GORM's reflective
// scan took about three times as long on a page of 100 (docs/BENCHMARKS.md).
func scanMessages(q *gorm.DB, n int) ([]messageRow, error) {
	rs, err := q.Rows()
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	rows := make([]messageRow, 0, n)
	for rs.Next() {
		var r messageRow
		if err := rs.Scan(&r.ID, &r.SessionID, &r.TaskID, &r.AuthorType, &r.Type, &r.Content, &r.Metadata,
			&r.Status, &r.ClientMessageID, &r.CreatedAt, &r.UpdatedAt); err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	return rows, rs.Err()
}
