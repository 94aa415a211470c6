package markdown

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"

	"conch/shared"
)

// parse is src's tree, within any size, its ranges resolved: each its text.
func parse(src string) []shared.MarkdownNode {
	tree, _ := Parse(src, 1<<30)
	if !shared.MarkdownFits(src, tree) {
		panic("the tree of " + src + " does not fit it")
	}
	return shared.ResolvedMarkdown(src, tree)
}

// texts is the text of every node of tree, in order.
func texts(tree []shared.MarkdownNode) string {
	var s strings.Builder
	for _, n := range tree {
		s.WriteString(n.Text + texts(n.Children))
	}
	return s.String()
}

// TestParse: an agent's markdown becomes the tree the page draws (CommonMark and GitHub's
// tables, strikethrough and task lists), the text with its escapes resolved, HTML as text,
// links only to addresses a reply may open.
func TestParse(t *testing.T) {
	text := func(s string) shared.MarkdownNode { return shared.MarkdownNode{Kind: shared.MarkdownText, Text: s} }
	node := func(k shared.MarkdownKind, c ...shared.MarkdownNode) shared.MarkdownNode {
		return shared.MarkdownNode{Kind: k, Children: c}
	}
	para := func(c ...shared.MarkdownNode) shared.MarkdownNode { return node(shared.MarkdownParagraph, c...) }
	tests := []struct {
		name, src string
		want      []shared.MarkdownNode
	}{
		{"emphasis and code", "I **made** *a* `x` ~~y~~", []shared.MarkdownNode{para(text("I "), node(shared.MarkdownStrong, text("made")),
			text(" "), node(shared.MarkdownEmphasis, text("a")), text(" "), shared.MarkdownNode{Kind: shared.MarkdownCode, Text: "x"}, text(" "),
			node(shared.MarkdownStrike, text("y")))}},
		{"heading and rule", "## Two\n\n---", []shared.MarkdownNode{{Kind: shared.MarkdownHeading, Level: 2, Children: []shared.MarkdownNode{text("Two")}},
			{Kind: shared.MarkdownRule}}},
		{"lists", "- a\n\n3. b", []shared.MarkdownNode{
			node(shared.MarkdownList, node(shared.MarkdownItem, node(shared.MarkdownSpan, text("a")))),
			{Kind: shared.MarkdownList, Ordered: true, Start: 3, Children: []shared.MarkdownNode{node(shared.MarkdownItem, node(shared.MarkdownSpan, text("b")))}}}},
		{"tasks", "- [x] done", []shared.MarkdownNode{node(shared.MarkdownList, node(shared.MarkdownItem,
			node(shared.MarkdownSpan, shared.MarkdownNode{Kind: shared.MarkdownTask, Checked: true}, text("done"))))}},
		{"quote and break", "> a  \nb\nc", []shared.MarkdownNode{node(shared.MarkdownQuote,
			para(text("a"), shared.MarkdownNode{Kind: shared.MarkdownBreak}, text("b\nc")))}},
		{"code keeps escapes", "```go\na \\* &amp; b\n```", []shared.MarkdownNode{{Kind: shared.MarkdownCodeBlock, Lang: "go", Text: "a \\* &amp; b\n"}}},
		{"escapes and references", `\*not em\* &amp; &lt;b&gt;`, []shared.MarkdownNode{para(text("*not em* & <b>"))}},
		{"HTML is text", "<div>\n<img src=x>\n</div>\n\na <b>c</b>", []shared.MarkdownNode{{Kind: shared.MarkdownHTML, Text: "<div>\n<img src=x>\n</div>\n"},
			para(text("a <b>c</b>"))}},
		{"table", "| a | b |\n|:-|-:|\n| 1 | 2 |", []shared.MarkdownNode{{Kind: shared.MarkdownTable, Align: []string{"left", "right"}, Children: []shared.MarkdownNode{
			node(shared.MarkdownRow, node(shared.MarkdownCell, text("a")), node(shared.MarkdownCell, text("b"))),
			node(shared.MarkdownRow, node(shared.MarkdownCell, text("1")), node(shared.MarkdownCell, text("2")))}}}},
		{"links", "[docs](https://e.example/?a=1&amp;b=2) <me@e.example>", []shared.MarkdownNode{para(
			shared.MarkdownNode{Kind: shared.MarkdownLink, Href: "https://e.example/?a=1&b=2", Children: []shared.MarkdownNode{text("docs")}}, text(" "),
			shared.MarkdownNode{Kind: shared.MarkdownLink, Href: "mailto:me@e.example", Children: []shared.MarkdownNode{text("me@e.example")}})}},
		{"other schemes are not links", "[a](javascript:alert(1)) [b](hello.py) [c](java&#115;cript:x)", []shared.MarkdownNode{para(
			node(shared.MarkdownSpan, text("a")), text(" "), node(shared.MarkdownSpan, text("b")), text(" "), node(shared.MarkdownSpan, text("c")))}},
		{"image", "![a *chart*](https://t.example/p.png)", []shared.MarkdownNode{para(
			shared.MarkdownNode{Kind: shared.MarkdownImage, Text: "a chart", Href: "https://t.example/p.png"})}},
		{"empty", " \n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := json.Marshal(parse(tt.src))
			want, _ := json.Marshal(tt.want)
			if string(got) != string(want) {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}

// TestParseLimit: a tree whose JSON passes the limit is none; the size returned is its JSON's.
func TestParseLimit(t *testing.T) {
	src := strings.Repeat("*a* ", 1000)
	tree, n := Parse(src, 1<<30)
	raw, _ := json.Marshal(tree)
	if tree == nil || n != len(raw) {
		t.Fatalf("size %d, want %d", n, len(raw))
	}
	if tree, n := Parse(src, len(raw)); tree == nil || n != len(raw) {
		t.Errorf("at the limit: %d bytes", n)
	}
	if tree, n := Parse(src, len(raw)-1); tree != nil || n != 0 {
		t.Errorf("past the limit: %d nodes, %d bytes", len(tree), n)
	}
}

// TestParseDepthBounded: however deeply an agent nests, the tree nests at most
// shared.MarkdownDepth nodes (and a few for a table's rows and cells), its text kept flat.
func TestParseDepthBounded(t *testing.T) {
	for name, src := range map[string]string{
		"emphasis": strings.Repeat("*a ", 10000) + strings.Repeat(" a*", 10000),
		"quotes":   strings.Repeat("> ", 10000) + "x",
		"links":    strings.Repeat("[a", 10000) + strings.Repeat("](https://e.example/)", 10000),
	} {
		var depth func(ns []shared.MarkdownNode) int
		depth = func(ns []shared.MarkdownNode) int {
			d := 0
			for _, n := range ns {
				d = max(d, 1+depth(n.Children))
			}
			return d
		}
		tree := parse(src)
		if d := depth(tree); d > shared.MarkdownDepth+2 {
			t.Errorf("%s: nested %d deep", name, d)
		}
		if got := texts(tree); strings.Count(got, "a") < 10000 && !strings.Contains(got, "x") {
			t.Errorf("%s: the text is gone: %.200s", name, got)
		}
	}
}

// TestFailedLinksBounded: a "](" that makes no link is text; past maxFailedLinks of them a
// "](" is not even tried, and every character of the text is still there.
func TestFailedLinksBounded(t *testing.T) {
	link := "[ok](https://e.example/)"
	hasLink := func(tree []shared.MarkdownNode) bool { return strings.Contains(fmt.Sprint(tree), "https://e.example/") }
	few := strings.Repeat("[a](b \"\n", maxFailedLinks-1) + link
	if !hasLink(parse(few)) {
		t.Errorf("no link after %d that failed", maxFailedLinks-1)
	}
	many := strings.Repeat("[a](", 64<<10)
	if got := texts(parse(many + link)); got != many+"[ok](https://e.example/)" {
		t.Errorf("the text changed: %.200q", got)
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
			if got := texts(parse(src)); !strings.Contains(got, "x") {
				t.Errorf("the text is gone: %.200s", got)
			}
		})
	}
	for _, n := range []int{1, 3, markdownNesting} {
		if got := maxNesting(markdownParser.Parse(text.NewReader([]byte(strings.Repeat("> ", n) + "x")))); got != n {
			t.Errorf("%d quotes parsed %d deep", n, got)
		}
	}
	if got := texts(parse(strings.Repeat(">", markdownNesting+3) + " x")); got != ">>> x" {
		t.Errorf("the quote markers past the bound are not shown as text: %q", got)
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

// BenchmarkMarkdownNestedQuotes parses one reply of 40,000 nested quotes into its tree, as
// the store does; goldmark is goldmark's own parser, without the bound, for comparison
// (parsing only).
func BenchmarkMarkdownNestedQuotes(b *testing.B) { benchParse(b, strings.Repeat(">", 40_000)+" x") }

// BenchmarkMarkdownLinkOpeners parses a reply of 64 KiB of "[a](" on one line, whose every
// "](" fails to make a link, as BenchmarkMarkdownNestedQuotes does.
func BenchmarkMarkdownLinkOpeners(b *testing.B) { benchParse(b, strings.Repeat("[a](", 16<<10)) }

// BenchmarkMarkdownReply parses a streamed reply as large as a message grows
// (MaxTextBytes, 256 KiB) of what agents write: the most one store of its text costs.
func BenchmarkMarkdownReply(b *testing.B) {
	reply := "I created **hello.py** with a `greet` function.\n\n## What changed\n\n1. Added `greet(name)`\n2. Wired it into *main*\n\n" +
		"- [x] write it\n- [ ] document it\n\n| file | lines |\n|:--|--:|\n| hello.py | 12 |\n\n```python\ndef greet(name):\n    return name\n```\n\n" +
		"See [the docs](https://docs.python.org/3/tutorial/).\n\n"
	benchParse(b, strings.Repeat(reply, 256<<10/len(reply)))
}

func benchParse(b *testing.B, src string) {
	b.Run("goldmark", func(b *testing.B) {
		p := goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.TaskList)).Parser()
		for b.Loop() {
			p.Parse(text.NewReader([]byte(src)))
		}
	})
	b.Run("conch", func(b *testing.B) {
		for b.Loop() {
			Parse(src, shared.MaxMarkdownBytes)
		}
	})
}

// TestParseRanges: the tree of a reply repeats none of its text where the text is as
// written (a range of it, soft line breaks included), so a reply with its tree stays small;
// escapes, references, autolinks and tabs in code are texts.
func TestParseRanges(t *testing.T) {
	src := "Done: **server/api.go** now checks `limit`, and\nthe *tests* pass.\n\n" +
		"## Next\n\n- [ ] review the [docs](https://e.example/docs)\n- ~~old~~ step\n\n" +
		"| a | b |\n|--|--|\n| 1 | 2 |\n\n```go\nfunc f() {}\n```\n"
	tree, n := Parse(src, 1<<30)
	var literal []string
	var walk func(ns []shared.MarkdownNode)
	walk = func(ns []shared.MarkdownNode) {
		for _, n := range ns {
			if n.Text != "" {
				literal = append(literal, n.Text)
			}
			walk(n.Children)
		}
	}
	walk(tree)
	if len(literal) > 0 {
		t.Errorf("texts copied: %q", literal)
	}
	// 782 bytes; 1,180 with the text copied and long names, before.
	if n > 850 {
		t.Errorf("the tree is %d bytes of JSON for %d of text", n, len(src))
	}
	if got := texts(parse("a\nb")); got != "a\nb" {
		t.Errorf("soft break: %q", got)
	}
	for src, want := range map[string][]string{
		`a \* b &amp; c`:             {"a * b & c"},
		"- a\n\n\t\tx":               {"  x\n"}, // a tab in code, as spaces
		"x &lt; <https://e.example>": {"x < ", "https://e.example"},
	} {
		tree, _ := Parse(src, 1<<30)
		literal = nil
		walk(tree)
		if !slices.Equal(literal, want) {
			t.Errorf("%q: texts %q, want %q", src, literal, want)
		}
	}
}
