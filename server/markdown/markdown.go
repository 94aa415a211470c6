// Package markdown parses an agent's markdown (CommonMark with GitHub's tables,
// strikethrough and task lists) into the tree of blocks the page draws
// (shared.MarkdownNode). It runs on the server, once, when a message is stored: the
// browser carries no parser.
//
// goldmark was chosen over github.com/gomarkdown/markdown on figures measured on
// 2026-12-04 (then in the browser: app.wasm, raw / brotli, parsing with both extensions
// and walking the tree): goldmark added 979 KB / 123.4 KB, gomarkdown 739 KB / 121.3 KB.
// For 2 KB more it follows CommonMark's spec and GitHub's extensions exactly, and has
// tagged releases.
package markdown

import (
	"bufio"
	"bytes"
	"encoding/json"
	"html"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	ghtml "github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"

	"conch/shared"
)

var markdownParser = goldmark.New(goldmark.WithParser(nestingParser()),
	goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.TaskList)).Parser()

// markdownNesting bounds how many blockquotes and lists the parser opens inside each
// other. goldmark's work grows with the square of the nesting (each level reads its line
// again from the start, each line goes through every open level): a reply of 40,000
// nested quotes took 1.5 s to parse (BenchmarkMarkdownNestedQuotes). Past the bound a ">"
// or a list marker is text of the innermost block, shown as written, so parsing is linear
// in the text. No person nests 32 quotes; the tree nests shared.MarkdownDepth levels and
// flattens the rest anyway.
const markdownNesting = 32

// nestingParser is goldmark's parser with its blockquote and list parsers bounded by
// markdownNesting.
func nestingParser() parser.Parser {
	blocks := parser.DefaultBlockParsers()
	for i, b := range blocks {
		if b.Value == parser.NewBlockquoteParser() || b.Value == parser.NewListParser() {
			blocks[i].Value = nested{b.Value.(parser.BlockParser)}
		}
	}
	inlines := parser.DefaultInlineParsers()
	for i, p := range inlines {
		if p.Value == parser.NewLinkParser() {
			inlines[i].Value = boundedLinks{p.Value.(parser.InlineParser)}
		}
	}
	return parser.NewParser(parser.WithBlockParsers(blocks...),
		parser.WithInlineParsers(inlines...),
		parser.WithParagraphTransformers(parser.DefaultParagraphTransformers()...))
}

// nested is a parser of a container block that opens none inside markdownNesting others.
type nested struct{ parser.BlockParser }

func (p nested) Open(parent ast.Node, reader text.Reader, pc parser.Context) (ast.Node, parser.State) {
	if nesting(parent) >= markdownNesting {
		return nil, parser.NoChildren
	}
	return p.BlockParser.Open(parent, reader, pc)
}

// maxFailedLinks bounds how many "](" of a text goldmark may try to read as a link and fail:
// past it a "](" opens no link (it is text). Each try looks for the end of the link's
// address and title up to the end of the paragraph, so a text of "[a](" (on one line or
// many) took work growing with the square of its length (256 KiB: minutes). A reply
// with more than a few such "](" is no prose; its parse is now linear.
const maxFailedLinks = 16

var failedLinks = parser.NewContextKey()

// boundedLinks is goldmark's link parser, bounded by maxFailedLinks.
type boundedLinks struct{ parser.InlineParser }

func (p boundedLinks) Parse(parent ast.Node, block text.Reader, pc parser.Context) ast.Node {
	line, _ := block.PeekLine()
	if len(line) < 2 || line[0] != ']' || line[1] != '(' {
		return p.InlineParser.Parse(parent, block, pc)
	}
	failed, _ := pc.Get(failedLinks).(int)
	if failed >= maxFailedLinks {
		return nil
	}
	n := p.InlineParser.Parse(parent, block, pc)
	if n == nil {
		pc.Set(failedLinks, failed+1)
	}
	return n
}

