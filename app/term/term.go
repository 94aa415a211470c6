// Package term turns the text a command wrote to a terminal into styled lines, as a
// terminal would have shown it: SGR colours and attributes become styles, carriage
// returns, backspaces, cursor moves on the line and erases are applied (so a progress bar
// shows its last state), and every other control sequence is dropped. Its output is text
// and styles only, never markup: the caller decides how to draw a Span.
//
// It is pure (no DOM, no I/O), so it is table-tested and fuzzed on the host. Why it is
// not terminal-to-html: docs/ARCHITECTURE.md, "A renderer".
package term

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Color is a palette colour: 0 is the default, 1..256 are the xterm 256-colour palette
// entries 0..255 plus one. 24-bit colours are approximated by the nearest palette entry,
// so every colour can be drawn with a class (no inline styles).
type Color uint16

// Index returns the palette entry (0..255) and whether the colour is not the default.
func (c Color) Index() (int, bool) { return int(c) - 1, c != 0 }

func paletteColor(i int) Color { return Color(i + 1) }

// Attr is a set of text attributes.
type Attr uint8

const (
	Bold Attr = 1 << iota
	Dim
	Italic
	Underline
	Inverse
	Strike
)

// Style is how a run of text is drawn.
type Style struct {
	FG, BG Color
	Attr   Attr
}

// Span is a run of text in one style.
type Span struct {
	Text  string
	Style Style
}

// Line is one line of output as spans; a line with no text has no spans.
type Line []Span

// Text returns the line's text without styles.
func (l Line) Text() string {
	if len(l) == 1 {
		return l[0].Text
	}
	var b strings.Builder
	for _, s := range l {
		b.WriteString(s.Text)
	}
	return b.String()
}

type cell struct {
	r rune
	s Style
}

// screen is an endless terminal: lines are never scrolled away, the cursor moves on the
// current line and up and down existing lines.
type screen struct {
	lines    [][]cell
	row, col int
	style    Style
	// pad bounds the blank cells made by writing past the end of a line (after a cursor
	// move), so no sequence of moves grows the result beyond twice the input.
	pad int
}

// Render interprets s. A trailing newline ends the last line rather than starting an
// empty one.
func Render(s string) []Line {
	sc := &screen{lines: make([][]cell, 1, strings.Count(s, "\n")+1), pad: len(s)}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == 0x1b:
			i = sc.escape(s, i+1)
			continue
		case c == '\n':
			sc.newline()
		case c == '\r':
			sc.col = 0
		case c == '\b':
			sc.col = max(sc.col-1, 0)
		case c == '\t':
			sc.put('\t')
		case c < 0x20 || c == 0x7f:
			// other C0 controls (bell, ...) show nothing
		case c < utf8.RuneSelf:
			sc.put(rune(c))
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			if r >= 0x80 && r < 0xa0 {
				r = -1 // C1 controls show nothing
			}
			if r >= 0 {
				sc.put(r)
			}
			i += n
			continue
		}
		i++
	}
	if n := len(sc.lines); n > 1 && len(sc.lines[n-1]) == 0 {
		sc.lines = sc.lines[:n-1]
	}
	return sc.spans()
}

func (sc *screen) newline() {
	sc.row++
	sc.col = 0
	if sc.row == len(sc.lines) {
		// Lines of a log are alike: room for one like the last saves growing it cell by cell.
		sc.lines = append(sc.lines, make([]cell, 0, len(sc.lines[sc.row-1])+8))
	}
}

// put writes r at the cursor, overwriting what is there. A cursor past the end of the
// line is padded with blanks while the padding budget lasts, then pulled back.
func (sc *screen) put(r rune) {
	line := sc.lines[sc.row]
	if gap := sc.col - len(line); gap > 0 {
		gap = min(gap, sc.pad)
		sc.pad -= gap
		for ; gap > 0; gap-- {
			line = append(line, cell{' ', Style{}})
		}
		sc.col = len(line)
	}
	if sc.col == len(line) {
		line = append(line, cell{r, sc.style})
	} else {
		line[sc.col] = cell{r, sc.style}
	}
	sc.lines[sc.row] = line
	sc.col++
}

// escape consumes the sequence after an ESC at s[i-1] and returns the index after it.
func (sc *screen) escape(s string, i int) int {
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '[':
		return sc.csi(s, i+1)
	case ']', 'P', '_', '^', 'X':
		return skipString(s, i+1)
	}
	// nF sequences (ESC, intermediates, final: charset selection) and two-byte ones (ESC 7).
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
		i++
	}
	if i < len(s) && s[i] >= 0x30 && s[i] <= 0x7e {
		i++
	}
	return i
}

