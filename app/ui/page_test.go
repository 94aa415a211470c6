//go:build !js

package ui

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/maxence-charriere/go-app/v10/pkg/app"
	"golang.org/x/net/html"

	"conch/shared"
)

// hostileStrings are what an agent may put in any field it controls.
var hostileStrings = map[string]string{
	"markup":         `x"><meta http-equiv=refresh content=0;url=http://127.0.0.1:9/phish><script>alert(1)</script>`,
	"single quote":   `x' onmouseover='alert(1)`,
	"references":     `&amp;&lt;&quot;&#34;&#x22; & < > " \" \\ %v %s`,
	"bidi":           "Run: echo harmless \u202e; rm -rf ~/ #",
	"control":        "a\x00b\x01c\x7f\td\ne",
	"invalid UTF-8":  "\xff\xfe\xc0",
	"attribute only": `" title="x`,
	"long":           `x"><meta http-equiv=refresh content=0>` + strings.Repeat("a", 1<<20),
}

// bootWith is a session page's boot with s in every field an agent controls: the
// session's error, modes and commands, and messages of every kind the page draws.
func bootWith(s string) shared.Boot {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	n := 0
	msg := func(typ shared.MessageType, author shared.AuthorType, md *shared.Metadata) shared.Message {
		n++
		created := at.Add(time.Duration(n) * time.Second)
		return shared.Message{ID: fmt.Sprintf("m%02d", n), SessionID: "s1", TaskID: "t1", AuthorType: author, Type: typ,
			Content: s, Metadata: md, CreatedAt: created, UpdatedAt: created}
	}
	three, finished := 3, at.Add(time.Minute)
	options := []shared.PermissionOption{{OptionID: s, Name: s, Kind: "allow_once"}, {OptionID: s + "2", Name: s, Kind: s}}
	msgs := []shared.Message{
		msg(shared.TypeMessage, shared.AuthorUser, nil),
		msg(shared.TypeMessage, shared.AuthorAgent, &shared.Metadata{Markdown: parsed(s)}),
		msg(shared.TypeThinking, shared.AuthorAgent, nil),
		msg(shared.TypeError, shared.AuthorAgent, nil),
		msg(shared.TypeError, shared.AuthorAgent, &shared.Metadata{DetailBytes: 3}),
		msg(shared.TypeStatus, shared.AuthorSystem, &shared.Metadata{StopReason: shared.StopReason(s)}),
		msg(shared.TypePermissionRequest, shared.AuthorAgent, &shared.Metadata{ToolCallID: s, Title: s, Kind: s,
			Status: shared.StatusPending, Options: options}),
		msg(shared.TypePermissionRequest, shared.AuthorAgent, &shared.Metadata{ToolCallID: s, Title: s,
			Status: shared.StatusSelected, SelectedOptionID: s + "2", Options: options}),
		msg(shared.TypePlan, shared.AuthorAgent, &shared.Metadata{Entries: []shared.PlanEntry{
			{Content: s, Priority: s, Status: s, Markdown: parsed(s)}, {Content: s, Priority: "high", Status: "completed", Markdown: parsed(s)}}}),
		msg(shared.TypeToolCall, shared.AuthorAgent, &shared.Metadata{ToolCallID: s, Title: s, Kind: s, Status: shared.ToolStatus(s)}),
		msg(shared.TypeToolCall, shared.AuthorAgent, &shared.Metadata{ToolCallID: s, Title: s, Kind: s, Status: shared.StatusCompleted,
			Normalized: &shared.Normalized{Kind: shared.NormalizedToolContent, ToolContent: &shared.ToolContentSummary{Items: []shared.ToolContentItemSummary{
				{Type: shared.ContentDiff, Path: s, OldBytes: &three, NewBytes: &three, AddedLines: &three, RemovedLines: &three},
				{Type: shared.ContentDiff, Path: s, OldBytes: &three, NewBytes: &three, Omitted: true},
				{Type: s, Path: s, Bytes: &three},
			}}}}),
		msg(shared.TypeToolExecute, shared.AuthorAgent, &shared.Metadata{ToolCallID: s, Title: s, Kind: s, Status: shared.StatusFailed,
			Normalized: &shared.Normalized{Kind: shared.NormalizedShellExec, ShellExec: &shared.ShellExec{Command: s, WorkDir: "/w" + s,
				Output: shared.ShellOutputSummary{HasOutput: true, StdoutBytes: 3, StdoutTotalBytes: 9, Signal: s, StartedAt: &at, FinishedAt: &finished}}}}),
		msg(shared.TypeToolExecute, shared.AuthorAgent, &shared.Metadata{ToolCallID: s, Title: s, Kind: s, Status: shared.ToolStatus(s),
			Normalized: &shared.Normalized{Kind: shared.NormalizedShellExec, ShellExec: &shared.ShellExec{Command: s, WorkDir: "/w" + s}}}), // not the session's own, so named
	}
	slices.Reverse(msgs) // a boot's page is newest first
	return shared.Boot{
		Session: shared.Session{ID: "s1", TaskID: "t1", Agent: s, Cwd: s, State: shared.SessionReady,
			Error:          s + "\n" + s, // more than its headline: the whole text behind a disclosure
			LastStopReason: shared.StopReason(s),
			Modes: &shared.Modes{Current: s + "2", Available: []shared.SessionMode{
				{ID: s, Name: s, Description: s}, {ID: s + "2", Name: s, Description: s}}},
			Commands: []shared.Command{{Name: s, Description: s, Hint: s}},
			Sandbox: &shared.Sandbox{Dirs: []string{"/w" + s, s}, Read: []string{s}, Home: s,
				Network: shared.NetworkHosts, Hosts: []string{s}}, // a directory may be named anything
			ConfigOptions: []shared.ConfigOption{
				{ID: s, Name: s, Description: s, Category: s, Type: shared.ConfigSelect, Current: s + "2", Values: []shared.ConfigValue{
					{ID: s, Name: s, Description: s, Group: s}, {ID: s + "2", Name: s, Description: s}}},
				{ID: s + "b", Name: s, Description: s, Category: s, Type: shared.ConfigBoolean}},
			CreatedAt: at, UpdatedAt: at},
		Task:     &shared.Task{ID: "t1", Title: s, Repo: "/r", Branch: s, Worktree: "/w" + s, CreatedAt: at, UpdatedAt: at},
		Messages: shared.MessagePage{Messages: msgs, Total: int64(len(msgs)), HasMore: true, Cursor: "c"},
		At:       at,
	}
}

