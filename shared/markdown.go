package shared

import (
	"net/url"
	"strings"
	"unicode/utf8"
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

// The kinds' names are short, after the HTML elements they most resemble: a reply's
// tree is mostly kinds, and goes out with every list of its messages.
const (
	MarkdownText      MarkdownKind = "t"      // Text, as it is (HTML in it too)
	MarkdownBreak     MarkdownKind = "br"     // a hard line break
	MarkdownParagraph MarkdownKind = "p"      //
	MarkdownSpan      MarkdownKind = "span"   // inline children alone: a tight list item's text, a link not to open
	MarkdownHeading   MarkdownKind = "h"      // Level 1 to 6
	MarkdownRule      MarkdownKind = "hr"     // a thematic break
	MarkdownQuote     MarkdownKind = "quote"  //
	MarkdownList      MarkdownKind = "list"   // Ordered from Start, or bullets; its children are items
	MarkdownItem      MarkdownKind = "li"     //
	MarkdownCodeBlock MarkdownKind = "pre"    // Lang
	MarkdownHTML      MarkdownKind = "html"   // an HTML block: its text, shown as the text it is
	MarkdownEmphasis  MarkdownKind = "em"     //
	MarkdownStrong    MarkdownKind = "strong" //
	MarkdownStrike    MarkdownKind = "del"    // strikethrough
	MarkdownCode      MarkdownKind = "code"   // a code span
	MarkdownLink      MarkdownKind = "a"      // to Href, which Linkable accepts
	MarkdownImage     MarkdownKind = "img"    // never loaded: its alt text and address (Href)
	MarkdownTask      MarkdownKind = "task"   // a task list's box, Checked or not
	MarkdownTable     MarkdownKind = "table"  // rows, the header first; Align per column
	MarkdownRow       MarkdownKind = "tr"     //
	MarkdownCell      MarkdownKind = "td"     //
)

// MarkdownNode is one node of a parsed markdown text. Its text is what the agent wrote, its
// escapes and character references resolved (code keeps them as written): Text, or a
// range of the markdown where the text is its bytes as written (Len > 0). A range keeps
// the tree small: it repeats none of the text. It is relative, which compresses better
// than an offset: the ranges of a tree follow each other in document order (a node's
// before its children's), and each starts Skip bytes after the end of the one before (the
// first, after the start of the text). In inline text a range may hold a soft line break
// as written (a line break and spaces), which a page shows as the space it reads as.
type MarkdownNode struct {
	Kind     MarkdownKind   `json:"k"`
	Text     string         `json:"t,omitempty"`
	Skip     int            `json:"s,omitempty"`
	Len      int            `json:"n,omitempty"`
	Children []MarkdownNode `json:"c,omitempty"`
	Href     string         `json:"href,omitempty"`
	Lang     string         `json:"lang,omitempty"`  // a fenced code block's language
	Level    int            `json:"level,omitempty"` // a heading's
	Ordered  bool           `json:"ordered,omitempty"`
	Start    int            `json:"start,omitempty"` // an ordered list's first number
	Checked  bool           `json:"checked,omitempty"`
	Align    []string       `json:"align,omitempty"` // a table's columns: left, center, right or ""
}

// MarkdownRanges reads the texts of a tree from its markdown, node after node in document
// order (a node before its children), for a tree that MarkdownFits the markdown.
type MarkdownRanges struct {
	src string
	end int // of the range before
}

func NewMarkdownRanges(src string) *MarkdownRanges { return &MarkdownRanges{src: src} }

// Text is the text of n, the node of the tree after the one read before.
func (r *MarkdownRanges) Text(n MarkdownNode) string {
	if n.Len <= 0 {
		return n.Text
	}
	from := r.end + n.Skip
	r.end = from + n.Len
	return r.src[from:r.end]
}

// MarkdownFits reports whether every range of tree is one of src: inside it, and starting
// and ending on a character's first byte. A page draws no tree that does not fit its text.
func MarkdownFits(src string, tree []MarkdownNode) bool {
	end := 0
	return fits(src, tree, &end)
}

func fits(src string, tree []MarkdownNode, end *int) bool {
	for _, n := range tree {
		if n.Len > 0 {
			if n.Skip < 0 || n.Skip > len(src)-*end || n.Len > len(src)-*end-n.Skip {
				return false
			}
			from := *end + n.Skip
			*end = from + n.Len
			if !runeStart(src, from) || !runeStart(src, *end) {
				return false
			}
		}
		if !fits(src, n.Children, end) {
			return false
		}
	}
	return true
}

func runeStart(s string, i int) bool { return i == len(s) || utf8.RuneStart(s[i]) }

// ResolvedMarkdown is tree with the text of each of its ranges in src as its Text, no range
// left; tree itself when it does not fit src (MarkdownFits).
func ResolvedMarkdown(src string, tree []MarkdownNode) []MarkdownNode {
	if tree == nil || !MarkdownFits(src, tree) {
		return tree
	}
	return resolved(NewMarkdownRanges(src), tree)
}

func resolved(r *MarkdownRanges, tree []MarkdownNode) []MarkdownNode {
	if tree == nil {
		return nil
	}
	out := make([]MarkdownNode, len(tree))
	for i, n := range tree {
		n.Text, n.Skip, n.Len = r.Text(n), 0, 0
		n.Children = resolved(r, n.Children)
		out[i] = n
	}
	return out
}

// visibleMarkdown is the tree of the markdown src as a page shows it, whose text is
// visible (Visible(src)): its texts marked. When marking changed the text, the ranges of
// src hold no more in it; each becomes its text, marked.
func visibleMarkdown(src, visible string, tree []MarkdownNode) []MarkdownNode {
	if src != visible {
		tree = ResolvedMarkdown(src, tree)
	}
	tree, _ = visibleTree(tree)
	return tree
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
