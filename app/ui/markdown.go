package ui

import (
	"bufio"
	"bytes"
	"fmt"
	"html"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/maxence-charriere/go-app/v10/pkg/app"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	ghtml "github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"
)

// An agent's reply and its plan entries are markdown (CommonMark with GitHub's tables,
// strikethrough and task lists). The parsed tree becomes go-app elements here, element by
// element: agent text only ever reaches text nodes or, through attrText, the href and
// title of a link, so HTML in a reply shows as the text it is and no markup can come of
// it. Links open in a new tab, without the opener or a referrer, and only for
// http, https and mailto; images are never loaded (their alt text and address show as a
// link instead: an image request tells its host who read the reply, and when).
//
// goldmark was chosen over github.com/gomarkdown/markdown on figures measured on
// 2026-12-04 (app.wasm, raw / brotli, parsing with both extensions and walking the tree):
// goldmark added 979 KB / 123.4 KB, gomarkdown 739 KB / 121.3 KB. For 2 KB more it
// follows CommonMark's spec and GitHub's extensions exactly, and has tagged releases.
// With this file, app.wasm.br grew from 1,257,153 to 1,419,266 bytes.

var markdownParser = goldmark.New(goldmark.WithParser(nestingParser()),
	goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.TaskList)).Parser()

// markdownNesting bounds how many blockquotes and lists the parser opens inside each
// other. goldmark's work grows with the square of the nesting (each level reads its line
// again from the start, each line goes through every open level): a reply of 40,000
// nested quotes took 1.5 s to parse (BenchmarkMarkdownNestedQuotes), on the server for
// each view of its session page, which prerenders it. Past the bound a ">" or a list
// marker is text of the innermost block, shown as written, so parsing is linear in the
// text. No person nests 32 quotes; the page draws 16 levels (markdownDepth) and flattens
// the rest anyway.
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
	return parser.NewParser(parser.WithBlockParsers(blocks...),
		parser.WithInlineParsers(parser.DefaultInlineParsers()...),
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

// markdownDepth bounds how deeply elements nest: past it a node's text is shown flat.
// An agent may nest emphasis or quotes thousands deep; the page stays shallow.
const markdownDepth = 16

// markdown draws src (an agent's markdown) as elements inside a div of the given classes.
func markdown(src string, classes ...string) app.UI {
	b := []byte(src)
	doc := markdownParser.Parse(text.NewReader(b))
	m := md{src: b}
	return app.Div().Class(append(classes, "md")...).Body(m.children(doc, 0)...)
}

type md struct{ src []byte }

func (m md) children(n ast.Node, depth int) []app.UI {
	var out []app.UI
	var run strings.Builder // neighbouring text goes into one text node
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if s, hard, ok := m.text(c); ok {
			run.WriteString(s)
			if hard {
				out = append(out, app.Text(run.String()), app.Br())
				run.Reset()
			}
			continue
		}
		if run.Len() > 0 {
			out = append(out, app.Text(run.String()))
			run.Reset()
		}
		out = append(out, m.node(c, depth+1))
	}
	if run.Len() > 0 {
		out = append(out, app.Text(run.String()))
	}
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

func (m md) node(n ast.Node, depth int) app.UI {
	if depth > markdownDepth && n.HasChildren() { // an agent may nest thousands deep
		return app.Text(m.plain(n))
	}
	kids := func() []app.UI { return m.children(n, depth) }
	switch n := n.(type) {
	case *ast.Paragraph:
		return app.P().Body(kids()...)
	case *ast.TextBlock: // a tight list item's text
		return app.Span().Body(kids()...)
	case *ast.Heading:
		return app.P().Class("md-heading", "md-h"+strconv.Itoa(n.Level)).Body(kids()...)
	case *ast.ThematicBreak:
		return app.Hr()
	case *ast.Blockquote:
		return app.Blockquote().Body(kids()...)
	case *ast.List:
		if !n.IsOrdered() {
			return app.Ul().Body(kids()...)
		}
		if n.Start != 1 {
			return app.Ol().Attr("start", n.Start).Body(kids()...)
		}
		return app.Ol().Body(kids()...)
	case *ast.ListItem:
		return app.Li().Body(kids()...)
	case *ast.FencedCodeBlock:
		return &CodeBlock{Lang: m.escaped(n.Language(m.src)), Code: m.lines(n)}
	case *ast.CodeBlock:
		return &CodeBlock{Code: m.lines(n)}
	case *ast.HTMLBlock: // shown as the text it is
		s := m.lines(n)
		if n.HasClosure() {
			s += string(n.ClosureLine.Value(m.src))
		}
		return app.P().Class("md-html").Text(s)
	case *ast.Emphasis:
		if n.Level >= 2 {
			return app.Strong().Body(kids()...)
		}
		return app.Em().Body(kids()...)
	case *east.Strikethrough:
		return app.Del().Body(kids()...)
	case *ast.CodeSpan:
		return app.Code().Text(m.plain(n))
	case *ast.Link:
		return link(m.escaped(n.Destination), kids())
	case *ast.AutoLink:
		u := string(n.URL(m.src))
		if n.AutoLinkType == ast.AutoLinkEmail && !strings.HasPrefix(strings.ToLower(u), "mailto:") {
			u = "mailto:" + u
		}
		return link(u, []app.UI{app.Text(string(n.Label(m.src)))})
	case *ast.Image: // not loaded: its alt text, then its address as a link
		dest := m.escaped(n.Destination)
		return app.Span().Class("md-image").Body(
			app.Span().Class("md-image-alt").Text("Image: "+m.plain(n)),
			link(dest, []app.UI{app.Text(dest)}),
		)
	case *east.TaskCheckBox:
		mark, word := "☐", "to do"
		if n.IsChecked {
			mark, word = "☑", "done"
		}
		return app.Span().Class("md-task").Body(
			app.Span().Aria("hidden", "true").Text(mark+" "),
			app.Span().Class("sr-only").Text(word+": "),
		)
	case *east.Table:
		var head, body []app.UI
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			if _, ok := c.(*east.TableHeader); ok {
				head = append(head, app.Tr().Body(m.cells(c, n.Alignments, depth, true)...))
			} else {
				body = append(body, app.Tr().Body(m.cells(c, n.Alignments, depth, false)...))
			}
		}
		return app.Div().Class("md-table").Body(app.Table().Body(app.THead().Body(head...), app.TBody().Body(body...)))
	}
	// Anything else (a node kind this file does not know) shows its text.
	return app.Text(m.plain(n))
}

