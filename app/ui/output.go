package ui

import (
	"strconv"
	"strings"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/app/term"
	"conch/shared"
	"conch/shared/poll"
)

// streams names the two streams in the order they are drawn.
var streams = [2]struct{ name, label string }{{"stdout", "Standard output"}, {"stderr", "Standard error"}}

// rendered is a snapshot's streams as terminal lines, parsed once per snapshot: a row
// renders again on every poll view change, and parsing 256 KiB each time would be waste.
// The matches of the last search are kept with them.
type rendered struct {
	of      *shared.ShellOutputSnapshot
	streams [2][]term.Line
	query   string
	matches []match
}

// match is one occurrence of the search: bytes [start, end) of a line's text.
type match struct {
	stream, line, start, end int
}

// maxMatches bounds the work and the marks of one search.
const maxMatches = 10000

// lines returns the lines of s, parsing only when s is not the snapshot parsed last.
func (r *rendered) lines(s *shared.ShellOutputSnapshot) *rendered {
	if s != r.of {
		*r = rendered{of: s}
		if s != nil {
			r.streams = [2][]term.Line{parse(s.Output.Stdout), parse(s.Output.Stderr)}
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

// text is a stream as shown: its lines' text, without styles or control sequences.
func (r *rendered) text(stream int) string {
	lines := make([]string, len(r.streams[stream]))
	for i, l := range r.streams[stream] {
		lines[i] = l.Text()
	}
	return strings.Join(lines, "\n")
}

// search finds q in the lines shown, ignoring case where that keeps byte offsets.
func (r *rendered) search(q string) []match {
	if q == r.query {
		return r.matches
	}
	r.query, r.matches = q, nil
	if q == "" {
		return nil
	}
	lq := strings.ToLower(q)
	for s, lines := range r.streams {
		for i, l := range lines {
			text := l.Text()
			needle := q
			if lt := strings.ToLower(text); len(lt) == len(text) && len(lq) == len(q) {
				text, needle = lt, lq
			}
			for from := 0; len(r.matches) < maxMatches; {
				j := strings.Index(text[from:], needle)
				if j < 0 {
					break
				}
				r.matches = append(r.matches, match{s, i, from + j, from + j + len(needle)})
				from += j + len(needle)
			}
		}
	}
	return r.matches
}

// readTools is the state of an open disclosure's reading tools.
type readTools struct {
	query  string
	at     int // the current match
	nowrap bool
	full   bool    // the transcript fills the window
	all    [2]bool // all lines of a stream are drawn, not only its last tailLines
	note   string  // the outcome of the last copy, for a moment
}

// transcript renders an open disclosure from the poll view and its snapshot's lines.
func (c *CommandRow) transcript(view poll.View) []app.UI {
	var out []app.UI
	if view.Loading {
		out = append(out, app.P().Class("out-note", "loading").Aria("live", "polite").Text("Loading command output…"))
	}
	if s := view.Snapshot; s != nil {
		if s.Offline {
			out = append(out, offlineNote())
		}
		o := s.Output
		r := c.shown.lines(s)
		if o.Stdout == "" && o.Stderr == "" {
			empty := "No command output."
			if !s.Status.IsTerminal() {
				empty = "No command output yet."
			}
			out = append(out, app.P().Class("out-note").Text(empty))
		} else {
			matches := r.search(c.tools.query)
			out = append(out, c.toolbar(len(matches)))
			cut := droppedBytes(o)
			for i, st := range streams {
				if len(r.streams[i]) > 0 {
					out = append(out, c.streamView(i, st.name, st.label, r.streams[i], cut[i] > 0, marksOf(matches, i, c.tools.at)))
				}
			}
		}
		switch {
		case o.StorageFull:
			out = append(out, app.P().Class("out-note").Text("Output truncated: the server stopped storing it here, its storage limit is reached"))
		case o.Truncated:
			out = append(out, app.P().Class("out-note").Text(truncatedNote(droppedBytes(o))))
		}
		if s.Status.IsTerminal() {
			out = append(out, app.P().Class("out-exit").Text(exitLabel(o.ExitCode)))
		}
	}
	if view.Failed {
		out = append(out, app.Div().Class("out-error").Aria("live", "polite").Body(
			app.Span().Text("Command output unavailable."),
			app.Button().Type("button").Class("retry").OnClick(c.retry).Text("Retry"),
		))
	}
	return out
}

// offlineNote says a snapshot is the service worker's kept copy, read without the server.
func offlineNote() app.UI {
	return app.P().Class("out-note", "out-offline").Aria("live", "polite").Text("Offline: this output may be out of date.")
}

// toolbar holds the search with its count and the tools for the whole output.
func (c *CommandRow) toolbar(found int) app.UI {
	t := c.tools
	count := ""
	switch {
	case t.query == "":
	case found == 0:
		count = "No matches"
	case found >= maxMatches:
		count = strconv.Itoa(t.at+1) + " of " + strconv.Itoa(maxMatches) + "+"
	default:
		count = strconv.Itoa(t.at+1) + " of " + strconv.Itoa(found)
	}
	full := "Full screen"
	if t.full {
		full = "Exit full screen"
	}
	return app.Div().Class("out-tools").Body(
		app.Input().Type("search").Class("out-search").Placeholder("Search output").Aria("label", "Search output").
			Value(t.query).OnInput(c.searchInput).OnKeyDown(c.searchKey),
		app.Span().Class("out-count").Aria("live", "polite").Text(count),
		disabled(app.Button().Type("button").Class("tool").Aria("label", "Previous match").Title("Previous match (Shift+Enter)"), found == 0).
			OnClick(func(ctx app.Context, _ app.Event) { c.step(ctx, -1) }).Text("↑"),
		disabled(app.Button().Type("button").Class("tool").Aria("label", "Next match").Title("Next match (Enter)"), found == 0).
			OnClick(func(ctx app.Context, _ app.Event) { c.step(ctx, 1) }).Text("↓"),
		app.Span().Class("out-tools-gap"),
		app.Button().Type("button").Class("tool").OnClick(func(ctx app.Context, _ app.Event) { c.copy(ctx, -1) }).Text("Copy all"),
		app.Button().Type("button").Class("tool", "tool-wrap").Aria("pressed", strconv.FormatBool(!t.nowrap)).
			OnClick(func(ctx app.Context, _ app.Event) { c.tools.nowrap = !c.tools.nowrap }).Text("Wrap"),
		app.Button().Type("button").Class("tool", "tool-full").Aria("pressed", strconv.FormatBool(t.full)).
			OnClick(func(ctx app.Context, _ app.Event) { c.tools.full = !c.tools.full }).Text(full),
		app.If(t.note != "", func() app.UI { return app.Span().Class("out-note-inline").Aria("live", "polite").Text(t.note) }),
	)
}

// tailLines is how many lines of a stream are drawn until the person asks for the
// earlier ones, a log's end being what is read first. For a 256 KiB coloured output
// (3,500 lines) in Chromium, from the snapshot's arrival to the first frame painted
// (TestMeasureColouredOutput, desktop / phone): all lines 1,562 / 2,011 ms, the last 400
// 428 / 468 ms, the last 200 196-214 / 196-257 ms (longest task 130-173 ms), of which
// parsing the text takes about 50 ms.
const tailLines = 200

// droppedBytes is how many bytes of stdout and stderr were not kept (the head of a
// stream longer than shared.OutputLimit), as far as the snapshot says.
func droppedBytes(o shared.ShellOutput) [2]int64 {
	return [2]int64{max(o.StdoutTotalBytes-int64(len(o.Stdout)), 0), max(o.StderrTotalBytes-int64(len(o.Stderr)), 0)}
}

// truncatedNote says that a stream's head was not kept, how much of it where that is
// known, and so what the line numbers count: the lines of the kept tail, not the
// command's (the number of lines dropped is not known).
func truncatedNote(dropped [2]int64) string {
	var parts []string
	for i, n := range dropped {
		if n > 0 {
			parts = append(parts, "the first "+sizeLabel(int(n))+" of "+streams[i].name)
		}
	}
	if len(parts) == 0 {
		return "Output truncated: only the tail is kept, and line numbers count its lines"
	}
	return "Output truncated: " + strings.Join(parts, " and ") + " were not kept, so line numbers count the lines of the kept tail"
}

// streamView draws one stream as a terminal would have shown it, its last tailLines
// lines unless all were asked for; cut says its head was not kept. Lines are block spans numbered from an attribute by
// CSS (so copying a selection takes no numbers); text goes into text nodes and colours
// into classes, so output never becomes markup or inline style. The view scrolls on its
// own, so it is focusable to be scrolled from the keyboard.
func (c *CommandRow) streamView(i int, name, label string, lines []term.Line, cut bool, marks map[int][]mark) app.UI {
	first := c.firstShown(i, len(lines))
	nodes := make([]app.UI, 0, len(lines)-first+1)
	if first > 0 {
		nodes = append(nodes, app.Button().Type("button").Class("tool", "earlier").
			OnClick(func(ctx app.Context, _ app.Event) { c.tools.all[i] = true }).
			Text("Show "+linesLabel(first)+" before these"))
	}
	for j := first; j < len(lines); j++ {
		nodes = append(nodes, lineView(lines[j], j+1, marks[j]))
	}
	return app.Section().Class("stream", name).Body(
		app.Div().Class("stream-head").Body(
			app.Span().Class("stream-name").Text(name),
			app.Span().Class("stream-lines").Text(linesLabel(len(lines))+map[bool]string{true: " of the kept tail"}[cut]),
			app.Button().Type("button").Class("tool").Aria("label", "Copy "+name).
				OnClick(func(ctx app.Context, _ app.Event) { c.copy(ctx, i) }).Text("Copy"),
			app.A().Class("tool").Href(api.ShellOutputRawURL(c.SessionID, c.Msg.ID, name)).Attr("download", c.Msg.ID+"-"+name+".txt").
				Aria("label", "Download "+name).Text("Download"),
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

// mark is a match within one line; current is the one Enter moved to.
type mark struct {
	start, end int
	current    bool
}

// marksOf groups the matches of stream s by line.
func marksOf(matches []match, s, at int) map[int][]mark {
	marks := map[int][]mark{}
	for k, m := range matches {
		if m.stream == s {
			marks[m.line] = append(marks[m.line], mark{m.start, m.end, k == at})
		}
	}
	return marks
}

// lineView draws one line. Each ends with its newline, though the line is a block: the
// block breaks the line on screen, and the newline keeps the text of the view (its
// textContent, what a selection copies) the text of the output.
func lineView(l term.Line, n int, marks []mark) app.UI {
	ln := app.Span().Class("ln").DataSet("n", n)
	if len(marks) == 0 && len(l) <= 1 && (len(l) == 0 || l[0].Style == (term.Style{})) {
		return ln.Text(l.Text() + "\n")
	}
	var nodes []app.UI
	pos := 0 // byte offset of the span in the line's text
	for _, s := range l {
		for from := 0; from < len(s.Text); {
			// The piece up to the next mark boundary inside this span.
			to, in := len(s.Text), (*mark)(nil)
			for k := range marks {
				m := &marks[k]
				switch {
				case pos+from >= m.start && pos+from < m.end:
					to, in = min(to, m.end-pos), m
				case m.start > pos+from:
					to = min(to, m.start-pos)
				}
			}
			nodes = append(nodes, piece(s.Text[from:to], s.Style, in))
			from = to
		}
		pos += len(s.Text)
	}
	return ln.Body(append(nodes, app.Text("\n"))...)
}

// piece is text in a style, inside a <mark> when a match covers it.
func piece(text string, st term.Style, in *mark) app.UI {
	var node app.UI = app.Text(text)
	if st != (term.Style{}) {
		node = app.Span().Class(styleClasses(st)...).Text(text)
	}
	if in == nil {
		return node
	}
	cls := []string{"hit"}
	if in.current {
		cls = append(cls, "current")
	}
	return app.Mark().Class(cls...).Body(node)
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

func (c *CommandRow) searchInput(ctx app.Context, e app.Event) {
	c.tools.query, c.tools.at = ctx.JSSrc().Get("value").String(), 0
	c.shown.search(c.tools.query)
	c.reveal(ctx)
}

// searchKey moves between matches: Enter to the next, Shift+Enter to the previous.
func (c *CommandRow) searchKey(ctx app.Context, e app.Event) {
	switch e.Get("key").String() {
	case "Enter":
		e.PreventDefault()
		if e.Get("shiftKey").Bool() {
			c.step(ctx, -1)
		} else {
			c.step(ctx, 1)
		}
	}
}

// step moves the current match by d, around the ends, and scrolls it into view.
func (c *CommandRow) step(ctx app.Context, d int) {
	if n := len(c.shown.matches); n > 0 {
		c.tools.at = ((c.tools.at+d)%n + n) % n
		c.reveal(ctx)
	}
}

// firstShown is the index of the first line of stream i that is drawn.
func (c *CommandRow) firstShown(i, lines int) int {
	if c.tools.all[i] {
		return 0
	}
	return max(lines-tailLines, 0)
}

// reveal scrolls the current match into view once the row has been drawn, drawing the
// earlier lines of its stream when it is among them.
func (c *CommandRow) reveal(ctx app.Context) {
	if c.tools.at < len(c.shown.matches) {
		m := c.shown.matches[c.tools.at]
		if m.line < c.firstShown(m.stream, len(c.shown.streams[m.stream])) {
			c.tools.all[m.stream] = true
		}
	}
	sel := "#output-" + c.Msg.ID + " mark.current"
	ctx.Defer(func(app.Context) {
		if m := app.Window().Get("document").Call("querySelector", sel); m.Truthy() {
			m.Call("scrollIntoView", map[string]any{"block": "center"}) // with the lines around it
		}
	})
}

// landLine shows the output line a link asked for (landing), once the output came: its
// word searched, the match on that line (or the next one after it) current and scrolled to.
func (c *CommandRow) landLine(ctx app.Context) {
	target, ok := landing[c.Msg.ID]
	snap := c.m.View().Snapshot
	if !ok || snap == nil {
		return
	}
	delete(landing, c.Msg.ID)
	s, text, total := 0, snap.Output.Stdout, snap.Output.StdoutTotalBytes
	if target.stream == streams[1].name {
		s, text, total = 1, snap.Output.Stderr, snap.Output.StderrTotalBytes
	}
	line := lineIndex(text, total, target.offset)
	c.tools.query, c.tools.at = target.word, 0
	for k, m := range c.shown.lines(snap).search(target.word) {
		if m.stream == s && m.line >= line {
			c.tools.at = k
			break
		}
	}
	c.reveal(ctx)
}

// copy puts the text shown of stream i (-1: both) on the clipboard.
func (c *CommandRow) copy(ctx app.Context, i int) {
	r := &c.shown
	var text, what string
	switch i {
	case -1:
		var parts []string
		for s := range streams {
			if len(r.streams[s]) > 0 {
				parts = append(parts, r.text(s))
			}
		}
		text, what = strings.Join(parts, "\n"), "output"
	default:
		text, what = r.text(i), streams[i].name
	}
	c.tools.note = toClipboard(ctx, text, "Copied "+what, func(note string) {
		if c.tools.note == note {
			c.tools.note = ""
		}
	})
}

func (c *CommandRow) transcriptClasses() []string {
	cls := []string{"transcript"}
	if c.tools.nowrap {
		cls = append(cls, "nowrap")
	}
	if c.tools.full {
		cls = append(cls, "full")
	}
	return cls
}

// transcriptKey: Escape anywhere in the transcript leaves full screen.
func (c *CommandRow) transcriptKey(ctx app.Context, e app.Event) {
	if e.Get("key").String() == "Escape" && c.tools.full {
		c.tools.full = false
	}
}

// follow keeps a running command's output scrolled to its end when new output arrives,
// unless the person scrolled it away from its end (web/conch.js keeps that as the box's
// conchAway): someone reading further up stays where they are. A command opened after it
// finished starts at the top.
func (c *CommandRow) follow(ctx app.Context, status shared.ToolStatus) {
	if status.IsTerminal() && c.machine().View().Snapshot == nil {
		return
	}
	sel := "#output-" + c.Msg.ID + ", #output-" + c.Msg.ID + " pre.term"
	doc := app.Window().Get("document")
	scrollers := doc.Call("querySelectorAll", sel)
	for i := 0; i < scrollers.Length(); i++ {
		if scrollers.Index(i).Get("conchAway").Truthy() {
			return
		}
	}
	ctx.Defer(func(app.Context) {
		scrollers := doc.Call("querySelectorAll", sel)
		for i := 0; i < scrollers.Length(); i++ {
			e := scrollers.Index(i)
			e.Set("scrollTop", e.Get("scrollHeight"))
		}
	})
}
