package acp

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	uv "github.com/charmbracelet/ultraviolet"
)

// sameScreen fails unless two models show the same cells, scrollback (none on the
// alternate screen, which a redraw draws without it) and cursor.
func sameScreen(t *testing.T, got, want *screenModel) {
	t.Helper()
	if gc, gr := got.size(); gc != want.vt.Width() || gr != want.vt.Height() {
		t.Fatalf("size %dx%d, want %dx%d", gc, gr, want.vt.Width(), want.vt.Height())
	}
	cols, rows := want.size()
	for y := range rows {
		for x := range cols {
			if g, w := got.vt.CellAt(x, y), want.vt.CellAt(x, y); !g.Equal(w) {
				t.Fatalf("cell %d,%d is %q %+v, want %q %+v", x, y, g.Content, g.Style, w.Content, w.Style)
			}
		}
	}
	gl, wl := got.vt.Scrollback().Lines(), want.vt.Scrollback().Lines()
	if want.vt.IsAltScreen() {
		wl = nil
	}
	if len(gl) != len(wl) {
		t.Fatalf("%d lines of scrollback, want %d", len(gl), len(wl))
	}
	for i := range wl {
		if g, w := gl[i].Render(), wl[i].Render(); g != w {
			t.Fatalf("scrollback line %d is %q, want %q", i, g, w)
		}
	}
	if g, w := got.vt.CursorPosition(), want.vt.CursorPosition(); g != w {
		t.Errorf("cursor at %v, want %v", g, w)
	}
	if got.vt.IsAltScreen() != want.vt.IsAltScreen() || got.vt.CursorHidden() != want.vt.CursorHidden() {
		t.Errorf("alternate screen %v, cursor hidden %v; want %v, %v",
			got.vt.IsAltScreen(), got.vt.CursorHidden(), want.vt.IsAltScreen(), want.vt.CursorHidden())
	}
}

// A redraw of a screen that scrolled, moved its cursor and changed colours draws the same
// screen, scrollback and cursor on a fresh terminal of its size.
func TestScreenRedraw(t *testing.T) {
	var out strings.Builder
	for i := range 300 { // more than the scrollback keeps
		fmt.Fprintf(&out, "\x1b[3%dmline %d\x1b[0m plain \x1b[1;44mbold on blue\x1b[0m\r\n", i%8, i)
	}
	out.WriteString("\x1b[38;5;202m256 colours\x1b[38;2;10;200;30m and true colour\x1b[m a line longer than the forty columns, wrapped\r\n")
	out.WriteString("\x1b[3;10H\x1b[4mmoved\x1b[24m\x1b[K\x1b[7;1H\x1b[2Kwide: 日本語 é\x1b[5;20H")
	for name, more := range map[string]string{
		"main":            "",
		"alternate":       "\x1b[?1049h\x1b[2J\x1b[H\x1b[31meditor\x1b[m\x1b[10;1H~\x1b[2;3H",
		"hidden cursor":   "\x1b[?25l",
		"a prompt at end": "\r\n\x1b]133;A\a\x1b[32mada@box\x1b[m:~$ \x1b]133;B\a",
	} {
		t.Run(name, func(t *testing.T) {
			want := newScreenModel(40, 10)
			defer want.close()
			want.write([]byte(out.String() + more))
			got := newScreenModel(40, 10)
			defer got.close()
			got.write(want.redraw())
			sameScreen(t, got, want)
		})
	}
}

// A narrower screen wraps its lines again rather than cutting them, as the watchers'
// terminals do, and keeps the cursor after the prompt; wider, it keeps them.
func TestScreenNarrower(t *testing.T) {
	m := newScreenModel(80, 6)
	defer m.close()
	line := "/a/long/directory # echo " + strings.Repeat("x", 50)
	m.write([]byte("first\r\n\x1b[32m" + line + "\x1b[m\r\n" + strings.Repeat("x", 50) + "\r\n/a/long/directory # "))
	m.resize(30, 6)
	var text strings.Builder
	for _, l := range append(m.scrollback(), func() (rows []uv.Line) {
		for y := range 6 {
			rows = append(rows, m.row(y))
		}
		return rows
	}()...) {
		text.WriteString(l.String())
	}
	if !strings.Contains(text.String(), line) {
		t.Errorf("the long line is not whole after narrowing: %q", text.String())
	}
	m.write([]byte("typed"))
	if at := m.vt.CursorPosition(); at.X != len("/a/long/directory # typed") {
		t.Errorf("the cursor after typing is at %v: %q", at, m.vt.String())
	}
	m.resize(60, 6)
	if c, r := m.size(); c != 60 || r != 6 || !strings.Contains(m.vt.String(), "/a/long/directory # typed") {
		t.Errorf("wider: %dx%d %q", c, r, m.vt.String())
	}
}

// After the model was dropped, the screen is made again from the last lines of output:
// plain output draws the same screen.
func TestScreenFromLastLines(t *testing.T) {
	var out bytes.Buffer
	for i := range 5000 {
		fmt.Fprintf(&out, "y %d\r\n", i)
	}
	want := newScreenModel(30, 8)
	defer want.close()
	want.write(out.Bytes())
	got := newScreenModel(30, 8)
	defer got.close()
	got.write(lastLines(out.Bytes(), scrollbackLines+8))
	sameScreen(t, got, want)
	if l := lastLines([]byte("a\nb\nc"), 2); string(l) != "b\nc" {
		t.Errorf("the last 2 lines of a, b, c: %q", l)
	}
	if l := lastLines([]byte("a\nb"), 5); string(l) != "a\nb" {
		t.Errorf("the last 5 lines of a, b: %q", l)
	}
}

// floods are outputs as the PTY gives them: yes's (its \n made \r\n), and an ls of colours
// with prompts and marks between.
func floods() map[string][]byte {
	var mixed bytes.Buffer
	for i := 0; mixed.Len() < 32<<10; i++ {
		fmt.Fprintf(&mixed, "\x1b[3%dmfile%d.go\x1b[0m  \x1b[1;34mdir%d\x1b[0m  %s\r\n", i%8, i, i, strings.Repeat("word ", i%20))
		if i%10 == 0 {
			mixed.WriteString("\x1b]133;A\a\x1b[32mada@box\x1b[0m:\x1b[34m~/src\x1b[0m$ \x1b]133;B\a")
		}
	}
	return map[string][]byte{"yes": bytes.Repeat([]byte("y\r\n"), 32<<10/3), "mixed": mixed.Bytes()}
}

// BenchmarkScreen measures the screen: model is the headless terminal's cost for 32 KiB
// of output (at 80x24), console what the PTY's reader pays for 64 MiB of it, in 32 KiB
// reads (no watcher, no command running), while the keeper feeds the model beside it.
func BenchmarkScreen(b *testing.B) {
	for name, chunk := range floods() {
		b.Run("model/"+name, func(b *testing.B) {
			m := newScreenModel(80, 24)
			defer m.close()
			b.SetBytes(int64(len(chunk)))
			for b.Loop() {
				m.write(chunk)
			}
		})
		b.Run("console/"+name, func(b *testing.B) {
			const total = 64 << 20
			b.SetBytes(total)
			for b.Loop() {
				c := &Console{done: make(chan struct{}), poked: make(chan struct{}, 1), screen: tailBuffer{max: screenLimit},
					views: map[*ConsoleView]struct{}{}, cols: 80, rows: 24}
				go c.keep(newScreenModel(c.cols, c.rows))
				for range total / len(chunk) {
					c.mu.Lock()
					c.output(chunk)
					c.mu.Unlock()
				}
				close(c.done)
			}
		})
	}
}
