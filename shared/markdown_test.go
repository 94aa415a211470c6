package shared

import (
	"reflect"
	"testing"
)

// TestVisibleMarkdown: a reply's tree is of its text as the page shows it: where marking
// an invisible character changes the text, its ranges become their texts, marked; where
// it changes nothing, the ranges stay.
func TestVisibleMarkdown(t *testing.T) {
	para := func(c ...MarkdownNode) []MarkdownNode { return []MarkdownNode{{Kind: MarkdownParagraph, Children: c}} }
	strong := func(c ...MarkdownNode) MarkdownNode { return MarkdownNode{Kind: MarkdownStrong, Children: c} }
	tree := para(MarkdownNode{Kind: MarkdownText, Len: 2}, strong(MarkdownNode{Kind: MarkdownText, Skip: 2, Len: 5}), MarkdownNode{Kind: MarkdownText, Text: "&"})
	m := Message{Content: "a **b\u202ec** d", Metadata: &Metadata{Markdown: tree,
		Entries: []PlanEntry{{Content: "**x**", Markdown: para(strong(MarkdownNode{Kind: MarkdownText, Skip: 2, Len: 1}))}}}}
	v := m.Visible()
	want := para(MarkdownNode{Kind: MarkdownText, Text: "a "}, strong(MarkdownNode{Kind: MarkdownText, Text: "b⟨U+202E⟩c"}), MarkdownNode{Kind: MarkdownText, Text: "&"})
	if !reflect.DeepEqual(v.Metadata.Markdown, want) || v.Content != "a **b⟨U+202E⟩c** d" {
		t.Errorf("marked: %q %+v", v.Content, v.Metadata.Markdown)
	}
	if e := v.Metadata.Entries[0]; !reflect.DeepEqual(e.Markdown, m.Metadata.Entries[0].Markdown) {
		t.Errorf("an entry with nothing to mark: %+v", e.Markdown)
	}
	if !reflect.DeepEqual(m.Metadata.Markdown, tree) {
		t.Errorf("the message's tree changed: %+v", m.Metadata.Markdown)
	}
}
