package term

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func fg(i int) Color { return paletteColor(i) }

// show writes lines compactly: spans as {text|fg/bg/attr}, lines separated by " / ".
func show(lines []Line) string {
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			b.WriteString(" / ")
		}
		for _, s := range l {
			if s.Style == (Style{}) {
				fmt.Fprintf(&b, "{%s}", s.Text)
			} else {
				fmt.Fprintf(&b, "{%s|%d/%d/%d}", s.Text, s.Style.FG, s.Style.BG, s.Style.Attr)
			}
		}
	}
	return b.String()
}

func TestRender(t *testing.T) {
	red, green := fg(1), fg(2)
	tests := []struct {
		name, in string
		want     []Line
	}{
		{"plain", "hello\nworld\n", []Line{{{"hello", Style{}}}, {{"world", Style{}}}}},
		{"no trailing newline", "a\nb", []Line{{{"a", Style{}}}, {{"b", Style{}}}}},
		{"empty lines kept", "a\n\nb\n", []Line{{{"a", Style{}}}, nil, {{"b", Style{}}}}},
		{"empty", "", []Line{nil}},
		{"16 colours and reset", "\x1b[31mred\x1b[0m plain", []Line{{{"red", Style{FG: red}}, {" plain", Style{}}}}},
		{"bright and background", "\x1b[92;101mx", []Line{{{"x", Style{FG: fg(10), BG: fg(9)}}}}},
		{"empty SGR resets", "\x1b[1;31mA\x1b[mB", []Line{{{"A", Style{FG: red, Attr: Bold}}, {"B", Style{}}}}},
		{"nested attributes", "\x1b[1mb\x1b[3mbi\x1b[4mbiu\x1b[22miu\x1b[23;24mplain",
			[]Line{{{"b", Style{Attr: Bold}}, {"bi", Style{Attr: Bold | Italic}}, {"biu", Style{Attr: Bold | Italic | Underline}},
				{"iu", Style{Attr: Italic | Underline}}, {"plain", Style{}}}}},
		{"dim, inverse, strike and their resets", "\x1b[2;7;9mx\x1b[27my\x1b[22;29mz",
			[]Line{{{"x", Style{Attr: Dim | Inverse | Strike}}, {"y", Style{Attr: Dim | Strike}}, {"z", Style{}}}}},
		{"default colours", "\x1b[31;42mx\x1b[39my\x1b[49mz", []Line{{{"x", Style{FG: red, BG: green}}, {"y", Style{BG: green}}, {"z", Style{}}}}},
		{"256 colours", "\x1b[38;5;208mo\x1b[48;5;17mb", []Line{{{"o", Style{FG: fg(208)}}, {"b", Style{FG: fg(208), BG: fg(17)}}}}},
		{"24-bit to the nearest palette entry", "\x1b[38;2;255;0;0mr\x1b[48;2;0;0;0mk", []Line{{{"r", Style{FG: fg(196)}}, {"k", Style{FG: fg(196), BG: fg(16)}}}}},
		{"colon forms", "\x1b[38:5:21ma\x1b[38:2::0:255:0;4mb\x1b[4:0mc", []Line{{{"a", Style{FG: fg(21)}}, {"b", Style{FG: fg(46), Attr: Underline}}, {"c", Style{FG: fg(46)}}}}},
		{"bad extended colours change nothing", "\x1b[38;5;300mx\x1b[38;2;1;2mx\x1b[38mx", []Line{{{"xxx", Style{}}}}},
		{"colour after an extended one", "\x1b[38;5;1;1mx", []Line{{{"x", Style{FG: fg(1), Attr: Bold}}}}},
		{"progress bar with carriage returns", "progress 33%\rprogress 66%\rprogress 99%\n", []Line{{{"progress 99%", Style{}}}}},
		{"shorter overwrite keeps the rest", "abcdef\rXY", []Line{{{"XYcdef", Style{}}}}},
		{"erase to end", "abcdef\rXY\x1b[K", []Line{{{"XY", Style{}}}}},
		{"erase whole line", "abcdef\x1b[2Kxy", []Line{{{"      xy", Style{}}}}},
		{"erase whole line after return", "abcdef\r\x1b[2Kxy", []Line{{{"xy", Style{}}}}},
		{"erase to start", "abcdef\x1b[3D\x1b[1Kx", []Line{{{"   xef", Style{}}}}},
		{"backspace", "abc\b\bX", []Line{{{"aXc", Style{}}}}},
		{"backspace at the start", "\b\bab", []Line{{{"ab", Style{}}}}},
		{"cursor up redraws a line", "one\ntwo\n\x1b[2A\x1b[2KONE\n", []Line{{{"ONE", Style{}}}, {{"two", Style{}}}}},
		{"cursor down stops at the last line", "a\x1b[5Bb", []Line{{{"ab", Style{}}}}},
		{"cursor forward pads", "a\x1b[3Cb", []Line{{{"a   b", Style{}}}}},
		{"column absolute", "abcdef\x1b[3GX", []Line{{{"abXdef", Style{}}}}},
		{"cursor previous line", "a\nb\x1b[FX", []Line{{{"X", Style{}}}, {{"b", Style{}}}}},
		{"private modes dropped", "\x1b[?25lhidden cursor\x1b[?25h", []Line{{{"hidden cursor", Style{}}}}},
		{"OSC title with BEL", "\x1b]0;title\x07text", []Line{{{"text", Style{}}}}},
		{"OSC 8 hyperlink with ST", "\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\", []Line{{{"link", Style{}}}}},
		{"unterminated OSC stops at the next ESC", "\x1b]0;t\x1b[31mx", []Line{{{"x", Style{FG: red}}}}},
		{"charset selection", "\x1b(Bab\x1b)0", []Line{{{"ab", Style{}}}}},
		{"two-byte escapes", "\x1b7a\x1b8b\x1b=", []Line{{{"ab", Style{}}}}},
		{"unknown CSI dropped", "a\x1b[2Jb\x1b[5;5Hc\x1b[0 q", []Line{{{"abc", Style{}}}}},
		{"broken CSI at the end", "a\x1b[31", []Line{{{"a", Style{}}}}},
		{"lone ESC at the end", "a\x1b", []Line{{{"a", Style{}}}}},
		{"CSI interrupted by a control", "a\x1b[3\nb", []Line{{{"a", Style{}}}, {{"b", Style{}}}}},
		{"other controls dropped", "a\x07b\x00c\x7fd\u0085e\u009bf", []Line{{{"abcdef", Style{}}}}},
		{"tabs kept", "a\tb", []Line{{{"a\tb", Style{}}}}},
		{"HTML-special characters are text", "<script>alert(1)</script> <img src=x onerror=alert(1)> & \"'", []Line{{{"<script>alert(1)</script> <img src=x onerror=alert(1)> & \"'", Style{}}}}},
		{"replacement characters and wide runes", "\ufffd日本\x1b[31m語", []Line{{{"\ufffd日本", Style{}}, {"語", Style{FG: red}}}}},
		{"style carries across lines", "\x1b[31ma\nb\x1b[0m", []Line{{{"a", Style{FG: red}}}, {{"b", Style{FG: red}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Render(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Render(%q)\n got %s\nwant %s", tt.in, show(got), show(tt.want))
			}
		})
	}
}

func TestNearest(t *testing.T) {
	for i := 16; i < 256; i++ {
		if got := Nearest(PaletteRGB(i)); got != i {
			t.Errorf("Nearest(PaletteRGB(%d)) = %d", i, got)
		}
	}
}

// Moving the cursor far and writing grows the result by at most the input's length.
func TestPaddingBounded(t *testing.T) {
	in := strings.Repeat("x", 1000) + "\n" + strings.Repeat("\x1b[A\x1b[65535Cx\x1b[B", 1000)
	cells := 0
	for _, l := range Render(in) {
		cells += utf8.RuneCountInString(l.Text())
	}
	if cells > 2*len(in) {
		t.Errorf("%d cells from %d bytes of input", cells, len(in))
	}
}

// Text without cursor movement comes out as it went in, minus its control sequences.
func FuzzRender(f *testing.F) {
	f.Add("plain\ntext\n", []byte{31, 0, 1})
	f.Add("<b>&amp;</b>\t\u00e9", []byte{38, 5, 208})
	f.Add("a\x1b[2J\x07b\x1b]0;t\x07", []byte{})
	f.Add("progress 1%\rprogress 2%\x1b[K\b", []byte{1, 4, 7, 9})
	f.Fuzz(func(t *testing.T, text string, codes []byte) {
		// Any input: no panic, and nothing but text reaches the lines.
		for _, l := range Render(text) {
			for _, s := range l {
				if !utf8.ValidString(s.Text) {
					t.Fatalf("invalid UTF-8 in %q", s.Text)
				}
				for _, r := range s.Text {
					if (r < 0x20 && r != '\t') || (r >= 0x7f && r < 0xa0) {
						t.Fatalf("control %U reached the output of %q", r, text)
					}
				}
			}
		}
		// Stored output is valid UTF-8 already; remove every control but newline and tab,
		// then weave SGR sequences in: the text must come out unchanged.
		clean := strings.Map(func(r rune) rune {
			if (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r < 0xa0) {
				return -1
			}
			return r
		}, strings.ToValidUTF8(text, "\ufffd"))
		var in strings.Builder
		runes := []rune(clean)
		for i, r := range runes {
			if i < len(codes) {
				fmt.Fprintf(&in, "\x1b[%d;%dm", codes[i], int(codes[i])*7%256)
			}
			in.WriteRune(r)
		}
		var got []string
		for _, l := range Render(in.String()) {
			got = append(got, l.Text())
		}
		want := strings.TrimSuffix(clean, "\n")
		if g := strings.Join(got, "\n"); g != want {
			t.Fatalf("text changed:\n in %q\ngot %q\nwant %q", in.String(), g, want)
		}
	})
}

// Sample is a coloured build log of about 256 KiB (the kept bound) with progress lines.
func Sample() string {
	var b strings.Builder
	for i := 0; b.Len() < 256<<10; i++ {
		switch i % 4 {
		case 0:
			fmt.Fprintf(&b, "\x1b[32mok\x1b[0m  \tconch/pkg%d\t0.%03ds\n", i, i%1000)
		case 1:
			fmt.Fprintf(&b, "\x1b[1;31mFAIL\x1b[0m pkg%d: <expected> & \"got\" \x1b[38;5;208mwarn\x1b[0m\n", i)
		case 2:
			fmt.Fprintf(&b, "progress 10%%\rprogress 50%%\rprogress 100%%\x1b[K\n")
		default:
			fmt.Fprintf(&b, "\x1b[38;2;10;200;30mtrue colour\x1b[0m plain text line number %d here\n", i)
		}
	}
	return b.String()
}

func BenchmarkRender(b *testing.B) {
	s := Sample()
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		Render(s)
	}
}