// skipString skips an OSC, DCS, APC, PM or SOS body up to its terminator (BEL or ESC \).
func skipString(s string, i int) int {
	for ; i < len(s); i++ {
		switch s[i] {
		case 0x07:
			return i + 1
		case 0x1b:
			if i+1 < len(s) && s[i+1] == '\\' {
				return i + 2
			}
			return i // a new sequence starts: the string was not terminated
		}
	}
	return i
}

// csi applies a control sequence whose parameters start at s[i].
func (sc *screen) csi(s string, i int) int {
	start := i
	for i < len(s) && s[i] >= 0x30 && s[i] <= 0x3f {
		i++
	}
	params := s[start:i]
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
		i++
	}
	if i >= len(s) {
		return i
	}
	final := s[i]
	if final < 0x40 || final > 0x7e {
		return i // malformed: drop what was read, go on with this byte as text
	}
	i++
	if params != "" && params[0] >= '<' { // private parameters (ESC[?25l): modes, ignored
		return i
	}
	n := max(firstParam(params), 1)
	switch final {
	case 'm':
		sc.sgr(params)
	case 'K':
		sc.eraseLine(firstParam(params))
	case 'C':
		sc.col = min(sc.col+n, maxCol)
	case 'D':
		sc.col = max(sc.col-n, 0)
	case 'G':
		sc.col = n - 1
	case 'A', 'F':
		sc.row = max(sc.row-n, 0)
		if final == 'F' {
			sc.col = 0
		}
	case 'B', 'E':
		// The screen's bottom is the last line written: moving down never adds lines.
		sc.row = min(sc.row+n, len(sc.lines)-1)
		if final == 'E' {
			sc.col = 0
		}
	}
	return i
}

// maxCol bounds the cursor column; the padding budget bounds what is written.
const maxCol = 1 << 30

// firstParam is the first numeric parameter, 0 when absent or not a number.
func firstParam(params string) int {
	p, _, _ := strings.Cut(params, ";")
	p, _, _ = strings.Cut(p, ":")
	v, err := strconv.Atoi(p)
	if err != nil || v < 0 {
		return 0
	}
	return min(v, 1<<16)
}

func (sc *screen) eraseLine(mode int) {
	line := sc.lines[sc.row]
	switch mode {
	case 0: // cursor to end
		if sc.col < len(line) {
			sc.lines[sc.row] = line[:sc.col]
		}
	case 1: // start to cursor
		for j := 0; j <= sc.col && j < len(line); j++ {
			line[j] = cell{' ', Style{}}
		}
	case 2: // whole line; the cursor stays
		sc.lines[sc.row] = line[:0]
	}
}

type attrChange struct{ set, clear Attr }

// sgrAttrs are the SGR codes that set or clear attributes. Blink, conceal and fonts are
// not drawn.
var sgrAttrs = map[int]attrChange{
	1: {set: Bold}, 2: {set: Dim}, 3: {set: Italic}, 4: {set: Underline}, 7: {set: Inverse}, 9: {set: Strike},
	21: {set: Underline}, // double underline, drawn single
	22: {clear: Bold | Dim}, 23: {clear: Italic}, 24: {clear: Underline}, 27: {clear: Inverse}, 29: {clear: Strike},
}

// sgr applies Select Graphic Rendition parameters, ";"-separated, each with optional
// ":"-separated sub-parameters (ITU T.416 colours: 38:2::r:g:b).
func (sc *screen) sgr(params string) {
	if params == "" {
		sc.style = Style{}
		return
	}
	fields := strings.Split(params, ";")
	for k := 0; k < len(fields); k++ {
		sub := strings.Split(fields[k], ":")
		code := atoi(sub[0])
		switch {
		case code == 0:
			sc.style = Style{}
		case code == 4 && len(sub) > 1 && atoi(sub[1]) == 0: // 4:0, no underline
			sc.style.Attr &^= Underline
		case sgrAttrs[code] != (attrChange{}):
			a := sgrAttrs[code]
			sc.style.Attr = sc.style.Attr&^a.clear | a.set
		case code >= 30 && code <= 37:
			sc.style.FG = paletteColor(code - 30)
		case code == 39:
			sc.style.FG = 0
		case code >= 40 && code <= 47:
			sc.style.BG = paletteColor(code - 40)
		case code == 49:
			sc.style.BG = 0
		case code >= 90 && code <= 97:
			sc.style.FG = paletteColor(code - 90 + 8)
		case code >= 100 && code <= 107:
			sc.style.BG = paletteColor(code - 100 + 8)
		case code == 38 || code == 48:
			var c Color
			var ok bool
			if len(sub) > 1 {
				c, ok = extendedColor(sub[1:], true)
			} else {
				var used int
				c, ok, used = extendedColorFields(fields[k+1:])
				k += used
			}
			if ok && code == 38 {
				sc.style.FG = c
			} else if ok {
				sc.style.BG = c
			}
		}
	}
}

