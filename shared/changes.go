package shared

// Repository is what a directory on the server is to git (GET /api/v1/repository), for the
// New task form's offer of a worktree: Top is the top of the git work tree it is in ("" for
// none), Branch that tree's current branch ("" on none), Branches its local branches.
type Repository struct {
	Path     string   `json:"path"`
	Top      string   `json:"top,omitempty"`
	Branch   string   `json:"branch,omitempty"`
	Branches []string `json:"branches"`
}

// Changes is what a task on a repository changed, against its base branch: the commits of
// its branch and the uncommitted work of its worktree, file by file, without any diff body
// (GET /api/v1/tasks/{id}/changes). Each file's diff is fetched on demand (FileDiff).
type Changes struct {
	Base   string `json:"base"`
	Branch string `json:"branch"`
	// Head is the branch's commit; MergeBase the commit of the base the change is measured from.
	Head      string `json:"head"`
	MergeBase string `json:"merge_base"`
	// Ahead and Behind count the commits the branch has that the base has not, and the
	// other way round.
	Ahead  int           `json:"ahead"`
	Behind int           `json:"behind"`
	Files  []ChangedFile `json:"files"`
}

// Change statuses of a file.
const (
	FileAdded    = "added"
	FileModified = "modified"
	FileDeleted  = "deleted"
	FileRenamed  = "renamed"
)

// ChangedFile is one file of a task's change. Paths are as git names them, relative to the
// worktree, made valid UTF-8; OldPath is set for a rename. A binary file has no line counts.
type ChangedFile struct {
	Path         string `json:"path"`
	OldPath      string `json:"old_path,omitempty"`
	Status       string `json:"status"`
	Binary       bool   `json:"binary,omitempty"`
	AddedLines   int    `json:"added_lines"`
	RemovedLines int    `json:"removed_lines"`
}

// FileDiff is one file's change with its two texts (GET .../changes/diff?path=P), bounded
// like tool content: each side whole, or both omitted when a side is over DiffSideLimit;
// none for a binary file. OldText is absent for an added file, NewText for a deleted one.
// Hunks is the change the page draws, worked out by the server (DiffHunk).
type FileDiff struct {
	File           ChangedFile `json:"file"`
	OldText        *string     `json:"old_text,omitempty"`
	NewText        *string     `json:"new_text,omitempty"`
	Omitted        bool        `json:"omitted,omitempty"`
	Hunks          []DiffHunk  `json:"hunks,omitempty"`
	HunksTruncated bool        `json:"hunks_truncated,omitempty"`
}

// MaxDiffLines bounds the lines of a diff's hunks (context included): past it, the hunks
// stop and say so (hunks_truncated), since no one reads such a change line by line in a
// browser, and the page would slow down drawing it.
const MaxDiffLines = 2000

// DiffHunk is one hunk of the unified diff (three lines of context) from a diff's old
// text to its new one: where it starts in each, and its lines. The server works hunks out
// so that the browser carries no diff algorithm; no hunks with two different texts means
// the server could not diff them.
type DiffHunk struct {
	OldLine int        `json:"old_line"` // the first line's number in the old text, from 1
	NewLine int        `json:"new_line"` // and in the new text
	Lines   []DiffLine `json:"lines"`
}

// DiffLine is a line of a hunk: removed ("-"), added ("+") or the same in both (" "),
// with its number in each text it is in, and its text without the newline.
type DiffLine struct {
	Kind string `json:"kind"`
	Old  int    `json:"old,omitempty"`
	New  int    `json:"new,omitempty"`
	Text string `json:"text"`
}

// The kinds of a DiffLine.
const (
	DiffRemoved = "-"
	DiffAdded   = "+"
	DiffSame    = " "
)

// MaxReviewComments bounds the comments of one Review.
const MaxReviewComments = 100

// Review is a person's comments on lines of a task's change, sent to the task's newest
// session as one prompt (POST /api/v1/tasks/{id}/review): text with file:line references,
// and an ACP resource_link to each file commented on.
type Review struct {
	Comments        []ReviewComment `json:"comments"`
	ClientMessageID string          `json:"client_message_id,omitempty"`
}

// ReviewComment is a comment on one line of a changed file: Path as the changes summary
// lists it, Line counted from 1 in the file's new text (the old one for a deleted file).
type ReviewComment struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Text string `json:"text"`
}