// The session bar names the task, the agent and where it works, with the task's Changes;
// the prompt box asks for what the agent takes; a session that ended says why in its
// place, with the way on.
func TestPrerenderedSessionContext(t *testing.T) {
	for _, tc := range []struct {
		name, agent string
		task        *shared.Task
		state       shared.SessionState
		errText     string
		want        []string
		notWant     []string
	}{
		{name: "a worktree task", agent: "gemini", task: &shared.Task{ID: "t1", Title: "Fix the parser", Repo: "/r", Branch: "conch/fix", Worktree: "/r/.wt"},
			state: shared.SessionReady,
			want: []string{`<h1>Fix the parser</h1>`, `<span class="session-agent">gemini session</span>`, `<code>conch/fix</code>`, `title="Worktree: /r/.wt"`,
				`<a class="changes-link" href="/tasks/t1/changes">Changes</a>`, `placeholder="A prompt for the agent"`},
			notWant: []string{"A shell command"}},
		{name: "a directory", agent: "shell", task: &shared.Task{ID: "t1", Title: "Look around"}, state: shared.SessionReady,
			want: []string{`<h1>Look around</h1>`, `<code>/home/me/proj</code>`, `title="Working directory: /home/me/proj"`, `placeholder="A shell command"`}, notWant: []string{"changes-link"}},
		{name: "closed", agent: "shell", task: &shared.Task{ID: "t1", Title: "Old"}, state: shared.SessionClosed, errText: "the server stopped while this session was live",
			want: []string{`This session was closed: the server stopped while this session was live. It takes no more prompts.`,
				`>Start a new session</button>`, `title="A new session of this task, with the shell agent, in /home/me/proj"`},
			notWant: []string{"prompt-input", "Agent error"}},
		{name: "failed", agent: "shell", task: &shared.Task{ID: "t1", Title: "Old", Repo: "/r", Worktree: "/r/.wt"}, state: shared.SessionFailed, errText: "exec: no such file",
			want: []string{"Agent error: exec: no such file", "This session failed (the error is above)", `>Start a new session</button>`,
				`with the shell agent, in the task&#39;s worktree`}, notWant: []string{"prompt-input"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := bootWith("harmless")
			b.Task, b.Session.Agent, b.Session.Cwd, b.Session.State, b.Session.Error = tc.task, tc.agent, "/home/me/proj", tc.state, tc.errText
			var page strings.Builder
			if err := html.Render(&page, prerender(t, b)); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(page.String(), w) {
					t.Errorf("the page lacks %s", w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(page.String(), w) {
					t.Errorf("the page has %s", w)
				}
			}
		})
	}
}

// prerender serves /sessions/s1 from a handler whose boot is b, and parses the page.
func prerender(t *testing.T, b shared.Boot) *html.Node {
	t.Helper()
	Routes()
	defer func() { loadBoot = nil }()
	h := Handler([]byte("\x00asm"), false, func(key string) (shared.Boot, error) {
		if key != "k1" {
			t.Errorf("boot key %q, want the URL's", key)
		}
		return b, nil
	})
	res, body := get(t, h, "/sessions/s1?"+shared.BootParam+"=k1")
	if res.StatusCode != 200 {
		t.Fatalf("GET /sessions/s1: %d", res.StatusCode)
	}
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// textAttrs are the attributes whose values carry an agent's text or ids (or, content,
// the path asked for); every other attribute of the page must not depend on them.
var textAttrs = []string{"title", "aria-label", "value", "data-option-id", "data-config", "label", "content"}

// idAttrs carry ids the page sends back to the server as the agent sent them: they are
// never shown, so they are not marked.
var idAttrs = []string{"value", "data-option-id", "data-config"}

// shape lists the page's elements in order, each with its attributes, and the values of
// those that carry no agent text.
func shape(doc *html.Node) []string {
	var out []string
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode {
			continue
		}
		var attrs []string
		for _, a := range n.Attr {
			if slices.Contains(textAttrs, a.Key) {
				attrs = append(attrs, a.Key)
			} else {
				attrs = append(attrs, a.Key+"="+a.Val)
			}
		}
		slices.Sort(attrs)
		out = append(out, n.Data+" "+strings.Join(attrs, " "))
	}
	return out
}

func isBoot(n *html.Node) bool {
	return n.Type == html.ElementNode && n.Data == "script" && attr(n, "id") == shared.BootElementID
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// shown walks what the page shows (not the boot payload): f gets each text node's text
// and each attribute value that is not an id.
func shown(doc *html.Node, f func(where, text string)) {
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if isBoot(n) {
			return
		}
		switch n.Type {
		case html.TextNode:
			f("text under <"+n.Parent.Data+">", n.Data)
		case html.ElementNode:
			for _, a := range n.Attr {
				if !slices.Contains(idAttrs, a.Key) {
					f("attribute "+a.Key+" of <"+n.Data+">", a.Val)
				}
			}
		}
		for c := range n.ChildNodes() {
			walk(c)
		}
	}
	walk(doc)
}

// noFormat fails t for every format character that doc shows unmarked.
func noFormat(t *testing.T, doc *html.Node) {
	t.Helper()
	shown(doc, func(where, text string) {
		if i := strings.IndexFunc(text, func(r rune) bool { return unicode.Is(unicode.Cf, r) }); i >= 0 {
			t.Errorf("%s shows a format character unmarked: %.80q", where, text[max(i-20, 0):])
		}
	})
}

// find returns the elements with class cls.
func find(doc *html.Node, cls string) []*html.Node {
	return matching(doc, func(n *html.Node) bool { return slices.Contains(strings.Fields(attr(n, "class")), cls) })
}

// elements returns the elements named tag.
func elements(doc *html.Node, tag string) []*html.Node {
	return matching(doc, func(n *html.Node) bool { return n.Data == tag })
}

func matching(doc *html.Node, f func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	for n := range doc.Descendants() {
		if n.Type == html.ElementNode && f(n) {
			out = append(out, n)
		}
	}
	return out
}

func textOf(n *html.Node) string {
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == html.TextNode {
			b.WriteString(d.Data)
		}
	}
	return b.String()
}