// CloseBlock turns the link openers left in a block into text, as goldmark's parser does.
func (p boundedLinks) CloseBlock(parent ast.Node, block text.Reader, pc parser.Context) {
	p.InlineParser.(parser.CloseBlocker).CloseBlock(parent, block, pc)
}

// nesting counts the blockquotes and lists n is in, n included: at most markdownNesting
// of them (with a list item and a paragraph or two between each), so the walk is short.
func nesting(n ast.Node) int {
	d := 0
	for ; n != nil; n = n.Parent() {
		switch n.(type) {
		case *ast.Blockquote, *ast.List:
			d++
		}
	}
	return d
}

// Parse returns the tree of src and the size of its JSON, or nil when that JSON would be
// more than limit bytes: the page then shows src as plain text. Its work is linear in
// src. The tree's ranges are of src (shared.MarkdownFits) when src is valid UTF-8, as the
// store keeps every text.
func Parse(src string, limit int) ([]shared.MarkdownNode, int) {
	b := []byte(src)
	m := md{src: b}
	tree := m.children(markdownParser.Parse(text.NewReader(b)), 0)
	if len(tree) == 0 {
		return nil, 0
	}
	end := 0
	m.relative(tree, &end)
	raw, err := json.Marshal(tree)
	if err != nil || len(raw) > limit {
		return nil, 0
	}
	return tree, len(raw)
}

type md struct{ src []byte }

// relative turns the ranges of tree, where each starts and ends in the source, into
// ranges each relative to the end of the one before (shared.MarkdownNode). A range that
// would start before the end of the one before (goldmark's tree out of the source's order)
// becomes its text.
func (m md) relative(tree []shared.MarkdownNode, end *int) {
	for i := range tree {
		n := &tree[i]
		if from, to := n.Skip, n.Len; to > 0 {
			if from < *end {
				n.Text, n.Skip, n.Len = string(m.src[from:to]), 0, 0
			} else {
				n.Skip, n.Len, *end = from-*end, to-from, to
			}
		}
		m.relative(n.Children, end)
	}
}

func (m md) children(n ast.Node, depth int) []shared.MarkdownNode {
	r := run{src: m.src, inline: true}
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if !m.text(&r, c) {
			r.out = append(r.out, m.node(c, depth+1))
		}
	}
	return r.out
}

// text adds what a text node shows to r, a hard line break after it, and reports whether
// n is one. HTML is shown as the text it is; a soft line break is a space (CommonMark's
// reading).
func (m md) text(r *run, n ast.Node) bool {
	switch n := n.(type) {
	case *ast.Text:
		if v := n.Value(m.src); n.IsRaw() || !escapes(v) {
			r.segment(n.Segment)
		} else {
			r.text(m.escaped(v))
		}
		if n.SoftLineBreak() {
			r.softBreak()
		}
		if n.HardLineBreak() {
			r.hardBreak()
		}
	case *ast.String:
		if n.IsRaw() || n.IsCode() {
			r.text(string(n.Value))
		} else {
			r.text(m.escaped(n.Value))
		}
	case *ast.RawHTML:
		for i := 0; i < n.Segments.Len(); i++ {
			r.segment(n.Segments.At(i))
		}
	default:
		return false
	}
	return true
}

// run gathers neighbouring texts into text nodes (out, with the other nodes between
// them): a range of the source where the text is a slice of it, else the text. While
// parsing, a range's Skip and Len are where it starts and ends in the source; Parse makes
// them relative at the end (relative).
type run struct {
	src    []byte
	inline bool // the page reads a run of spaces and line breaks as one space
	out    []shared.MarkdownNode
}

// last is the text node that a text added now continues, or nil.
func (r *run) last() *shared.MarkdownNode {
	if len(r.out) == 0 || r.out[len(r.out)-1].Kind != shared.MarkdownText {
		return nil
	}
	return &r.out[len(r.out)-1]
}

