package shared

import (
	"fmt"
	"strings"
	"unicode"
)

// Visible returns s with every invisible format character (Unicode category Cf: the
// bidirectional controls U+202A–U+202E and U+2066–U+2069, zero-width spaces and joiners,
// the byte order mark, soft hyphens, tag characters) replaced by a visible marker such as
// ⟨U+202E⟩, so that text cannot display as something else: "x\u202e#gnp.tahc" shows as
// "x⟨U+202E⟩#gnp.tahc", not "xchat.png#". Everything else is kept. The UI applies it to
// commands, working directories, titles and command output; stored text is never changed.
func Visible(s string) string {
	if strings.IndexFunc(s, isFormat) < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for _, r := range s {
		if isFormat(r) {
			fmt.Fprintf(&b, "⟨U+%04X⟩", r)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isFormat(r rune) bool { return unicode.Is(unicode.Cf, r) }