func (m md) cells(row ast.Node, align []east.Alignment, depth int, head bool) []app.UI {
	var out []app.UI
	i := 0
	for c := row.FirstChild(); c != nil; c, i = c.NextSibling(), i+1 {
		cls := "md-left"
		if i < len(align) {
			switch align[i] {
			case east.AlignCenter:
				cls = "md-center"
			case east.AlignRight:
				cls = "md-right"
			}
		}
		if head {
			out = append(out, app.Th().Scope("col").Class(cls).Body(m.children(c, depth+2)...))
		} else {
			out = append(out, app.Td().Class(cls).Body(m.children(c, depth+2)...))
		}
	}
	return out
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

// link is an anchor to dest around body when dest is an absolute http, https or mailto
// address, else body alone: a relative address would resolve against Conch itself and
// any other scheme (javascript:, data:, file:) has no business in a reply. The title
// shows the address as the agent wrote it, on hover and focus.
func link(dest string, body []app.UI) app.UI {
	if !linkable(dest) {
		return app.Span().Body(body...)
	}
	return app.A().Href(attrText(asciiURL(dest))).Title(attrText(dest)).Target("_blank").Rel("noopener noreferrer").Body(body...)
}

// asciiURL is dest with every byte a browser would percent-encode in a URL (and the
// backslash, which a browser would read as a slash) percent-encoded: printable ASCII
// that Go's quoting keeps, so the server's resolver (sameOrigin) leaves it as it is.
func asciiURL(dest string) string {
	var b strings.Builder
	for i := 0; i < len(dest); i++ {
		if c := dest[i]; c <= ' ' || c > '~' || strings.IndexByte("\"'<>\\`", c) >= 0 {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

func linkable(dest string) bool {
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

// CodeBlock is a fenced or indented code block: monospace like an output, with a button
// that copies its text.
type CodeBlock struct {
	app.Compo
	Lang, Code string
	note       string
}

func (c *CodeBlock) Render() app.UI {
	return app.Div().Class("md-code").Body(
		app.Div().Class("md-code-head").Body(
			app.If(c.Lang != "", func() app.UI { return app.Span().Class("md-lang").Text(c.Lang) }),
			app.Span().Class("out-tools-gap"),
			app.If(c.note != "", func() app.UI { return app.Span().Class("out-note-inline").Aria("live", "polite").Text(c.note) }),
			app.Button().Type("button").Class("tool").OnClick(c.copy).Text("Copy code"),
		),
		app.Pre().Class("md-pre").Body(app.Code().Text(c.Code)),
	)
}

func (c *CodeBlock) copy(ctx app.Context, _ app.Event) {
	c.note = toClipboard(ctx, c.Code, "Copied", func(note string) {
		if c.note == note {
			c.note = ""
		}
	})
}

// toClipboard puts text on the clipboard and returns the note to show (done, or why
// not); clear is dispatched two seconds later with that note, to take it away.
func toClipboard(ctx app.Context, text, done string, clear func(note string)) string {
	clipboard := app.Window().Get("navigator").Get("clipboard")
	if !clipboard.Truthy() {
		return "Copying is not available here"
	}
	clipboard.Call("writeText", text)
	time.AfterFunc(2*time.Second, func() { ctx.Dispatch(func(app.Context) { clear(done) }) })
	return done
}
