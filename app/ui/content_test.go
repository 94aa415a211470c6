package ui

import (
	"regexp"
	"strings"
	"testing"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/shared"
)

func TestContentLabel(t *testing.T) {
	n := func(v int) *int { return &v }
	for _, tt := range []struct {
		s    shared.ToolContentItemSummary
		want string
	}{
		{shared.ToolContentItemSummary{Type: "diff", Path: "/repo/main.go", OldBytes: n(10), NewBytes: n(20), AddedLines: n(3), RemovedLines: n(1)}, "Diff · /repo/main.go · +3 −1"},
		{shared.ToolContentItemSummary{Type: "diff", Path: "big.bin", OldBytes: n(0), NewBytes: n(5 << 20), Omitted: true}, "Diff · big.bin · too large to keep (5 MB)"},
		{shared.ToolContentItemSummary{Type: "text", Bytes: n(812)}, "Text · 812 B"},
	} {
		if got := contentLabel(tt.s.Path, tt.s); got != tt.want {
			t.Errorf("label %q, want %q", got, tt.want)
		}
	}
}

// The diff view numbers the old and new lines of the server's hunks, marks added and
// removed ones, and treats the texts as text.
func TestDiffView(t *testing.T) {
	// What server/diff gives for "one two three <b>four</b>" to "one 2 three <b>four</b> five".
	hunks := []shared.DiffHunk{{OldLine: 1, NewLine: 1, Lines: []shared.DiffLine{
		{Kind: " ", Old: 1, New: 1, Text: "one"}, {Kind: "-", Old: 2, Text: "two"}, {Kind: "+", New: 2, Text: "2"},
		{Kind: " ", Old: 3, New: 3, Text: "three"}, {Kind: " ", Old: 4, New: 4, Text: "<b>four</b>"}, {Kind: "+", New: 5, Text: "five"},
	}}}
	// Without the indentation HTMLString adds between elements.
	html := regexp.MustCompile(`>\s+<`).ReplaceAllString(app.HTMLString(diffView(hunks, false, false, nil)), "><")
	for _, want := range []string{
		"@@ −1 +1 @@",
		`<span class="ln">2</span><span class="ln"></span><span class="dt">−two</span>`,
		`<span class="ln"></span><span class="ln">2</span><span class="dt">+2</span>`,
		`<span class="ln">3</span><span class="ln">3</span><span class="dt"> three</span>`,
		`<span class="ln"></span><span class="ln">5</span><span class="dt">+five</span>`,
		"&lt;b&gt;four&lt;/b&gt;",
		`<div class="diff ln3">`, // the number columns' width by class: the CSP refuses style attributes
	} {
		if !strings.Contains(html, want) {
			t.Errorf("missing %q in\n%s", want, html)
		}
	}
	if strings.Contains(html, "style=") || strings.Contains(html, "is not shown") {
		t.Errorf("a style attribute, which the CSP refuses, or a note of lines left out:\n%s", html)
	}
	for _, tc := range []struct {
		same bool
		want string
	}{{true, "No change."}, {false, "This diff cannot be shown."}} {
		if got := app.HTMLString(diffView(nil, false, tc.same, nil)); !strings.Contains(got, tc.want) {
			t.Errorf("no hunks, same %v: %s", tc.same, got)
		}
	}
	if got := app.HTMLString(diffView(hunks, true, false, nil)); !strings.Contains(got, "is not shown: it is over 2000 lines") {
		t.Errorf("hunks the server cut say nothing of it: %s", got)
	}
}

// Paths under the session's directory are shown relative to it, in a tool's title and its
// diffs' labels; the full path is the title (shown on hover).
func TestToolCallRowRelativePaths(t *testing.T) {
	n := func(v int) *int { return &v }
	cwd := "/home/me/.conch/sessions/0192-abcd"
	m := shared.Message{ID: "t1", Type: shared.TypeToolCall, Metadata: &shared.Metadata{Title: "Write " + cwd + "/src/hello.py", Status: shared.StatusCompleted,
		Normalized: &shared.Normalized{Kind: shared.NormalizedToolContent, ToolContent: &shared.ToolContentSummary{Items: []shared.ToolContentItemSummary{
			{Type: "diff", Path: cwd + "/src/hello.py", OldBytes: n(0), NewBytes: n(2), AddedLines: n(1), RemovedLines: n(0)},
			{Type: "diff", Path: "/etc/hosts", OldBytes: n(0), NewBytes: n(2), AddedLines: n(1), RemovedLines: n(0)},
		}}}}}
	html := app.HTMLString(renderMessage("s1", cwd, m))
	checkHTML(t, html, []string{
		`title="Write ` + cwd + `/src/hello.py"`, `>Write src/hello.py</span>`, // go-app orders attributes as it likes
		"</span>\n      Diff · src/hello.py · +1 −0\n",
		`title="Diff · ` + cwd + `/src/hello.py · +1 −0"`, `aria-label="Show tool content: Diff · src/hello.py · +1 −0"`,
		"Diff · /etc/hosts · +1 −0",
	}, []string{">Write " + cwd, "      Diff · " + cwd})
}

// A tool call with content shows one collapsed disclosure per item, labelled from the
// summary; an omitted diff has no button.
func TestToolCallRowCollapsed(t *testing.T) {
	n := func(v int) *int { return &v }
	m := shared.Message{ID: "t1", Type: shared.TypeToolCall, Content: "Edit", Metadata: &shared.Metadata{Title: "Edit main.go", Status: shared.StatusCompleted,
		Normalized: &shared.Normalized{Kind: shared.NormalizedToolContent, ToolContent: &shared.ToolContentSummary{Items: []shared.ToolContentItemSummary{
			{Type: "diff", Path: "main.go", OldBytes: n(1), NewBytes: n(2), AddedLines: n(1), RemovedLines: n(0)},
			{Type: "diff", Path: "huge.go", OldBytes: n(0), NewBytes: n(9 << 20), Omitted: true},
		}}}}}
	html := app.HTMLString(renderMessage("s1", "", m))
	for _, want := range []string{`data-message-id="t1"`, "Edit main.go", `aria-expanded="false"`, `aria-label="Show tool content: Diff · main.go · +1 −0"`,
		"Diff · main.go · +1 −0", "Diff · huge.go · too large to keep (9 MB)"} {
		if !strings.Contains(html, want) {
			t.Errorf("missing %q in\n%s", want, html)
		}
	}
	if strings.Count(html, "<button") != 1 || strings.Contains(html, "transcript") {
		t.Errorf("want one collapsed button:\n%s", html)
	}
}
