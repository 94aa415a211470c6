package ui

import (
	"net/url"
	"testing"

	"conch/shared"
)

// A link to an output line carries the command, stream, position and a word found (any
// characters in it), and reads back as the URL decodes its fragment.
func TestLineLinkReadsBack(t *testing.T) {
	r := shared.SearchResult{SessionID: "s 1", MessageID: "m1", Output: &shared.OutputHit{Stream: "stderr", Offset: -15},
		Snippet: []shared.SnippetPart{{Text: "at "}, {Text: "disk.full #2", Hit: true}}}
	u, err := url.Parse(lineLink(r))
	if err != nil {
		t.Fatal(err)
	}
	got, ok := parseLine(u.Fragment)
	if want := (outputLine{message: "m1", stream: "stderr", offset: -15, word: "disk.full #2"}); !ok || got != want || u.Path != "/sessions/s 1" {
		t.Errorf("%s read back as %+v (%v), want %+v", lineLink(r), got, ok, want)
	}
	for _, f := range []string{"message-m1", "line-m1.stdout.x.w", "line-m1.stdout"} {
		if _, ok := parseLine(f); ok {
			t.Errorf("%q read as a line", f)
		}
	}
}

// A position in a stream is a line of its kept text, which ends at the stream's total (or,
// for output stored without positions, at 0), whatever the head not kept.
func TestLineIndex(t *testing.T) {
	text := "a\nbb\nccc\n"
	for _, c := range []struct {
		total, at int64
		want      int
	}{
		{9, 0, 0}, {9, 2, 1}, {9, 5, 2}, {9, 8, 2}, // kept whole
		{109, 105, 2}, {109, 102, 1}, // the first 100 bytes not kept
		{109, 3, 0}, {109, 500, 3}, // before the kept text, past its end
		{9, -4, 2}, {9, -9, 0}, // without positions
	} {
		if got := lineIndex(text, c.total, c.at); got != c.want {
			t.Errorf("lineIndex(total %d, at %d) = %d, want %d", c.total, c.at, got, c.want)
		}
	}
}