// asParsed is s as a browser reads it back from an attribute: NUL and invalid UTF-8 are
// no text, and read as U+FFFD.
func asParsed(s string) string {
	return strings.ReplaceAll(string([]rune(s)), "\x00", "\uFFFD") // each invalid byte a U+FFFD
}

// TestPrerenderedSessionPageKeepsAgentTextOutOfMarkup: whatever an agent sends, the
// server-rendered session page has the elements and attributes of the same page with
// harmless text, agent text only in text nodes and in the attributes meant for it (where
// it reads back exactly), no format character shown, and a boot payload that decodes to
// what was read.
func TestPrerenderedSessionPageKeepsAgentTextOutOfMarkup(t *testing.T) {
	want := shape(prerender(t, bootWith("harmless")))
	for name, s := range hostileStrings {
		t.Run(name, func(t *testing.T) {
			b := bootWith(s)
			doc := prerender(t, b)
			if got := shape(doc); !slices.Equal(got, want) {
				for i := range min(len(got), len(want)) {
					if got[i] != want[i] {
						t.Fatalf("element %d of %d is %.200q, with harmless text %.200q", i, len(got), got[i], want[i])
					}
				}
				t.Fatalf("the page has %d elements, with harmless text %d", len(got), len(want))
			}
			noFormat(t, doc)

			modes := b.Session.Modes.Available
			opts := matching(doc, func(n *html.Node) bool { return n.Data == "option" && attr(n.Parent, "id") == "mode-select" })
			if len(opts) != len(modes) {
				t.Fatalf("%d mode options, want %d", len(opts), len(modes))
			}
			for i, o := range opts {
				if got, want := attr(o, "value"), asParsed(modes[i].ID); got != want {
					t.Errorf("mode %d's value reads %.80q, want %.80q", i, got, want)
				}
				if got, want := attr(o, "title"), asParsed(shared.Visible(modes[i].Description)); got != want {
					t.Errorf("mode %d's title reads %.80q, want %.80q", i, got, want)
				}
			}
			buttons := find(doc, "perm-option")
			if len(buttons) != 2 || attr(buttons[0], "data-option-id") != asParsed(s) {
				t.Errorf("permission option ids read %d buttons, the first %.80q", len(buttons), attr(buttons[0], "data-option-id"))
			}

			var boots []*html.Node
			for n := range doc.Descendants() {
				if isBoot(n) {
					boots = append(boots, n)
				}
			}
			if len(boots) != 1 {
				t.Fatalf("%d boot payloads", len(boots))
			}
			var got shared.Boot
			if err := json.Unmarshal([]byte(textOf(boots[0])), &got); err != nil {
				t.Fatal(err)
			}
			if strings.ToValidUTF8(s, "\uFFFD") == s && !reflect.DeepEqual(got, b) { // JSON carries invalid UTF-8 as U+FFFD
				t.Error("the boot payload does not decode to the boot read")
			}
		})
	}
}

