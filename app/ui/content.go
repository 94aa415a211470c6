package ui

import (
	"context"
	"strconv"
	"strings"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/shared"
)

// ToolCallRow is a tool call that is not a shell command and has content: its title and
// status, and one collapsed disclosure per item (a diff, a text), labelled from the
// summary alone. The first opening fetches the content of all items, once per version of
// the message; closing every item or leaving the page aborts a fetch in flight.
type ToolCallRow struct {
	app.Compo

	SessionID string
	Cwd       string // the session's directory, which paths are shown relative to
	Msg       shared.Message

	open map[int]bool
	snap *shared.ToolContentSnapshot
	onDemand
}

// OnDismount aborts a fetch in flight.
func (r *ToolCallRow) OnDismount() { r.abort() }

func (r *ToolCallRow) toggle(i int) app.EventHandler {
	return func(ctx app.Context, _ app.Event) {
		if r.open == nil {
			r.open = map[int]bool{}
		}
		r.open[i] = !r.open[i]
		if !r.open[i] {
			delete(r.open, i)
			if len(r.open) == 0 {
				r.abort()
			}
			return
		}
		if r.loading || r.snap != nil && !r.snap.UpdatedAt.Before(r.Msg.UpdatedAt) {
			return
		}
		r.fetch(ctx)
	}
}

func (r *ToolCallRow) fetch(ctx app.Context) {
	sid, mid := r.SessionID, r.Msg.ID
	fetchOnDemand(&r.onDemand, ctx, "Content",
		func(c context.Context) (shared.ToolContentSnapshot, error) { return api.ToolContent(c, sid, mid) },
		func(snap shared.ToolContentSnapshot) {
			snap = snap.Visible() // like the message it belongs to
			r.snap = &snap
		})
}

// Render draws the row and its open items.
func (r *ToolCallRow) Render() app.UI {
	sum := shared.ToolContentOf(r.Msg)
	if sum == nil {
		return toolRow(r.Msg, r.Cwd)
	}
	var items []app.UI
	for i, s := range sum.Items {
		items = append(items, r.renderItem(i, s))
	}
	return toolRow(r.Msg, r.Cwd, items...)
}

func (r *ToolCallRow) renderItem(i int, s shared.ToolContentItemSummary) app.UI {
	label, full := contentLabel(relative(r.Cwd, s.Path), s), contentLabel(s.Path, s)
	if s.Omitted {
		return app.P().Class("disclosure", "content-omitted").Title(attrText(full)).Text(label)
	}
	open := r.open[i]
	bodyID := "content-" + r.Msg.ID + "-" + strconv.Itoa(i)
	return app.Div().Class("disclosure").Body(
		app.Button().Class("disclosure-toggle").Type("button").
			Aria("label", attrText(disclosureName(open, "tool content", label))).Title(attrText(full)).
			Aria("expanded", strconv.FormatBool(open)).Aria("controls", bodyID).
			OnClick(r.toggle(i)).
			Body(app.Span().Class("chevron").Aria("hidden", "true"), app.Text(label)),
		app.If(open, func() app.UI {
			return app.Div().ID(bodyID).Class("transcript").Body(r.renderBody(i))
		}),
	)
}

func (r *ToolCallRow) renderBody(i int) app.UI {
	switch {
	case r.snap != nil && i < len(r.snap.Items):
		it := r.snap.Items[i]
		var view app.UI = app.Pre().Class("tool-text").Text(derefText(it.Text))
		if it.Type == shared.ContentDiff {
			view = diffView(it.Hunks, it.HunksTruncated, derefText(it.OldText) == derefText(it.NewText), nil)
		}
		if r.snap.Offline {
			return app.Div().Body(offlineNote(), view)
		}
		return view
	case r.err != "":
		return app.P().Class("out-error").Role("alert").Text(r.err)
	}
	return app.P().Class("out-note", "loading").Aria("live", "polite").Text("Loading…")
}

