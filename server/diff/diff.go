// Package diff works out the hunks of a change that the page draws (shared.DiffHunk), on
// the server: go-udiff and what it pulls in (regexp, log) stay out of app.wasm.
package diff

import (
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"

	"conch/shared"
)

// Hunks is the unified diff (three lines of context) from oldText to newText (nil: no
// file, as empty), at most shared.MaxDiffLines lines of it; truncated says lines were left
// out. No hunks: no change, or none could be worked out.
func Hunks(oldText, newText *string) (hunks []shared.DiffHunk, truncated bool) {
	var before, after string
	if oldText != nil {
		before = *oldText
	}
	if newText != nil {
		after = *newText
	}
	u, err := udiff.ToUnifiedDiff("a", "b", before, udiff.Lines(before, after), 3)
	if err != nil {
		return nil, false
	}
	shown := 0
	for _, h := range u.Hunks {
		dh := shared.DiffHunk{OldLine: h.FromLine, NewLine: h.ToLine}
		oldN, newN := h.FromLine, h.ToLine
		for _, l := range h.Lines {
			if shown == shared.MaxDiffLines {
				if len(dh.Lines) > 0 {
					hunks = append(hunks, dh)
				}
				return hunks, true
			}
			shown++
			line := shared.DiffLine{Text: strings.TrimSuffix(l.Content, "\n")}
			switch l.Kind {
			case udiff.Delete:
				line.Kind, line.Old = shared.DiffRemoved, oldN
				oldN++
			case udiff.Insert:
				line.Kind, line.New = shared.DiffAdded, newN
				newN++
			default:
				line.Kind, line.Old, line.New = shared.DiffSame, oldN, newN
				oldN++
				newN++
			}
			dh.Lines = append(dh.Lines, line)
		}
		hunks = append(hunks, dh)
	}
	return hunks, false
}
