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
type FileDiff struct {
	File    ChangedFile `json:"file"`
	OldText *string     `json:"old_text,omitempty"`
	NewText *string     `json:"new_text,omitempty"`
	Omitted bool        `json:"omitted,omitempty"`
}

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