func derefText(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// contentLabel is a disclosure's label, from the summary alone, with path for its path:
// "Diff · path · +a −r", "Text · 812 B".
func contentLabel(path string, s shared.ToolContentItemSummary) string {
	if s.Type != shared.ContentDiff {
		return "Text · " + sizeLabel(derefInt(s.Bytes))
	}
	if s.Omitted {
		return "Diff · " + path + " · too large to keep (" + sizeLabel(derefInt(s.OldBytes)+derefInt(s.NewBytes)) + ")"
	}
	return "Diff · " + path + " · +" + strconv.Itoa(derefInt(s.AddedLines)) + " \u2212" + strconv.Itoa(derefInt(s.RemovedLines))
}

// relative is text (a path, a title holding paths) with the session's directory cwd
// taken off the paths under it: "Write /home/me/sessions/ID/hello.py" reads "Write hello.py".
func relative(cwd, text string) string {
	cwd = strings.TrimRight(cwd, "/")
	if cwd == "" || !strings.HasPrefix(cwd, "/") {
		return text
	}
	return strings.ReplaceAll(text, cwd+"/", "")
}

func derefInt(n *int) int {
	if n == nil {
		return 0
	}
	return *n
}

// lineReview makes a diff a place to comment on: each new line's number is a button that
// starts a comment on that line (pick), and under(line), when not nil, is drawn below it.
type lineReview struct {
	pick  func(line int) app.EventHandler
	under func(line int) app.UI
}

// diffView draws a diff's hunks (shared.DiffHunk, worked out by the server) with the old
// and new line numbers of every line; same says its two texts are the same. Its text is
// text, never markup. With review, the new lines take comments.
func diffView(hunks []shared.DiffHunk, truncated, same bool, review *lineReview) app.UI {
	switch {
	case len(hunks) == 0 && same:
		return app.P().Class("out-note").Text("No change.")
	case len(hunks) == 0:
		return app.P().Class("out-note").Text("This diff cannot be shown.")
	}
	largest := 0
	for _, l := range hunks[len(hunks)-1].Lines {
		largest = max(largest, l.Old, l.New)
	}
	var rows []app.UI
	for _, h := range hunks {
		rows = append(rows, app.Div().Class("dl", "dl-hunk").Text("@@ −"+strconv.Itoa(h.OldLine)+" +"+strconv.Itoa(h.NewLine)+" @@"))
		for _, l := range h.Lines {
			kind, sign := "dl-eq", " "
			switch l.Kind {
			case shared.DiffRemoved:
				kind, sign = "dl-del", "−"
			case shared.DiffAdded:
				kind, sign = "dl-add", "+"
			}
			o, n := lineNumber(l.Old), lineNumber(l.New)
			var newNumber app.UI = app.Span().Class("ln").Text(n)
			if review != nil && n != "" {
				newNumber = app.Button().Type("button").Class("ln", "ln-pick").Aria("label", "Comment on line "+n).
					OnClick(review.pick(l.New), app.EventScope(l.New)).Text(n) // scoped: go-app tells handlers apart by their code alone
			}
			rows = append(rows, app.Div().Class("dl", kind).Body(
				app.Span().Class("ln").Text(o),
				newNumber,
				app.Span().Class("dt").Text(sign+l.Text),
			))
			if review != nil && n != "" {
				if u := review.under(l.New); u != nil {
					rows = append(rows, u)
				}
			}
		}
	}
	if truncated {
		rows = append(rows, app.P().Class("out-note").Text("The rest of this diff is not shown: it is over "+strconv.Itoa(shared.MaxDiffLines)+" lines."))
	}
	return diffBox(len(strconv.Itoa(largest)), rows)
}

// lineNumber is a diff line's number in one text, "" for none (0).
func lineNumber(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// diffBox holds a diff's rows; the line number columns are as wide as its largest number,
// through a class (ln3 … ln8, app.css): the page's CSP refuses style attributes.
func diffBox(digits int, rows []app.UI) app.UI {
	return app.Div().Class("diff", "ln"+strconv.Itoa(min(max(digits, 3), 8))).Body(rows...)
}