// extendedColorFields reads "5;n" or "2;r;g;b" after a 38/48 and says how many fields it used.
func extendedColorFields(rest []string) (Color, bool, int) {
	if len(rest) == 0 {
		return 0, false, 0
	}
	switch atoi(rest[0]) {
	case 5:
		if len(rest) < 2 {
			return 0, false, len(rest)
		}
		c, ok := extendedColor(rest[:2], false)
		return c, ok, 2
	case 2:
		if len(rest) < 4 {
			return 0, false, len(rest)
		}
		c, ok := extendedColor(rest[:4], false)
		return c, ok, 4
	}
	return 0, false, 1
}

// extendedColor reads ["5", n] or ["2", (colour space id,) r, g, b]. With colon
// sub-parameters the colour space id may be present (38:2::r:g:b or 38:2:0:r:g:b).
func extendedColor(p []string, colons bool) (Color, bool) {
	switch atoi(p[0]) {
	case 5:
		if len(p) < 2 {
			return 0, false
		}
		n := atoi(p[1])
		if n < 0 || n > 255 {
			return 0, false
		}
		return paletteColor(n), true
	case 2:
		rgb := p[1:]
		if colons && len(rgb) >= 4 {
			rgb = rgb[1:]
		}
		if len(rgb) < 3 {
			return 0, false
		}
		r, g, b := atoi(rgb[0]), atoi(rgb[1]), atoi(rgb[2])
		if r < 0 || r > 255 || g < 0 || g > 255 || b < 0 || b > 255 {
			return 0, false
		}
		return paletteColor(Nearest(uint8(r), uint8(g), uint8(b))), true
	}
	return 0, false
}

// atoi reads a parameter; empty is 0, anything unreadable is -1.
func atoi(s string) int {
	if s == "" {
		return 0
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 {
		return -1
	}
	return v
}

// cubeLevels are the channel values of the xterm 6×6×6 colour cube (entries 16..231).
var cubeLevels = [6]int{0, 0x5f, 0x87, 0xaf, 0xd7, 0xff}

// PaletteRGB returns the colour of palette entry i in 16..255 (0..15 are the theme's).
func PaletteRGB(i int) (r, g, b uint8) {
	if i >= 232 {
		v := uint8(8 + 10*(i-232))
		return v, v, v
	}
	i -= 16
	return uint8(cubeLevels[i/36]), uint8(cubeLevels[i/6%6]), uint8(cubeLevels[i%6])
}

// Nearest returns the palette entry in 16..255 closest to r, g, b (the 16 theme colours
// are left out: their values change with the theme).
func Nearest(r, g, b uint8) int {
	best, bestDist := 16, -1
	for i := 16; i < 256; i++ {
		pr, pg, pb := PaletteRGB(i)
		dr, dg, db := int(pr)-int(r), int(pg)-int(g), int(pb)-int(b)
		if d := dr*dr + dg*dg + db*db; bestDist < 0 || d < bestDist {
			best, bestDist = i, d
		}
	}
	return best
}

// spans merges each line's cells into runs of one style.
func (sc *screen) spans() []Line {
	out := make([]Line, len(sc.lines))
	var b strings.Builder
	for i, cells := range sc.lines {
		var line Line
		for j := 0; j < len(cells); {
			st := cells[j].s
			end := j + 1
			for end < len(cells) && cells[end].s == st {
				end++
			}
			b.Reset()
			b.Grow(end - j) // exact for ASCII
			for ; j < end; j++ {
				b.WriteRune(cells[j].r)
			}
			line = append(line, Span{Text: b.String(), Style: st})
		}
		out[i] = line
	}
	return out
}
