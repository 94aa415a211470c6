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
// src.
func Parse(src string, limit int) ([]shared.MarkdownNode, int) {
	b := []byte(src)
	m := md{src: b}
	tree := m.children(markdownParser.Parse(text.NewReader(b)), 0)
	if len(tree) == 0 {
		return nil, 0
	}
	raw, err := json.Marshal(tree)
	if err != nil || len(raw) > limit {
		return nil, 0
	}
	return tree, len(raw)
}

type md struct{ src []byte }

func (m md) children(n ast.Node, depth int) []shared.MarkdownNode {
	var out []shared.MarkdownNode
	var run strings.Builder // neighbouring text goes into one text node
	flush := func() {
		if run.Len() > 0 {
			out = append(out, shared.MarkdownNode{Kind: shared.MarkdownText, Text: run.String()})
			run.Reset()
		}
	}
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if s, hard, ok := m.text(c); ok {
			run.WriteString(s)
			if hard {
				flush()
				out = append(out, shared.MarkdownNode{Kind: shared.MarkdownBreak})
			}
			continue
		}
		flush()
		out = append(out, m.node(c, depth+1))
	}
	flush()
	return out
}

// text is what a text node shows, whether a hard line break follows it, and whether n is
// one. HTML is shown as the text it is; a soft line break is a space (CommonMark's reading).
func (m md) text(n ast.Node) (s string, hard, ok bool) {
	switch n := n.(type) {
	case *ast.Text:
		s := string(n.Value(m.src))
		if !n.IsRaw() {
			s = m.escaped(n.Value(m.src))
		}
		if n.SoftLineBreak() {
			s += " "
		}
		return s, n.HardLineBreak(), true
	case *ast.String:
		if n.IsRaw() || n.IsCode() {
			return string(n.Value), false, true
		}
		return m.escaped(n.Value), false, true
	case *ast.RawHTML:
		var s strings.Builder
		for i := 0; i < n.Segments.Len(); i++ {
			seg := n.Segments.At(i)
			s.Write(seg.Value(m.src))
		}
		return s.String(), false, true
	}
	return "", false, false
}

func (m md) node(n ast.Node, depth int) shared.MarkdownNode {
	if depth > shared.MarkdownDepth && n.HasChildren() { // an agent may nest thousands deep
		return shared.MarkdownNode{Kind: shared.MarkdownText, Text: m.plain(n)}
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
		return shared.MarkdownNode{Kind: shared.MarkdownCodeBlock, Lang: m.escaped(n.Language(m.src)), Text: m.lines(n)}
	case *ast.CodeBlock:
		return shared.MarkdownNode{Kind: shared.MarkdownCodeBlock, Text: m.lines(n)}
	case *ast.HTMLBlock: // shown as the text it is
		s := m.lines(n)
		if n.HasClosure() {
			s += string(n.ClosureLine.Value(m.src))
		}
		return shared.MarkdownNode{Kind: shared.MarkdownHTML, Text: s}
	case *ast.Emphasis:
		if n.Level >= 2 {
			return of(shared.MarkdownStrong)
		}
		return of(shared.MarkdownEmphasis)
	case *east.Strikethrough:
		return of(shared.MarkdownStrike)
	case *ast.CodeSpan:
		return shared.MarkdownNode{Kind: shared.MarkdownCode, Text: m.plain(n)}
	case *ast.Link:
		return link(m.escaped(n.Destination), m.children(n, depth))
	case *ast.AutoLink:
		u := string(n.URL(m.src))
		if n.AutoLinkType == ast.AutoLinkEmail && !strings.HasPrefix(strings.ToLower(u), "mailto:") {
			u = "mailto:" + u
		}
		return link(u, []shared.MarkdownNode{{Kind: shared.MarkdownText, Text: string(n.Label(m.src))}})
	case *ast.Image: // not loaded: the page shows its alt text, then its address as a link
		return shared.MarkdownNode{Kind: shared.MarkdownImage, Text: m.plain(n), Href: m.escaped(n.Destination)}
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
	return shared.MarkdownNode{Kind: shared.MarkdownText, Text: m.plain(n)}
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
func (m md) lines(n ast.Node) string {
	var s strings.Builder
	l := n.Lines()
	for i := 0; i < l.Len(); i++ {
		seg := l.At(i)
		s.Write(seg.Value(m.src))
	}
	return s.String()
}

// plain is the text of n and everything under it, for a node drawn flat.
func (m md) plain(n ast.Node) string {
	var s strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		if t, hard, ok := m.text(c); ok {
			s.WriteString(t)
			if hard {
				s.WriteByte('\n')
			}
		}
		return ast.WalkContinue, nil
	})
	return s.String()
}

// escaped is text with the agent's backslash escapes and character references resolved,
// exactly as goldmark's own HTML writer resolves them (then read back from its HTML).
func (m md) escaped(b []byte) string {
	if bytes.IndexAny(b, `\&`) < 0 && bytes.IndexByte(b, 0) < 0 {
		return string(b)
	}
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	ghtml.DefaultWriter.Write(w, b)
	w.Flush()
	return html.UnescapeString(buf.String())
}