// segment adds a segment of the source: a range when its text is the source's bytes.
func (r *run) segment(seg text.Segment) {
	v := seg.Value(r.src)
	if len(v) != seg.Len() { // padded (a tab in code) or given a line break
		r.text(string(v))
		return
	}
	if seg.Len() == 0 {
		return
	}
	// A slice continues the one before it, or inline the one before its line's indent.
	if l := r.last(); l != nil && l.Len > 0 && l.Len <= seg.Start &&
		(l.Len == seg.Start || r.inline && r.src[l.Len-1] == '\n' && blank(r.src[l.Len:seg.Start])) {
		l.Len = seg.Stop
		return
	}
	r.out = append(r.out, shared.MarkdownNode{Kind: shared.MarkdownText, Skip: seg.Start, Len: seg.Stop})
}

func (r *run) text(s string) {
	if s == "" {
		return
	}
	if l := r.last(); l != nil && l.Len == 0 {
		l.Text += s
		return
	}
	r.out = append(r.out, shared.MarkdownNode{Kind: shared.MarkdownText, Text: s})
}

// softBreak adds a soft line break: the range before it takes the line's end as written
// (spaces, then the line break) when it can, which an inline run reads as a space.
func (r *run) softBreak() {
	if l := r.last(); r.inline && l != nil && l.Len > 0 {
		i := l.Len
		for i < len(r.src) && (r.src[i] == ' ' || r.src[i] == '\t' || r.src[i] == '\r') {
			i++
		}
		if i < len(r.src) && r.src[i] == '\n' {
			l.Len = i + 1
			return
		}
	}
	r.text(" ")
}

func (r *run) hardBreak() {
	if r.inline {
		r.out = append(r.out, shared.MarkdownNode{Kind: shared.MarkdownBreak})
	} else {
		r.text("\n")
	}
}

func blank(b []byte) bool { return len(bytes.Trim(b, " \t")) == 0 }

// one is the text of a run as one text node: its range when it is one, else its text.
func (r *run) one() shared.MarkdownNode {
	if len(r.out) == 1 {
		return r.out[0]
	}
	var s strings.Builder
	for _, n := range r.out {
		if n.Len > 0 {
			s.Write(r.src[n.Skip:n.Len])
		} else {
			s.WriteString(n.Text)
		}
	}
	return shared.MarkdownNode{Kind: shared.MarkdownText, Text: s.String()}
}

