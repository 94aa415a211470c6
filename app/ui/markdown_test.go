//go:build !js

package ui

import (
	"testing"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	servermd "conch/server/markdown"
	"conch/shared"
)

// parsed is src's tree as the server parses it, whatever its size.
func parsed(src string) []shared.MarkdownNode {
	tree, _ := servermd.Parse(src, 1<<30)
	return tree
}

// TestMarkdown: an agent's markdown, parsed by the server, becomes elements (CommonMark
// and GitHub's tables, strikethrough and task lists); HTML stays text, links are safe,
// images are not loaded.
func TestMarkdown(t *testing.T) {
	tests := []struct {
		name, src string
		want, not []string
	}{
		{"emphasis and code", "I created **hello.py** with a `greet` function.",
			[]string{"<strong>hello.py</strong>", "<code>greet</code>"}, []string{"**", "`"}},
		{"list", "Steps:\n\n- one\n- *two*\n\n1. a\n2. b",
			[]string{"<ul>", "<li>", "<em>two</em>", "<ol>"}, []string{"- one"}},
		{"ordered from 3", "3. c\n4. d", []string{`<ol start="3">`}, nil},
		{"fenced code", "```go\nfunc main() {}\n```",
			[]string{`class="md-code"`, `class="md-lang">go<`, "func main() {}", "Copy code"}, []string{"```"}},
		{"code keeps escapes", "```\na \\* &amp; b\n```", []string{`a \* &amp;amp; b`}, nil},
		{"table", "| a | b |\n|:-|-:|\n| 1 | **2** |",
			[]string{"<table>", `<th`, `scope="col"`, `class="md-left"`, `>a</th>`, `class="md-right"`, "<strong>2</strong>"}, []string{"|"}},
		{"strikethrough and tasks", "- [x] ~~old~~\n- [ ] new",
			[]string{"<del>old</del>", "☑", "done: ", "☐", "to do: "}, []string{"[x]", "<input"}},
		{"escapes and references", `\*not em\* &amp; &lt;b&gt; &#34;`, []string{`*not em* &amp; &lt;b&gt; &#34;`}, []string{"<em>", "<b>"}},
		{"inline HTML is text", `a <b onclick="x()">b</b> <script>alert(1)</script>`,
			[]string{"&lt;b onclick=&#34;x()&#34;&gt;b&lt;/b&gt;", "&lt;script&gt;"}, []string{"<b", "<script"}},
		{"HTML block is text", "<div>\n<img src=x onerror=alert(1)>\n</div>",
			[]string{`class="md-html"`, "&lt;img src=x"}, []string{"<img"}},
		{"link", "[docs](https://example.com/a?b=1&c=2)",
			[]string{`href="https://example.com/a?b=1&#38;c=2"`, `title="https://example.com/a?b=1&#38;c=2"`, `target="_blank"`, `rel="noopener noreferrer"`, `>docs</a>`}, nil},
		{"autolinks", "<https://example.com> and <me@example.com>",
			[]string{`href="https://example.com"`, `href="mailto:me@example.com"`}, nil},
		{"other schemes are not links", "[a](javascript:alert(1)) [b](data:text/html,x) [c](hello.py) [d](//evil.example) [e](java&#115;cript:alert(1))",
			[]string{"<span>a</span>", "<span>c</span>", "<span>e</span>"}, []string{"<a ", "href"}},
		{"images are not loaded", "![a chart](https://tracker.example/p.png)",
			[]string{"Image: a chart", `href="https://tracker.example/p.png"`}, []string{"<img", "src="}},
		{"hard break", "a  \nb\nc", []string{"a\n    <br>\n    b\nc"}, []string{"<br>\n    b\nc<br"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkHTML(t, app.HTMLString(markdown(tt.src, parsed(tt.src), "text")), tt.want, tt.not)
		})
	}
}

// TestMarkdownWithoutTree: a text without a tree (a server from before, a text past
// shared.MaxMarkdownBytes) is shown as written, markup as text; a link in a tree that no
// reply may open (sent by no server of Conch's) is no link either.
func TestMarkdownWithoutTree(t *testing.T) {
	checkHTML(t, app.HTMLString(markdown("**a** <b>\nc", nil, "text")), []string{`class="text md md-plain"`, "**a** &lt;b&gt;\nc"}, []string{"<strong>", "<b>"})
	tree := []shared.MarkdownNode{{Kind: shared.MarkdownLink, Href: "javascript:alert(1)", Children: []shared.MarkdownNode{{Kind: shared.MarkdownText, Text: "x"}}}}
	checkHTML(t, app.HTMLString(markdown("", tree, "text")), []string{"<span>x</span>"}, []string{"<a", "href"})
}

// TestMarkdownRangesChecked: a tree's ranges are drawn only when they are of the text:
// one past its end, inside a character, or negative makes the whole text plain, with no
// panic.
func TestMarkdownRangesChecked(t *testing.T) {
	text := func(skip, n int) shared.MarkdownNode {
		return shared.MarkdownNode{Kind: shared.MarkdownText, Skip: skip, Len: n}
	}
	para := func(c ...shared.MarkdownNode) []shared.MarkdownNode {
		return []shared.MarkdownNode{{Kind: shared.MarkdownParagraph, Children: c}}
	}
	src := "**é** x"
	good := para(shared.MarkdownNode{Kind: shared.MarkdownStrong, Children: []shared.MarkdownNode{text(2, 2)}}, text(2, 2))
	checkHTML(t, app.HTMLString(markdown(src, good, "text")), []string{"<strong>é</strong>", " x\n"}, []string{"md-plain", "**"})
	for name, tree := range map[string][]shared.MarkdownNode{
		"past the end":       para(text(0, 2), text(0, len(src))),
		"inside a character": para(text(2, 1)),
		"negative skip":      para(text(-1, 2)),
		"huge length":        para(text(0, 1<<62)),
		"huge skip":          para(text(1<<62, 1<<62)),
		"in a code block":    {{Kind: shared.MarkdownCodeBlock, Skip: 3, Len: 7}},
	} {
		t.Run(name, func(t *testing.T) {
			checkHTML(t, app.HTMLString(markdown(src, tree, "text")), []string{"md-plain", "**é** x"}, []string{"<p>", "<pre"})
		})
	}
}
