package shared

import "time"

// The content of a tool call that is not a shell command (ACP's diff and text content),
// kept like shell output: the bodies are stored apart from the message and fetched on
// demand (GET .../tool-content); the message carries a summary.

// NormalizedToolContent is the normalized kind of a tool call with content.
const NormalizedToolContent = "tool_content"

// Tool content item types.
const (
	ContentDiff = "diff"
	ContentText = "text"
)

// Bounds of the kept tool content. A diff is kept whole or not at all: a cut diff would
// read as a smaller change than the agent made. DiffSideLimit covers nearly every file a
// person reviews while one write and one fetch of it stay quick; a diff with a side over
// it, or past ToolContentLimit in all, is summarized (sizes, no line counts) and its texts
// are not kept (omitted). A text item keeps its tail, like a command's output (OutputLimit).
const (
	DiffSideLimit    = 4 << 20
	ToolContentLimit = 16 << 20
)

// ToolContentItem is one item of a tool call's content with its bodies: a diff (path,
// old_text, new_text; old_text "" for a new file) or a text. Omitted says the bodies
// were over the bound and not kept.
type ToolContentItem struct {
	Type    string  `json:"type"`
	Path    string  `json:"path,omitempty"`
	OldText *string `json:"old_text,omitempty"`
	NewText *string `json:"new_text,omitempty"`
	Text    *string `json:"text,omitempty"`
	Omitted bool    `json:"omitted,omitempty"`
	// A diff's change as the page draws it (FileDiff has the same two fields).
	Hunks          []DiffHunk `json:"hunks,omitempty"`
	HunksTruncated bool       `json:"hunks_truncated,omitempty"`
}

// ToolContentItemSummary is an item as messages carry it: sizes and line counts, no text.
// AddedLines and RemovedLines are absent for an omitted diff.
type ToolContentItemSummary struct {
	Type         string `json:"type"`
	Path         string `json:"path,omitempty"`
	OldBytes     *int   `json:"old_bytes,omitempty"`
	NewBytes     *int   `json:"new_bytes,omitempty"`
	AddedLines   *int   `json:"added_lines,omitempty"`
	RemovedLines *int   `json:"removed_lines,omitempty"`
	Bytes        *int   `json:"bytes,omitempty"`
	Omitted      bool   `json:"omitted,omitempty"`
}

// ToolContentSummary is metadata.normalized.tool_content. Truncated says an item was
// omitted or a text cut.
type ToolContentSummary struct {
	Items     []ToolContentItemSummary `json:"items"`
	Truncated bool                     `json:"truncated,omitempty"`
}

// ToolContentSnapshot is the answer of GET .../tool-content: the whole kept content.
type ToolContentSnapshot struct {
	MessageID string            `json:"message_id"`
	Status    ToolStatus        `json:"status"`
	UpdatedAt time.Time         `json:"updated_at"`
	Items     []ToolContentItem `json:"items"`
	Truncated bool              `json:"truncated,omitempty"`
	// Offline is not on the wire: the service worker's kept copy, as in ShellOutputSnapshot.
	Offline bool `json:"-"`
}

// ToolContentOf returns the content summary of a message, or nil when it has none.
func ToolContentOf(m Message) *ToolContentSummary {
	if m.Type != TypeToolCall || m.Metadata == nil || m.Metadata.Normalized == nil {
		return nil
	}
	return m.Metadata.Normalized.ToolContent
}