func (m md) node(n ast.Node, depth int) shared.MarkdownNode {
	if depth > shared.MarkdownDepth && n.HasChildren() { // an agent may nest thousands deep
		return m.plain(n)
	}
	of := func(k shared.MarkdownKind) shared.MarkdownNode {
		return shared.MarkdownNode{Kind: k, Children: m.children(n, depth)}
	}
	switch n := n.(type) {
	case *ast.Paragraph:
		return of(shared.MarkdownParagraph)
	case *ast.TextBlock: // a tight list item's text
		return of(shared.MarkdownSpan)
	case *ast.Heading:
		h := of(shared.MarkdownHeading)
		h.Level = n.Level
		return h
	case *ast.ThematicBreak:
		return shared.MarkdownNode{Kind: shared.MarkdownRule}
	case *ast.Blockquote:
		return of(shared.MarkdownQuote)
	case *ast.List:
		l := of(shared.MarkdownList)
		if n.IsOrdered() {
			l.Ordered, l.Start = true, n.Start
		}
		return l
	case *ast.ListItem:
		return of(shared.MarkdownItem)
	case *ast.FencedCodeBlock:
		c := m.lines(n).one()
		c.Kind, c.Lang = shared.MarkdownCodeBlock, m.escaped(n.Language(m.src))
		return c
	case *ast.CodeBlock:
		return as(shared.MarkdownCodeBlock, m.lines(n).one())
	case *ast.HTMLBlock: // shown as the text it is
		r := m.lines(n)
		if n.HasClosure() {
			r.segment(n.ClosureLine)
		}
		return as(shared.MarkdownHTML, r.one())
	case *ast.Emphasis:
		if n.Level >= 2 {
			return of(shared.MarkdownStrong)
		}
		return of(shared.MarkdownEmphasis)
	case *east.Strikethrough:
		return of(shared.MarkdownStrike)
	case *ast.CodeSpan:
		return as(shared.MarkdownCode, m.plain(n))
	case *ast.Link:
		return link(m.escaped(n.Destination), m.children(n, depth))
	case *ast.AutoLink:
		u := string(n.URL(m.src))
		if n.AutoLinkType == ast.AutoLinkEmail && !strings.HasPrefix(strings.ToLower(u), "mailto:") {
			u = "mailto:" + u
		}
		return link(u, []shared.MarkdownNode{{Kind: shared.MarkdownText, Text: string(n.Label(m.src))}})
	case *ast.Image: // not loaded: the page shows its alt text, then its address as a link
		i := as(shared.MarkdownImage, m.plain(n))
		i.Href = m.escaped(n.Destination)
		return i
	case *east.TaskCheckBox:
		return shared.MarkdownNode{Kind: shared.MarkdownTask, Checked: n.IsChecked}
	case *east.Table:
		t := shared.MarkdownNode{Kind: shared.MarkdownTable}
		for _, a := range n.Alignments {
			t.Align = append(t.Align, align[a])
		}
		for c := n.FirstChild(); c != nil; c = c.NextSibling() { // the header row first
			row := shared.MarkdownNode{Kind: shared.MarkdownRow}
			for cell := c.FirstChild(); cell != nil; cell = cell.NextSibling() {
				row.Children = append(row.Children, shared.MarkdownNode{Kind: shared.MarkdownCell, Children: m.children(cell, depth+2)})
			}
			t.Children = append(t.Children, row)
		}
		return t
	}
	// Anything else (a node kind this file does not know) shows its text.
	return m.plain(n)
}

// as is the text node t as a node of kind k.
func as(k shared.MarkdownKind, t shared.MarkdownNode) shared.MarkdownNode {
	t.Kind = k
	return t
}

var align = map[east.Alignment]string{east.AlignLeft: "left", east.AlignCenter: "center", east.AlignRight: "right"}

// link is a link to dest around body when dest is one a reply may open
// (shared.Linkable), else body alone.
func link(dest string, body []shared.MarkdownNode) shared.MarkdownNode {
	if !shared.Linkable(dest) {
		return shared.MarkdownNode{Kind: shared.MarkdownSpan, Children: body}
	}
	return shared.MarkdownNode{Kind: shared.MarkdownLink, Href: dest, Children: body}
}

// lines is a block's text as written (code keeps its backslashes and references).
func (m md) lines(n ast.Node) *run {
	r := &run{src: m.src}
	l := n.Lines()
	for i := 0; i < l.Len(); i++ {
		r.segment(l.At(i))
	}
	return r
}

// plain is the text of n and everything under it as one text node, for a node drawn flat.
func (m md) plain(n ast.Node) shared.MarkdownNode {
	r := run{src: m.src}
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			m.text(&r, c)
		}
		return ast.WalkContinue, nil
	})
	return r.one()
}

// escaped is text with the agent's backslash escapes and character references resolved,
// exactly as goldmark's own HTML writer resolves them (then read back from its HTML).
func (m md) escaped(b []byte) string {
	if !escapes(b) {
		return string(b)
	}
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	ghtml.DefaultWriter.Write(w, b)
	w.Flush()
	return html.UnescapeString(buf.String())
}

// escapes reports whether b has what escaped resolves.
func escapes(b []byte) bool { return bytes.IndexAny(b, `\&`) >= 0 || bytes.IndexByte(b, 0) >= 0 }
