package ui

import (
	"context"
	"net/url"
	"strconv"
	"strings"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/shared"
)

// SearchPage is /search?q=: the messages of every session whose text has the query's
// words (prompts, agent messages, shell commands) and the lines of commands' output that
// do, newest first, each opening its session at that message (or line).
type SearchPage struct {
	app.Compo

	query   string // as searched (the URL's q)
	results []shared.SearchResult
	cursor  string // of the next page, when there is one
	loading bool
	done    bool // the first page came
	err     string
	ctx     context.Context // the current search; cancelled by the next and on dismount
	cancel  context.CancelFunc
}

func newSearchPage() app.Composer { return &SearchPage{} }

// OnNav searches the URL's query, in the browser only (OnNav runs in the prerender too):
// a new search from this page's own box navigates here again.
func (p *SearchPage) OnNav(ctx app.Context) {
	p.query = strings.TrimSpace(ctx.Page().URL().Query().Get("q"))
	ctx.Page().SetTitle(strings.TrimPrefix(p.query+" · Search · Conch", " · "))
	if app.IsServer {
		return
	}
	p.OnDismount()
	p.results, p.cursor, p.done, p.err = nil, "", false, ""
	if p.query == "" {
		return
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.more(ctx)
}

// OnDismount drops a search still under way.
func (p *SearchPage) OnDismount() {
	if p.cancel != nil {
		p.cancel()
	}
}

// more fetches the next page of the current search.
func (p *SearchPage) more(ctx app.Context) {
	if p.loading {
		return
	}
	c, q := p.ctx, shared.SearchRequest{Query: p.query, Cursor: p.cursor}
	p.loading = true
	ctx.Async(func() {
		page, err := api.Search(c, q)
		ctx.Dispatch(func(app.Context) {
			if c.Err() != nil {
				return // a newer search took over
			}
			p.loading, p.done = false, true
			if err != nil {
				p.err = whyNot("Could not search", err)
				return
			}
			for _, r := range page.Results {
				p.results = append(p.results, r.Visible())
			}
			p.cursor = ""
			if page.HasMore {
				p.cursor = page.Cursor
			}
		})
	})
}

func (p *SearchPage) Render() app.UI {
	return app.Div().Class("page", "search-page").Body(
		app.Header().Class("bar").Body(
			app.A().Class("back").Href("/").Aria("label", "All tasks").Text("←"),
			app.H1().Text("Search"),
		),
		app.Main().Body(
			searchBox(p.query),
			app.If(p.err != "", func() app.UI { return app.P().Class("alert").Role("alert").Text(p.err) }),
			app.If(p.query == "", func() app.UI {
				return app.P().Class("empty").Text("Search the prompts, agent messages, commands and command output of every session.")
			}),
			app.If(p.query != "" && !p.done, func() app.UI { return app.P().Class("empty").Text("Searching…") }),
			app.If(p.done && p.err == "" && len(p.results) == 0, func() app.UI {
				return app.P().Class("empty").Text("Nothing found.")
			}),
			app.Ol().Class("results").Body(
				app.Range(p.results).Slice(func(i int) app.UI { return renderResult(p.results[i]) }),
			),
			app.If(p.cursor != "", func() app.UI {
				return disabled(app.Button().Type("button").Class("secondary", "more"), p.loading).
					OnClick(func(ctx app.Context, _ app.Event) { p.more(ctx) }).Text("More results")
			}),
		),
	)
}

// resultKinds names a result by who wrote it and what it is.
var resultKinds = map[shared.MessageType]string{shared.TypeMessage: "Agent", shared.TypeToolExecute: "Command"}

// renderResult is one result: where it is, when, and its snippet with the words found
// marked, as text.
func renderResult(r shared.SearchResult) app.UI {
	kind := resultKinds[r.Type]
	if r.AuthorType == shared.AuthorUser {
		kind = "Prompt"
	}
	parts := make([]app.UI, len(r.Snippet))
	for i, s := range r.Snippet {
		if s.Hit {
			parts[i] = app.Mark().Text(s.Text)
		} else {
			parts[i] = app.Text(s.Text)
		}
	}
	snippet := app.P().Class("snippet").Body(parts...)
	if r.Type == shared.TypeToolExecute {
		snippet = app.P().Class("snippet", "command").Body(app.Code().Body(parts...))
	}
	link := messageLink(r.SessionID, r.MessageID)
	if o := r.Output; o != nil {
		kind, link = "Output · "+o.Stream, lineLink(r)
		snippet = app.P().Class("snippet", "output").Body(app.Code().Body(parts...))
	}
	return app.Li().Class("result").Body(
		app.A().Href(link).Body(
			app.Div().Class("result-head").Body(
				app.Span().Class("result-kind").Text(kind),
				app.Span().Class("result-task").Text(r.TaskTitle),
				app.Time().DateTime(r.CreatedAt.Format("2006-01-02T15:04:05Z07:00")).Text(r.CreatedAt.Local().Format("Jan 2 15:04")),
			),
			snippet,
		),
	)
}

// messageLink opens a session at one of its messages (conversation.land).
func messageLink(sessionID, messageID string) string {
	return "/sessions/" + url.PathEscape(sessionID) + "#" + messageAnchor + url.QueryEscape(messageID)
}

// messageAnchor starts the fragment of a link to a message, lineAnchor that of a link to
// a line of a command's output.
const (
	messageAnchor = "message-"
	lineAnchor    = "line-"
)

// outputLine is a line of a command's output a link opens (lineLink): the command, the
// stream, the position of the line's first byte (shared.OutputHit) and a word on it.
type outputLine struct {
	message, stream string
	offset          int64
	word            string
}

// lineLink opens a session at the command of an output result, its output open at the
// result's line.
func lineLink(r shared.SearchResult) string {
	word := ""
	for _, p := range r.Snippet {
		if p.Hit {
			word = p.Text
			break
		}
	}
	return "/sessions/" + url.PathEscape(r.SessionID) + "#" + lineAnchor + url.QueryEscape(r.MessageID) + "." +
		r.Output.Stream + "." + strconv.FormatInt(r.Output.Offset, 10) + "." + url.PathEscape(word)
}

// parseLine reads a lineLink's fragment (as the URL decodes it).
func parseLine(fragment string) (outputLine, bool) {
	rest, ok := strings.CutPrefix(fragment, lineAnchor)
	parts := strings.SplitN(rest, ".", 4)
	if !ok || len(parts) != 4 {
		return outputLine{}, false
	}
	offset, err := strconv.ParseInt(parts[2], 10, 64)
	return outputLine{message: parts[0], stream: parts[1], offset: offset, word: parts[3]}, err == nil
}

// lineIndex is the index of the line of text (a stream's kept text, which ends at
// position total in the stream; or, for a negative offset, at 0) that holds position at.
func lineIndex(text string, total, at int64) int {
	i := at - (total - int64(len(text)))
	if at < 0 {
		i = int64(len(text)) + at
	}
	return strings.Count(text[:min(max(i, 0), int64(len(text)))], "\n")
}

// landing are the output lines that links asked for, by command, until its output opens.
var landing = map[string]outputLine{}

// searchBox is the search form, on the task list and the results page. Without the app
// (before it has loaded) it is an ordinary GET form to /search; with it, the app navigates.
func searchBox(value string) app.UI {
	return app.Form().Class("search-box").Role("search").Action("/search").Method("get").
		OnSubmit(func(ctx app.Context, e app.Event) {
			e.PreventDefault()
			q := strings.TrimSpace(e.Get("target").Get("q").Get("value").String())
			if q != "" {
				ctx.Navigate("/search?q=" + url.QueryEscape(q))
			}
		}).Body(
		app.Input().Type("search").Name("q").ID("search-q").Aria("label", "Search messages").
			Placeholder("Search messages").Required(true).MaxLength(shared.MaxSearchBytes).
			Value(attrText(value)),
		app.Button().Type("submit").Class("secondary").Text("Search"),
	)
}

// land shows a session page opened at one of its messages (messageLink): it loads older
// pages until the message is there, scrolls it to the middle and marks it, then drops the
// fragment, so that later loads leave the reader where they are. A page opened otherwise
// (or at a message that is not the session's) goes to the newest message.
func (v *conversation) land(ctx app.Context) {
	id, ok := strings.CutPrefix(ctx.Page().URL().Fragment, messageAnchor)
	line, isLine := parseLine(ctx.Page().URL().Fragment)
	if isLine {
		id, ok = line.message, true
	}
	if !ok {
		scrollToEnd(ctx)
		return
	}
	if _, loaded := v.tl.at[id]; !loaded && v.hasOlder {
		v.loadOlder(ctx, app.Event{}) // lands again once they are in
		return
	}
	w := app.Window()
	row := w.Get("document").Call("querySelector", `[data-message-id="`+w.Get("CSS").Call("escape", id).String()+`"]`)
	if row.Truthy() {
		w.Call("dispatchEvent", w.Get("Event").New("conch:away")) // web/conch.js: stop following the end
		row.Get("classList").Call("add", "landed")
		row.Call("scrollIntoView", map[string]any{"block": "center"})
		if toggle := row.Call("querySelector", `.disclosure-toggle[aria-expanded="false"]`); isLine && toggle.Truthy() {
			landing[id] = line // CommandRow.landLine, once the output came
			toggle.Call("click")
		}
	} else {
		scrollToEnd(ctx)
	}
	u := *ctx.Page().URL()
	u.Fragment = ""
	w.Get("history").Call("replaceState", nil, "", u.String())
}

// landOlder goes on landing (land) once older messages came, if the page is landing.
func (v *conversation) landOlder(ctx app.Context) {
	if f := ctx.Page().URL().Fragment; strings.HasPrefix(f, messageAnchor) || strings.HasPrefix(f, lineAnchor) {
		v.land(ctx)
	}
}
