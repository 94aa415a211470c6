package store

import (
	"fmt"
	"unicode/utf8"

	"conch/shared"
)

// An agent's text is stored bounded, like its output: one message sent as 30 MB
// would otherwise be a 30 MB row, list page and session page. The bounds are applied here,
// in the one write path of message rows (insertMessage, UpdateMessage), to the content and
// to every string of the metadata (titles, commands, permission options, plan entries,
// diff paths).

// MaxTextBytes bounds each text of a message row: 256 KiB, the bound of an output stream,
// the largest text the chat shows. The recorder starts a new message before its text
// passes it, so streamed text is split, never cut.
const MaxTextBytes = shared.OutputLimit

const (
	// maxMessageBytes bounds all the texts of one row together, so that a row stays well
	// inside a list page (shared.MaxPageBytes, 4 MiB) however many fields an agent fills.
	// Their markdown trees add at most shared.MaxMarkdownBytes of JSON (markdown.go).
	maxMessageBytes = 1 << 20
	// itemCost is what each option or plan entry counts besides its strings (its JSON),
	// so that a million empty entries are bounded too.
	itemCost = 64
)

// cutMarker ends a content cut to MaxTextBytes, so that a person sees it was cut.
var cutMarker = fmt.Sprintf("\n\n[Conch kept the first %d KiB of this message.]", MaxTextBytes>>10)

// bounded returns content made storable and md with every text within the bounds; when
// something was cut, md says so (TextTruncated) and a cut content ends with cutMarker.
// It works on copies; the caller's values are never changed. Bounded values stay as they
// are, so a row is never cut twice.
func bounded(content string, md *shared.Metadata) (string, *shared.Metadata) {
	b := budget{left: maxMessageBytes}
	content = storable(content)
	if len(content) > MaxTextBytes {
		content = CutText(content, MaxTextBytes-len(cutMarker)) + cutMarker
		b.cut = true
	}
	b.left -= len(content)
	if md == nil {
		if b.cut {
			md = &shared.Metadata{TextTruncated: true}
		}
		return content, md
	}
	c := *md
	for _, s := range []*string{&c.ToolCallID, &c.Title, &c.Kind, &c.SelectedOptionID} {
		b.text(s)
	}
	if n := c.Normalized; n != nil {
		cn := *n
		if n.ShellExec != nil {
			se := *n.ShellExec
			b.text(&se.Command)
			b.text(&se.WorkDir)
			cn.ShellExec = &se
		}
		if n.ToolContent != nil {
			tc := *n.ToolContent
			tc.Items = boundItems(&b, tc.Items, func(i *shared.ToolContentItemSummary) []*string { return []*string{&i.Type, &i.Path} })
			cn.ToolContent = &tc
		}
		c.Normalized = &cn
	}
	c.Options = boundItems(&b, c.Options, func(o *shared.PermissionOption) []*string { return []*string{&o.OptionID, &o.Name, &o.Kind} })
	c.Entries = boundItems(&b, c.Entries, func(e *shared.PlanEntry) []*string { return []*string{&e.Content, &e.Priority, &e.Status} })
	c.TextTruncated = c.TextTruncated || b.cut
	return content, &c
}

// budget is what is left of maxMessageBytes, and whether anything was cut.
type budget struct {
	left int
	cut  bool
}

// text cuts *s to MaxTextBytes and to what is left, and counts it.
func (b *budget) text(s *string) {
	if limit := max(0, min(MaxTextBytes, b.left)); len(*s) > limit {
		*s = CutText(*s, limit)
		b.cut = true
	}
	b.left -= len(*s)
}

// boundItems returns a copy of items with their strings bounded, without the items that
// no longer fit.
func boundItems[T any](b *budget, items []T, texts func(*T) []*string) []T {
	if items == nil {
		return nil
	}
	out := make([]T, 0, len(items))
	for _, it := range items {
		if b.left < itemCost {
			b.cut = true
			break
		}
		b.left -= itemCost
		for _, s := range texts(&it) {
			b.text(s)
		}
		out = append(out, it)
	}
	return out
}

// CutText returns the longest start of s of at most n bytes that splits no character.
func CutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
