//go:build !js

package ui

import (
	"strings"
	"testing"

	"github.com/maxence-charriere/go-app/v10/pkg/app"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"
)

// TestMarkdown: an agent's markdown becomes elements (CommonMark and GitHub's tables,
// strikethrough and task lists); HTML stays text, links are safe, images are not loaded.
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
		{"hard break", "a  \nb\nc", []string{"a\n    <br>\n    b c"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkHTML(t, app.HTMLString(markdown(tt.src, "text")), tt.want, tt.not)
		})
	}
}

// nestedShapes are ways an agent can nest blocks n deep.
var nestedShapes = []struct {
	name string
	src  func(n int) string
}{
	{"quotes", func(n int) string { return strings.Repeat(">", n) + " x" }},
	{"spaced quotes", func(n int) string { return strings.Repeat("> ", n) + "x" }},
	{"bullets", func(n int) string { return strings.Repeat("- ", n) + "x" }},
	{"numbers", func(n int) string { return strings.Repeat("1. ", n) + "x" }},
	{"quoted bullets", func(n int) string { return strings.Repeat("> * ", n/2) + "x" }},
	{"a line a level", func(n int) string {
		var b strings.Builder
		for i := range n / 64 { // indentation makes the text grow with the square of the depth
			b.WriteString(strings.Repeat("  ", i) + "- x\n")
		}
		return b.String()
	}},
	{"lazy lines", func(n int) string { return strings.Repeat(">", n) + " x\n" + strings.Repeat("y\n", n) }},
}

// maxNesting is the most blockquotes and lists any node of the tree is in.
func maxNesting(doc ast.Node) int {
	most := 0
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering && !n.HasChildren() {
			most = max(most, nesting(n))
		}
		return ast.WalkContinue, nil
	})
	return most
}

// TestMarkdownNestingBounded: however deep an agent nests quotes and lists, the parsed tree
// nests at most markdownNesting of them, and the text past the bound is still shown, as
// written. Up to the bound, nesting is CommonMark's.
func TestMarkdownNestingBounded(t *testing.T) {
	for _, sh := range nestedShapes {
		t.Run(sh.name, func(t *testing.T) {
			src := sh.src(40_000)
			if got := maxNesting(markdownParser.Parse(text.NewReader([]byte(src)))); got > markdownNesting {
				t.Errorf("nested %d deep, want at most %d", got, markdownNesting)
			}
			html := app.HTMLString(markdown(src, "text"))
			if !strings.Contains(html, "x") {
				t.Errorf("the text is gone: %.200s", html)
			}
		})
	}
	for _, n := range []int{1, 3, markdownNesting} {
		if got := maxNesting(markdownParser.Parse(text.NewReader([]byte(strings.Repeat("> ", n) + "x")))); got != n {
			t.Errorf("%d quotes parsed %d deep", n, got)
		}
	}
	if html := app.HTMLString(markdown(strings.Repeat(">", markdownNesting+3)+" x", "text")); !strings.Contains(html, "&gt;&gt;&gt; x") {
		t.Errorf("the quote markers past the bound are not shown as text: %s", html)
	}
}

// columnCount counts the columns goldmark's block parsers ask the reader for: each answer is
// a scan of the line from its start (text.Reader's LineOffset), the work that grew with
// the square of the nesting.
type columnCount struct {
	text.Reader
	sum int
}

func (c *columnCount) LineOffset() int {
	n := c.Reader.LineOffset()
	c.sum += n
	return n
}

// TestMarkdownParseLinear: the parser's work, counted (not timed), grows with the text: per
// byte, four times the nesting costs no more than the nesting it is compared with.
func TestMarkdownParseLinear(t *testing.T) {
	work := func(src string) int {
		r := &columnCount{Reader: text.NewReader([]byte(src))}
		markdownParser.Parse(r)
		return r.sum
	}
	for _, sh := range nestedShapes {
		small, large := sh.src(10_000), sh.src(40_000)
		ws, wl := work(small), work(large)
		if float64(wl)/float64(len(large)) > 1.5*float64(max(ws, 1))/float64(len(small)) {
			t.Errorf("%s: %d columns for %d bytes, %d for %d", sh.name, ws, len(small), wl, len(large))
		}
	}
}

// BenchmarkMarkdownNestedQuotes draws one reply of 40,000 nested quotes, as the server's
// prerender of a session page does; goldmark is goldmark's own parser, without the bound,
// for comparison (parsing only).
func BenchmarkMarkdownNestedQuotes(b *testing.B) {
	src := strings.Repeat(">", 40_000) + " x"
	b.Run("goldmark", func(b *testing.B) {
		p := goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.TaskList)).Parser()
		for b.Loop() {
			p.Parse(text.NewReader([]byte(src)))
		}
	})
	b.Run("conch", func(b *testing.B) {
		for b.Loop() {
			markdown(src, "text")
		}
	})
}
