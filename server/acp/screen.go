package acp

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/vt"
)

// A console's screen: a headless terminal fed the PTY's output, from which a watcher that
// joins, or that fell behind, is redrawn (docs/API.md, "The terminal"): the screen and its
// latest lines of scrollback as ANSI, at the PTY's size, rather than raw bytes written for
// whatever width the terminal had then.
//
// The model costs tens of microseconds for each line that scrolls (it moves every cell of
// the screen), far slower than a flood comes (BenchmarkScreen), so it is fed by a goroutine
// of its own (Console.keep) from the console's kept output, never by the PTY's reader, and
// only while it keeps up: once it fell further behind than the kept output, it is made
// again, when someone needs the screen, from the last lines of that output (lastLines).

// scrollbackLines is how many lines that scrolled off the screen a redraw carries.
const scrollbackLines = 200

// screenModel is a headless terminal, used by one goroutine at a time.
type screenModel struct {
	vt *vt.Emulator
}

func newScreenModel(cols, rows int) *screenModel {
	e := vt.NewEmulator(cols, rows)
	e.SetScrollbackSize(scrollbackLines)
	// The emulator answers queries (a cursor position report, a device attribute) on a pipe
	// that blocks it until read: nobody types those answers, so they are read and dropped.
	go func() { _, _ = io.Copy(io.Discard, e) }()
	return &screenModel{vt: e}
}

func (m *screenModel) write(p []byte) { _, _ = m.vt.Write(p) }

func (m *screenModel) size() (int, int) { return m.vt.Width(), m.vt.Height() }

// resize sets the model's size. Narrower, the lines of the main screen are wrapped again at
// the new width, as a watcher's terminal (xterm.js) wraps its own, rather than cut: the
// model is made again from its scrollback and its rows down to the cursor's (a shell's
// prompt), whose place it keeps. An application on the alternate screen draws itself
// again at the new size.
func (m *screenModel) resize(cols, rows int) {
	switch was, high := m.size(); {
	case was == cols && high == rows:
		return
	case cols >= was || m.vt.IsAltScreen():
		m.vt.Resize(cols, rows)
		return
	}
	var b bytes.Buffer
	for _, l := range m.scrollback() {
		b.WriteString(l.Render())
		b.WriteString("\r\n")
	}
	at := m.vt.CursorPosition()
	for y := range at.Y {
		b.WriteString(m.row(y).Render())
		b.WriteString("\r\n")
	}
	line := m.row(at.Y)
	before := line[:at.X]
	b.WriteString(before.Render())
	drawn := len(before)
	for drawn > 0 && before[drawn-1].Equal(&uv.EmptyCell) {
		drawn--
	}
	b.WriteString(strings.Repeat(" ", at.X-drawn)) // the blanks before the cursor, which Render leaves out
	b.WriteString("\x1b7")                         // the cursor's place
	b.WriteString(line[at.X:].Render())
	b.WriteString("\x1b8")
	if m.vt.CursorHidden() {
		b.WriteString("\x1b[?25l")
	}
	m.close()
	*m = *newScreenModel(cols, rows)
	m.write(b.Bytes())
}

// scrollback is the lines that scrolled off the main screen, oldest first.
func (m *screenModel) scrollback() []uv.Line {
	if sb := m.vt.Scrollback(); sb != nil {
		return sb.Lines()
	}
	return nil
}

// row is a copy of the screen's row y.
func (m *screenModel) row(y int) uv.Line {
	cols, _ := m.size()
	line := make(uv.Line, cols)
	for x := range cols {
		line[x] = *m.vt.CellAt(x, y)
	}
	return line
}

// close ends the goroutine reading the emulator's answers: it closes the pipe they go
// through rather than calling the emulator's Close, which sets a flag that its Read reads
// unguarded.
func (m *screenModel) close() {
	if pipe, ok := m.vt.InputPipe().(io.Closer); ok {
		_ = pipe.Close()
	}
}

// redraw is what draws the model's screen on a terminal of its size: a reset (which clears
// the terminal's own scrollback too), the scrollback lines, the screen's rows, the cursor.
// An application on the alternate screen (an editor) is drawn there, without scrollback.
func (m *screenModel) redraw() []byte {
	var b bytes.Buffer
	b.WriteString("\x1bc")
	_, rows := m.size()
	if m.vt.IsAltScreen() {
		b.WriteString("\x1b[?1049h\x1b[H")
	} else {
		for _, l := range m.scrollback() {
			b.WriteString(l.Render())
			b.WriteString("\r\n")
		}
	}
	for y := range rows {
		b.WriteString(m.row(y).Render())
		if y < rows-1 {
			b.WriteString("\r\n")
		}
	}
	at := m.vt.CursorPosition()
	fmt.Fprintf(&b, "\x1b[%d;%dH", at.Y+1, at.X+1)
	if m.vt.CursorHidden() {
		b.WriteString("\x1b[?25l")
	}
	return b.Bytes()
}

// lastLines is the end of out that holds its last n lines: where a screen is made again
// from once the model was dropped. Plain output draws the same screen from them; what a
// program drew with cursor moves before them is lost, as it is from a terminal whose
// scrollback it passed.
func lastLines(out []byte, n int) []byte {
	end := len(out)
	for range n {
		i := bytes.LastIndexByte(out[:end], '\n')
		if i < 0 {
			return out
		}
		end = i
	}
	return out[end+1:]
}
