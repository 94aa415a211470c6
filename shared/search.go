package shared

import (
	"strings"
	"time"
	"unicode"
)

// Search across sessions: what is searched is the text of prompts, agent messages and
// shell commands, and the kept output of commands (docs/API.md, "Search").
const (
	MaxSearchBytes    = 256 // a query
	MaxSearchTerms    = 16  // words and quoted phrases in a query
	DefaultSearchHits = 20  // results on a page when limit is not given
	MaxSearchHits     = 50  // results on a page at most
)

// SearchRequest is GET /api/v1/search's query: the text, the page size and where the
// page starts (the cursor of the page before).
type SearchRequest struct {
	Query  string
	Limit  int
	Cursor string
}

// SearchPage is one page of results, the newest message first; Cursor is given to the next
// request when HasMore.
type SearchPage struct {
	Results []SearchResult `json:"results"`
	HasMore bool           `json:"has_more"`
	Cursor  string         `json:"cursor"`
}

// SearchResult is one message that matched, with a snippet of its text around the words
// found.
type SearchResult struct {
	MessageID  string        `json:"message_id"`
	SessionID  string        `json:"session_id"`
	TaskID     string        `json:"task_id"`
	TaskTitle  string        `json:"task_title"`
	Type       MessageType   `json:"type"`
	AuthorType AuthorType    `json:"author_type"`
	CreatedAt  time.Time     `json:"created_at"`
	Snippet    []SnippetPart `json:"snippet"`
	// Output is set for a result found in a command's output: Snippet is then the line
	// the words are on.
	Output *OutputHit `json:"output,omitempty"`
}

// OutputHit is where a result found in a command's output is: the stream, and the
// position of its line's first byte in the bytes the command wrote to it.
type OutputHit struct {
	Stream string `json:"stream"` // "stdout" or "stderr"
	Offset int64  `json:"offset"`
}

// SnippetPart is a run of a snippet's text; Hit marks the words the query found. The text
// is plain: a page shows it as text, never as markup.
type SnippetPart struct {
	Text string `json:"text"`
	Hit  bool   `json:"hit,omitempty"`
}

// Visible returns r as a page shows it: its task's title and snippet marked (Visible).
func (r SearchResult) Visible() SearchResult {
	r.TaskTitle = Visible(r.TaskTitle)
	parts := make([]SnippetPart, len(r.Snippet))
	for i, p := range r.Snippet {
		parts[i] = SnippetPart{Text: Visible(p.Text), Hit: p.Hit}
	}
	r.Snippet = parts
	return r
}

// SearchTerms splits a query into what it searches for, each to be found in a message: its
// words, and the phrases it quotes ("go test"). A term is kept without its quotes, and only
// when it has a letter or digit (punctuation alone finds nothing). A query too long, with
// too many terms or none at all is invalid.
func SearchTerms(query string) ([]string, error) {
	if len(query) > MaxSearchBytes {
		return nil, Errorf(CodeInvalid, "q is longer than %d bytes", MaxSearchBytes)
	}
	if err := CheckText("q", query); err != nil {
		return nil, err
	}
	var terms []string
	for i, part := range strings.Split(query, `"`) {
		words := []string{part} // inside quotes (odd parts): one phrase
		if i%2 == 0 {
			words = strings.Fields(part)
		}
		for _, w := range words {
			if w = strings.Join(strings.Fields(w), " "); strings.IndexFunc(w, IsWordRune) >= 0 {
				terms = append(terms, w)
			}
		}
	}
	switch {
	case len(terms) == 0:
		return nil, Errorf(CodeInvalid, "q has no words to search for")
	case len(terms) > MaxSearchTerms:
		return nil, Errorf(CodeInvalid, "q has more than %d words and phrases", MaxSearchTerms)
	}
	return terms, nil
}

// IsWordRune reports whether r is part of a word a search finds: a letter or a digit.
func IsWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
