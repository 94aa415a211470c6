package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	udiff "github.com/aymanbagabas/go-udiff"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"conch/server/diff"

	"conch/shared"
)

// toolContentRow holds the bodies of a tool call's content (diffs, texts), apart from the
// message row like shell output: lists never read them.
type toolContentRow struct {
	MessageID string `gorm:"primaryKey"`
	Items     []byte // JSON of []shared.ToolContentItem, bounded
	Truncated bool
}

func (toolContentRow) TableName() string { return "tool_contents" }

// keptContent is a tool call's content after the bound, ready to store.
type keptContent struct {
	items     []shared.ToolContentItem
	truncated bool
}

// boundContent applies the tool content rules (shared.DiffSideLimit and friends) and
// summarizes what is kept. A diff is kept whole or omitted, never cut; its line counts
// come from a line diff of the kept texts.
func boundContent(items []shared.ToolContentItem) (keptContent, shared.ToolContentSummary) {
	kept := keptContent{items: make([]shared.ToolContentItem, 0, len(items))}
	sum := shared.ToolContentSummary{Items: make([]shared.ToolContentItemSummary, 0, len(items))}
	total := 0
	for _, it := range items {
		switch it.Type {
		case shared.ContentDiff:
			oldText, newText := deref(it.OldText), deref(it.NewText)
			s := shared.ToolContentItemSummary{Type: it.Type, Path: it.Path, OldBytes: new(len(oldText)), NewBytes: new(len(newText))}
			size := len(oldText) + len(newText)
			if len(oldText) > shared.DiffSideLimit || len(newText) > shared.DiffSideLimit || total+size > shared.ToolContentLimit {
				s.Omitted, kept.truncated = true, true
				kept.items = append(kept.items, shared.ToolContentItem{Type: it.Type, Path: it.Path, Omitted: true})
			} else {
				total += size
				added, removed := lineCounts(oldText, newText)
				s.AddedLines, s.RemovedLines = &added, &removed
				kept.items = append(kept.items, shared.ToolContentItem{Type: it.Type, Path: it.Path, OldText: &oldText, NewText: &newText})
			}
			sum.Items = append(sum.Items, s)
		case shared.ContentText:
			text, cut := shared.Bound(deref(it.Text), shared.OutputLimit)
			kept.truncated = kept.truncated || cut
			total += len(text)
			kept.items = append(kept.items, shared.ToolContentItem{Type: it.Type, Text: &text})
			sum.Items = append(sum.Items, shared.ToolContentItemSummary{Type: it.Type, Bytes: new(len(text))})
		}
	}
	sum.Truncated = kept.truncated
	return kept, sum
}

// lineCounts returns how many lines a change from oldText to newText adds and removes.
func lineCounts(oldText, newText string) (added, removed int) {
	for _, e := range udiff.Lines(oldText, newText) {
		removed += lines(oldText[e.Start:e.End])
		added += lines(e.New)
	}
	return added, removed
}

// lines counts the lines of s, a last one without a newline included.
func lines(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// settleContent is settle's part for the content of a tool call that is not a shell
// command: the bound, and the summary from it (or prev when no new content comes). It
// works on md as settle returned it, a copy.
func settleContent(md *shared.Metadata, items []shared.ToolContentItem, prev *shared.ToolContentSummary) *keptContent {
	if md == nil || md.Normalized == nil || md.Normalized.Kind != shared.NormalizedToolContent {
		return nil
	}
	n := *md.Normalized
	n.ShellExec, n.ToolContent = nil, prev
	md.Normalized = &n
	if items == nil {
		return nil
	}
	kept, sum := boundContent(items)
	n.ToolContent = &sum
	return &kept
}

func putContent(tx *gorm.DB, messageID string, kept *keptContent) error {
	if kept == nil {
		return nil
	}
	raw, err := json.Marshal(kept.items)
	if err != nil {
		return err
	}
	return tx.Clauses(clause.OnConflict{UpdateAll: true}).
		Create(&toolContentRow{MessageID: messageID, Items: raw, Truncated: kept.truncated}).Error
}

// GetToolContentStamp answers as GetToolContent does, but with only the content's
// updated_at, without reading a body.
func (s *Store) GetToolContentStamp(ctx context.Context, sessionID, messageID string) (time.Time, error) {
	stamp, err := s.stampOf(ctx, shared.TypeToolCall, sessionID, messageID)
	if err != nil {
		return time.Time{}, fmt.Errorf("get tool content stamp: %w", err)
	}
	return stamp, nil
}

// GetToolContent returns the whole kept content of a tool call of the session (no items
// when none is stored yet). An absent message, one of another session and one that is not
// a tool call are all "message not found".
func (s *Store) GetToolContent(ctx context.Context, sessionID, messageID string) (shared.ToolContentSnapshot, error) {
	var r struct {
		ID        string
		Status    string
		UpdatedAt int64
		Items     []byte
		Truncated *bool
	}
	res := s.db.WithContext(ctx).Table("messages AS m").
		Select("m.id, m.status, m.updated_at, c.items, c.truncated").
		Joins("LEFT JOIN tool_contents AS c ON c.message_id = m.id").
		Scopes(messageOf(shared.TypeToolCall, sessionID, messageID)).
		Limit(1).Scan(&r)
	if res.Error != nil {
		return shared.ToolContentSnapshot{}, fmt.Errorf("get tool content: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return shared.ToolContentSnapshot{}, missing("message")
	}
	snap := shared.ToolContentSnapshot{MessageID: r.ID, Status: shared.ToolStatus(r.Status), UpdatedAt: fromNanos(r.UpdatedAt),
		Items: []shared.ToolContentItem{}, Truncated: deref(r.Truncated)}
	if len(r.Items) > 0 {
		if err := json.Unmarshal(r.Items, &snap.Items); err != nil {
			return shared.ToolContentSnapshot{}, fmt.Errorf("decode tool content of %s: %w", r.ID, err)
		}
	}
	for i, it := range snap.Items {
		if it.Type == shared.ContentDiff && !it.Omitted {
			snap.Items[i].Hunks, snap.Items[i].HunksTruncated = diff.Hunks(it.OldText, it.NewText)
		}
	}
	return snap, nil
}
