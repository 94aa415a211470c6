package ui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/shared"
)

// An agent's reply and its plan entries are markdown, parsed on the server when stored
// (server/markdown) into a tree of blocks (shared.MarkdownNode) that becomes go-app
// elements here, node by node: agent text only ever reaches text nodes or, through
// attrText, the href and title of a link, so HTML in a reply shows as the text it is and
// no markup can come of it. Links open in a new tab, without the opener or a referrer,
// and only for http, https and mailto; images are never loaded (their alt text and
// address show as a link instead: an image request tells its host who read the reply,
// and when). The browser carries no parser: goldmark added 162 KB to app.wasm.br.

// markdown draws src (an agent's markdown) from its tree inside a div of the given
// classes; without a tree (a server from before, a text past shared.MaxMarkdownBytes) or
// with one whose ranges are not of src, src as written.
func markdown(src string, tree []shared.MarkdownNode, classes ...string) app.UI {
	if tree == nil || !shared.MarkdownFits(src, tree) {
		return app.Div().Class(append(classes, "md", "md-plain")...).Text(src)
	}
	return app.Div().Class(append(classes, "md")...).Body(mdNodes(shared.NewMarkdownRanges(src), tree)...)
}

// mdNodes draws ns, the nodes after those r read. Texts side by side (a range of src, then
// an entity or an escape given as written, ...) are one text node, as a person reads them:
// the server's prerender would put each of them on a line of its own.
func mdNodes(r *shared.MarkdownRanges, ns []shared.MarkdownNode) []app.UI {
	out := make([]app.UI, 0, len(ns))
	for i := 0; i < len(ns); i++ {
		if ns[i].Kind != shared.MarkdownText {
			out = append(out, mdNode(r, ns[i]))
			continue
		}
		var text strings.Builder
		for ; i < len(ns) && ns[i].Kind == shared.MarkdownText; i++ {
			text.WriteString(r.Text(ns[i]))
		}
		i--
		out = append(out, app.Text(text.String()))
	}
	return out
}

// mdNode draws n, the node after those r read. The server bounds the tree's depth
// (shared.MarkdownDepth).
func mdNode(r *shared.MarkdownRanges, n shared.MarkdownNode) app.UI {
	text := r.Text(n) // before the children's
	kids := func() []app.UI { return mdNodes(r, n.Children) }
	switch n.Kind {
	case shared.MarkdownBreak:
		return app.Br()
	case shared.MarkdownParagraph:
		return app.P().Body(kids()...)
	case shared.MarkdownSpan:
		return app.Span().Body(kids()...)
	case shared.MarkdownHeading:
		return app.P().Class("md-heading", "md-h"+strconv.Itoa(n.Level)).Body(kids()...)
	case shared.MarkdownRule:
		return app.Hr()
	case shared.MarkdownQuote:
		return app.Blockquote().Body(kids()...)
	case shared.MarkdownList:
		switch {
		case !n.Ordered:
			return app.Ul().Body(kids()...)
		case n.Start != 1:
			return app.Ol().Attr("start", n.Start).Body(kids()...)
		}
		return app.Ol().Body(kids()...)
	case shared.MarkdownItem:
		return app.Li().Body(kids()...)
	case shared.MarkdownCodeBlock:
		return &CodeBlock{Lang: n.Lang, Code: text}
	case shared.MarkdownHTML:
		return app.P().Class("md-html").Text(text)
	case shared.MarkdownEmphasis:
		return app.Em().Body(kids()...)
	case shared.MarkdownStrong:
		return app.Strong().Body(kids()...)
	case shared.MarkdownStrike:
		return app.Del().Body(kids()...)
	case shared.MarkdownCode:
		return app.Code().Text(text)
	case shared.MarkdownLink:
		return link(n.Href, kids())
	case shared.MarkdownImage: // not loaded: its alt text, then its address as a link
		return app.Span().Class("md-image").Body(
			app.Span().Class("md-image-alt").Text("Image: "+text),
			link(n.Href, []app.UI{app.Text(n.Href)}),
		)
	case shared.MarkdownTask:
		mark, word := "☐", "to do"
		if n.Checked {
			mark, word = "☑", "done"
		}
		return app.Span().Class("md-task").Body(
			app.Span().Aria("hidden", "true").Text(mark+" "),
			app.Span().Class("sr-only").Text(word+": "),
		)
	case shared.MarkdownTable:
		var head, body []app.UI
		for i, row := range n.Children { // the header row first
			if i == 0 {
				head = append(head, app.Tr().Body(cells(r, row, n.Align, true)...))
			} else {
				body = append(body, app.Tr().Body(cells(r, row, n.Align, false)...))
			}
		}
		return app.Div().Class("md-table").Body(app.Table().Body(app.THead().Body(head...), app.TBody().Body(body...)))
	}
	// Text, and a kind this page does not know: its text.
	return app.Text(text)
}

func cells(r *shared.MarkdownRanges, row shared.MarkdownNode, align []string, head bool) []app.UI {
	out := make([]app.UI, len(row.Children))
	for i, c := range row.Children {
		cls := "md-left"
		if i < len(align) && (align[i] == "center" || align[i] == "right") {
			cls = "md-" + align[i]
		}
		if head {
			out[i] = app.Th().Scope("col").Class(cls).Body(mdNodes(r, c.Children)...)
		} else {
			out[i] = app.Td().Class(cls).Body(mdNodes(r, c.Children)...)
		}
	}
	return out
}

// link is an anchor to dest around body when dest is one a reply may open
// (shared.Linkable, which the server checked already), else body alone. The title shows
// the address as the agent wrote it, on hover and focus.
func link(dest string, body []app.UI) app.UI {
	if !shared.Linkable(dest) {
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