// TestPrerenderedSessionPageMarksFormatCharacters: bidirectional controls in what an agent
// sends show as markers wherever the page shows that text (finding 5 of issue 19).
func TestPrerenderedSessionPageMarksFormatCharacters(t *testing.T) {
	doc := prerender(t, bootWith("Allow \u202eynеD"))
	diffs := matching(doc, func(n *html.Node) bool {
		cls := attr(n, "class")
		return (cls == "disclosure-toggle" || cls == "disclosure content-omitted") && strings.HasPrefix(strings.TrimSpace(textOf(n)), "Diff")
	})
	for _, tc := range []struct {
		what string
		els  []*html.Node
		want int // as many as bootWith has
	}{
		{"permission titles", find(doc, "perm-title"), 2}, {"option names", find(doc, "perm-option"), 2},
		{"diff paths", diffs, 2}, {"mode and config value names", elements(doc, "option"), 4},
		{"config option names", matching(doc, func(n *html.Node) bool {
			return n.Data == "span" && n.Parent.Data == "label" && strings.Contains(attr(n.Parent, "class"), "config")
		}), 2},
		{"config value groups", matching(doc, func(n *html.Node) bool {
			return n.Data == "optgroup" && strings.Contains(attr(n, "label"), "⟨U+202E⟩")
		}), 1},
		{"plan entries", find(doc, "plan-text"), 2}, {"plans", find(doc, "plan-title"), 1},
		{"tool titles", find(doc, "tool-title"), 2}, {"commands", find(doc, "cmd-text"), 2},
		{"working directories", find(doc, "cwd"), 2}, {"the session's error", find(doc, "alert"), 1},
		{"stop reasons", find(doc, "status-line"), 1}, {"agent text and thoughts", find(doc, "text"), 2},
		{"prompts", find(doc, "bubble"), 1}, {"the sandbox", find(doc, "sandbox"), 1},
	} {
		if len(tc.els) != tc.want {
			t.Errorf("%d %s on the page, want %d", len(tc.els), tc.what, tc.want)
		}
		for _, e := range tc.els {
			if !strings.Contains(textOf(e), "⟨U+202E⟩") {
				t.Errorf("%s: %q shows without the marker", tc.what, textOf(e))
			}
		}
	}
}

