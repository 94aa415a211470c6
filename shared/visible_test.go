package shared

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestVisible(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"go test ./...", "go test ./..."},
		{"", ""},
		{"cp x \u202e#gnp.tahc", "cp x ⟨U+202E⟩#gnp.tahc"}, // shows as "cp x chat.png#" unmarked
		{"a\u202ab\u202bc\u202cd\u202de", "a⟨U+202A⟩b⟨U+202B⟩c⟨U+202C⟩d⟨U+202D⟩e"},
		{"\u2066x\u2067y\u2068z\u2069", "⟨U+2066⟩x⟨U+2067⟩y⟨U+2068⟩z⟨U+2069⟩"},
		{"rm\u200b -rf", "rm⟨U+200B⟩ -rf"},
		{"\ufeffBOM", "⟨U+FEFF⟩BOM"},
		{"tag\U000E0041", "tag⟨U+E0041⟩"},
		{"é ü 日本 ✓\ttab\nline", "é ü 日本 ✓\ttab\nline"}, // letters, marks, symbols, whitespace stay
	} {
		if got := Visible(tc.in); got != tc.want {
			t.Errorf("Visible(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzVisible: whatever the input, the result has no format character, text without one
// is unchanged, and marking twice marks nothing more.
func FuzzVisible(f *testing.F) {
	for _, seed := range []string{"", "ls", "x\u202e#gnp.tahc", "\u2066\u2069", "a\u200db", "\xff\xfe", "⟨U+202E⟩"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Visible(s)
		if strings.IndexFunc(got, func(r rune) bool { return unicode.Is(unicode.Cf, r) }) >= 0 {
			t.Fatalf("Visible(%q) = %q keeps a format character", s, got)
		}
		if utf8.ValidString(s) && strings.IndexFunc(s, isFormat) < 0 && got != s {
			t.Fatalf("Visible(%q) = %q changed text without format characters", s, got)
		}
		if again := Visible(got); again != got {
			t.Fatalf("Visible is not idempotent on %q", s)
		}
	})
}
