package shared

import (
	"net/url"
	"strings"
)

// An agent's reply and its plan entries are markdown (CommonMark with GitHub's tables,
// strikethrough and task lists). The server parses each once, when it is stored
// (server/markdown), into a tree of MarkdownNode: a reply's in metadata.markdown, a plan
// entry's in its markdown. The page draws the tree without a parser; without one (a
// server from before, or a tree past MaxMarkdownBytes) it shows the text as written.

// MaxMarkdownBytes bounds the JSON of the trees of one message: past it, the text has none.
const MaxMarkdownBytes = 1 << 20

// MarkdownDepth bounds how deeply a tree nests: past it a node is its text, flat. An
// agent may nest emphasis or quotes thousands deep; the page stays shallow.
const MarkdownDepth = 16

// MarkdownKind is what a node of a markdown tree is, and so how the page draws it.
type MarkdownKind string

const (
	MarkdownText      MarkdownKind = "text"      // Text, as it is (HTML in it too)
	MarkdownBreak     MarkdownKind = "break"     // a hard line break
	MarkdownParagraph MarkdownKind = "paragraph" //
	MarkdownSpan      MarkdownKind = "span"      // inline children alone: a tight list item's text, a link not to open
	MarkdownHeading   MarkdownKind = "heading"   // Level 1 to 6
	MarkdownRule      MarkdownKind = "rule"      // a thematic break
	MarkdownQuote     MarkdownKind = "quote"     //
	MarkdownList      MarkdownKind = "list"      // Ordered from Start, or bullets; its children are items
	MarkdownItem      MarkdownKind = "item"      //
	MarkdownCodeBlock MarkdownKind = "code_block"
	MarkdownHTML      MarkdownKind = "html" // an HTML block: Text, shown as the text it is
	MarkdownEmphasis  MarkdownKind = "emphasis"
	MarkdownStrong    MarkdownKind = "strong"
	MarkdownStrike    MarkdownKind = "strikethrough"
	MarkdownCode      MarkdownKind = "code"  // a code span: Text
	MarkdownLink      MarkdownKind = "link"  // to Href, which Linkable accepts
	MarkdownImage     MarkdownKind = "image" // never loaded: its alt text (Text) and address (Href)
	MarkdownTask      MarkdownKind = "task"  // a task list's box, Checked or not
	MarkdownTable     MarkdownKind = "table" // rows, the header first; Align per column
	MarkdownRow       MarkdownKind = "row"
	MarkdownCell      MarkdownKind = "cell"
)

// MarkdownNode is one node of a parsed markdown text. Text is what the agent wrote, its
// escapes and character references resolved (code keeps them as written).
type MarkdownNode struct {
	Kind     MarkdownKind   `json:"kind"`
	Text     string         `json:"text,omitempty"`
	Children []MarkdownNode `json:"children,omitempty"`
	Href     string         `json:"href,omitempty"`
	Lang     string         `json:"lang,omitempty"`  // a fenced code block's language
	Level    int            `json:"level,omitempty"` // a heading's
	Ordered  bool           `json:"ordered,omitempty"`
	Start    int            `json:"start,omitempty"` // an ordered list's first number
	Checked  bool           `json:"checked,omitempty"`
	Align    []string       `json:"align,omitempty"` // a table's columns: left, center, right or ""
}

// Linkable reports whether a reply may link to dest: an absolute http, https or mailto
// address. A relative address would resolve against Conch itself and any other scheme
// (javascript:, data:, file:) has no business in a reply.
func Linkable(dest string) bool {
	u, err := url.Parse(dest)
	if err != nil {
		return false
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		return u.Host != ""
	case "mailto":
		return u.Opaque != ""
	}
	return false
}