// TestPrerenderedBooleans: a boolean attribute is on the page only when it is true; a
// browser reads disabled="false" as disabled (finding 9 of issue 19).
func TestPrerenderedBooleans(t *testing.T) {
	doc := prerender(t, bootWith("plain"))
	var selected []string
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode {
			continue
		}
		for _, a := range n.Attr {
			switch a.Key {
			case "disabled":
				t.Errorf("<%s class=%q> is disabled in a ready session", n.Data, attr(n, "class"))
			case "selected":
				selected = append(selected, attr(n, "value"))
			case "checked":
				t.Errorf("<%s class=%q> is checked, its option off", n.Data, attr(n, "class"))
			}
		}
	}
	if !slices.Equal(selected, []string{"plain2", "plain2"}) {
		t.Errorf("selected modes and values %q, want the current ones alone", selected)
	}
}

// TestCommandListKeepsAgentTextOutOfMarkup: the slash commands, drawn once the prompt
// starts with "/", have the markup of harmless ones whatever their text, and show no
// format character unmarked.
func TestCommandListKeepsAgentTextOutOfMarkup(t *testing.T) {
	list := func(s string) []string {
		session := bootWith(s).Session.Visible()
		box := promptBox{host: &host{sessionIn: sessionIn{session: &session}}, draft: "/"}
		doc, err := html.Parse(strings.NewReader(app.HTMLString(box.commandList())))
		if err != nil {
			t.Fatal(err)
		}
		noFormat(t, doc)
		return shape(doc)
	}
	want := list("harmless")
	for name, s := range hostileStrings {
		if got := list(s); !slices.Equal(got, want) {
			t.Errorf("%s: the command list is %q, with harmless text %q", name, got, want)
		}
	}
}

