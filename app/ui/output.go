package ui

import (
	"strconv"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/app/term"
	"conch/shared"
)

// rendered is a snapshot's streams as terminal lines, parsed once per snapshot: a row
// renders again on every poll view change, and parsing 256 KiB each time would be waste.
type rendered struct {
	of             *shared.ShellOutputSnapshot
	stdout, stderr []term.Line
}

// lines returns the lines of s, parsing only when s is not the snapshot parsed last.
func (r *rendered) lines(s *shared.ShellOutputSnapshot) *rendered {
	if s != r.of {
		*r = rendered{of: s}
		if s != nil {
			r.stdout, r.stderr = parse(s.Output.Stdout), parse(s.Output.Stderr)
		}
	}
	return r
}

// parse renders a stream as a terminal shows it, with invisible format characters
// (bidirectional controls and the like) made visible first: they are not terminal
// controls, and output must not display as something it is not.
func parse(text string) []term.Line {
	if text == "" {
		return nil
	}
	return term.Render(shared.Visible(text))
}

// streamView draws one stream as a terminal would have shown it. Lines are block spans
// numbered by a CSS counter (so copying a selection takes no numbers); text goes into
// text nodes and colours into classes, so output never becomes markup or inline style.
// The view scrolls on its own, so it is focusable to be scrolled from the keyboard.
func streamView(name, label string, lines []term.Line) app.UI {
	nodes := make([]app.UI, len(lines))
	for i, l := range lines {
		nodes[i] = lineView(l)
	}
	return app.Section().Class("stream", name).Body(
		app.Div().Class("stream-head").Body(
			app.Span().Class("stream-name").Text(name),
			app.Span().Class("stream-lines").Text(linesLabel(len(lines))),
		),
		app.Pre().Class("term", name).TabIndex(0).Aria("label", label).Body(nodes...),
	)
}

func linesLabel(n int) string {
	if n == 1 {
		return "1 line"
	}
	return strconv.Itoa(n) + " lines"
}

func lineView(l term.Line) app.UI {
	if len(l) == 1 && l[0].Style == (term.Style{}) {
		return app.Span().Class("ln").Text(l[0].Text)
	}
	spans := make([]app.UI, len(l))
	for i, s := range l {
		if s.Style == (term.Style{}) {
			spans[i] = app.Text(s.Text)
		} else {
			spans[i] = app.Span().Class(styleClasses(s.Style)...).Text(s.Text)
		}
	}
	return app.Span().Class("ln").Body(spans...)
}

// styleClasses names the classes of web/term.css (colours) and app.css (attributes) that
// draw st. Inverse swaps the colours; a default colour swapped in has classes of its own.
func styleClasses(st term.Style) []string {
	var cls []string
	fg, bg := st.FG, st.BG
	if st.Attr&term.Inverse != 0 {
		fg, bg = bg, fg
		if _, ok := fg.Index(); !ok {
			cls = append(cls, "t-fi")
		}
		if _, ok := bg.Index(); !ok {
			cls = append(cls, "t-bi")
		}
	}
	if i, ok := fg.Index(); ok {
		cls = append(cls, "t-f"+strconv.Itoa(i))
	}
	if i, ok := bg.Index(); ok {
		cls = append(cls, "t-b"+strconv.Itoa(i))
	}
	for _, a := range attrClasses {
		if st.Attr&a.attr != 0 {
			cls = append(cls, a.class)
		}
	}
	return cls
}

var attrClasses = []struct {
	attr  term.Attr
	class string
}{
	{term.Bold, "t-bold"}, {term.Dim, "t-dim"}, {term.Italic, "t-italic"}, {term.Underline, "t-ul"}, {term.Strike, "t-strike"},
}