// TestPrerenderedPageKeepsThePathOutOfMarkup: go-app writes the path asked for into the
// page's head; a link to a path made of markup gives the page of any other path.
func TestPrerenderedPageKeepsThePathOutOfMarkup(t *testing.T) {
	Routes()
	h := Handler([]byte("\x00asm"), false, nil)
	page := func(path string) []string {
		_, body := get(t, h, path)
		doc, err := html.Parse(strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		return shape(doc)
	}
	want := page("/sessions/s1")
	for _, path := range []string{"/sessions/x%22%3E%3Cmeta%20http-equiv=refresh%20content=0%3E", "/sessions/a%3F%22%3E%3Cmeta%20x%3E",
		"/sessions/%27%5C%22%00%E2%80%AE%3Cscript%3E"} {
		if got := page(path); !slices.Equal(got, want) {
			t.Errorf("GET %s: %q, want %q", path, got, want)
		}
	}
}

// hostileMarkdown is markdown an agent may send, with the links it makes: the address
// (percent-encoded where a browser would) and the title (the address as written).
var hostileMarkdown = map[string]struct {
	src   string
	links [][2]string
}{
	"quoted link": {`[x](<https://e.example/a"onmouseover="alert(1)'>) [y](https://e.example/?q="javascript:alert(1)"&amp;b=1&#35;c#d)`, [][2]string{
		{`https://e.example/a%22onmouseover=%22alert(1)%27`, `https://e.example/a"onmouseover="alert(1)'`},
		{`https://e.example/?q=%22javascript:alert(1)%22&b=1#c#d`, `https://e.example/?q="javascript:alert(1)"&b=1#c#d`}}},
	"javascript":    {"[a](javascript:alert(1)) [b](JaVaScRiPt:alert(1)) [c](java&#115;cript:alert(1)) [d](javascript&#58;alert(1)) [e](&#x6A;avascript:alert(1)) <javascript:alert(1)>", nil},
	"other schemes": {"[a](data:text/html,<script>alert(1)</script>) [b](file:///etc/passwd) [c](//evil.example/) [d](/api/v1/tasks) [e](vbscript:x)", nil},
	"image": {`![x" onerror="alert(1)](https://tracker.example/p.png"x) ![y](<https://tracker.example/é\x>)`, [][2]string{
		{`https://tracker.example/p.png%22x`, `https://tracker.example/p.png"x`},
		{`https://tracker.example/%C3%A9%5Cx`, `https://tracker.example/é\x`}}},
	"html":            {"<img src=x onerror=alert(1)>\n\n<iframe src=https://e.example></iframe> <a href=javascript:alert(1)>x</a>", nil},
	"code language":   {"```\"><script>alert(1)</script>\nx\n```", nil},
	"nested emphasis": {strings.Repeat("*a ", 10000) + strings.Repeat(" a*", 10000), nil},
	"nested strong":   {strings.Repeat("**", 10000) + "a" + strings.Repeat("**", 10000), nil},
	"nested quotes":   {strings.Repeat("> ", 10000) + "x", nil},
	"nested lists":    {strings.Repeat("- ", 10000) + "x", nil},
	// 10,000 nested links read as text, with no link, under server/markdown's bounds (100 give one).
	"nested links":     {strings.Repeat("[a", 10000) + strings.Repeat("](https://e.example/)", 10000), nil},
	"nested emphasis2": {strings.Repeat("_a ~~", 10000) + strings.Repeat("~~ a_", 10000), nil},
}

// TestPrerenderedMarkdownKeepsAgentTextOutOfMarkup: whatever markdown an agent sends, its
// message and plan entries hold only the elements markdown maps to, with no attribute but
// the fixed ones and a link's address and title; links (http, https, mailto only) read
// back exactly, open in a new tab without opener or referrer; nothing is loaded; and
// nesting thousands deep makes a page a few dozen elements deep.
func TestPrerenderedMarkdownKeepsAgentTextOutOfMarkup(t *testing.T) {
	tags := []string{"div", "p", "span", "strong", "em", "del", "code", "pre", "ul", "ol", "li", "blockquote",
		"hr", "br", "a", "table", "thead", "tbody", "tr", "th", "td", "button"}
	fixed := []string{"class", "scope", "type", "aria-hidden", "aria-live", "start", "target", "rel"}
	for name, tt := range hostileMarkdown {
		t.Run(name, func(t *testing.T) {
			doc := prerender(t, bootWith(tt.src))
			mds := find(doc, "md")
			if len(mds) != 3 { // the agent's message and the plan's two entries
				t.Fatalf("%d markdown blocks, want 3", len(mds))
			}
			for _, md := range mds {
				var walk func(n *html.Node, depth int)
				walk = func(n *html.Node, depth int) {
					if depth > 2*shared.MarkdownDepth+8 {
						t.Fatalf("markdown nests deeper than %d", depth)
					}
					for c := range n.ChildNodes() {
						if c.Type == html.ElementNode {
							if !slices.Contains(tags, c.Data) {
								t.Errorf("a <%s> element", c.Data)
							}
							for _, a := range c.Attr {
								if !slices.Contains(fixed, a.Key) && (c.Data != "a" || a.Key != "href" && a.Key != "title") {
									t.Errorf("<%s> has attribute %s=%.80q", c.Data, a.Key, a.Val)
								}
							}
						}
						walk(c, depth+1)
					}
				}
				walk(md, 0)
			}
			var links [][2]string
			for _, a := range elements(mds[len(mds)-1], "a") {
				links = append(links, [2]string{attr(a, "href"), attr(a, "title")})
				if attr(a, "target") != "_blank" || attr(a, "rel") != "noopener noreferrer" {
					t.Errorf("link %.80q: target %q, rel %q", attr(a, "href"), attr(a, "target"), attr(a, "rel"))
				}
			}
			if !slices.Equal(links, tt.links) {
				t.Errorf("links (address, title) %q, want %q", links, tt.links)
			}
		})
	}
}
