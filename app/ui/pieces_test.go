//go:build !js

package ui

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/shared"
)

// host is a session page as a piece sees it (sessionHost), for a piece on its own: the
// state it passes down, and what the piece reported.
type host struct {
	sessionIn
	said []string
}

func (h *host) in() sessionIn                      { return h.sessionIn }
func (h *host) say(text string)                    { h.said = append(h.said, text) }
func (h *host) fail(prefix string, err error)      { h.said = append(h.said, prefix+err.Error()) }
func (h *host) setSession(shared.Session)          {}
func (h *host) show(app.Context, []shared.Message) {}

// The prompt box draws from what the page passes down alone: a session that ended says
// why with the way on (none for a person who may not change it), a read-only one says
// why, a live one takes a prompt with the agent's controls beside Send.
func TestPromptBoxAlone(t *testing.T) {
	running := shared.Session{ID: "s1", Agent: "claude", Cwd: "/w", State: shared.SessionRunning}
	failed := shared.Session{ID: "s1", Agent: "claude", Cwd: "/w", State: shared.SessionFailed}
	for _, tt := range []struct {
		name     string
		in       sessionIn
		pending  string
		has, not []string
	}{
		{"ended", sessionIn{session: &failed, task: &shared.Task{Repo: "/r"}},
			"", []string{"This session failed", `class="start-new"`, "with the claude agent, in the task&#39;s worktree"}, []string{"prompt-input"}},
		{"ended, read only", sessionIn{session: &failed, readOnly: "Read only: you are a viewer."},
			"", []string{"This session failed"}, []string{"start-new"}},
		{"read only", sessionIn{session: &running, readOnly: "Read only: you are a viewer."},
			"", []string{`class="prompt read-only"`, "Read only: you are a viewer."}, []string{"prompt-input", "Send"}},
		{"live", sessionIn{session: &running},
			"", []string{`id="prompt-input"`, `placeholder="A prompt for the agent"`, `<span id="slot"></span><button type="submit">Send</button>`}, []string{"Sending"}},
		{"sending", sessionIn{session: &running},
			"c1", []string{`<button disabled type="submit">Sending…</button>`}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			box := promptBox{host: &host{sessionIn: tt.in}, pending: tt.pending}
			checkHTML(t, compact(app.HTMLString(box.render([]app.UI{app.Span().ID("slot")}))), tt.has, tt.not)
		})
	}
}

// The agent's controls draw from the session the page passes down: Resume for a stopped
// agent that can resume, its modes, Cancel turn while a turn runs; nothing that changes
// the session for a person who may not.
func TestAgentControlsAlone(t *testing.T) {
	modes := &shared.Modes{Current: "a", Available: []shared.SessionMode{{ID: "a", Name: "Ask"}, {ID: "b", Name: "Build"}}}
	stopped := shared.Session{State: shared.SessionReady, Stopped: true, Resumable: true, Modes: modes}
	running := shared.Session{State: shared.SessionRunning, Modes: modes}
	for _, tt := range []struct {
		name     string
		in       sessionIn
		has, not []string
	}{
		{"stopped", sessionIn{session: &stopped}, []string{`class="secondary resume"`, `<select id="mode-select">`}, []string{"cancel-turn", "Stop agent"}},
		{"stopped, read only", sessionIn{session: &stopped, readOnly: "no"}, []string{"no-resume"}, []string{`class="secondary resume"`, "mode-select"}},
		{"running", sessionIn{session: &running}, []string{"Cancel turn", "Stop agent", `<select id="mode-select">`}, []string{"resume"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := agentControls{host: &host{sessionIn: tt.in}}
			html := compact(app.HTMLString(app.Div().Body(append(a.barViews(), a.turnViews()...)...)))
			checkHTML(t, html, tt.has, tt.not)
		})
	}
}

// The conversation says it is loading until its first page, unless the page is offline,
// and invites the first prompt when the session has no messages.
func TestConversationAlone(t *testing.T) {
	s := shared.Session{Agent: "shell"}
	v := conversation{host: &host{sessionIn: sessionIn{id: "s1", session: &s}}}
	checkHTML(t, compact(app.HTMLString(v.render(false, false))), []string{"Loading messages…"}, nil)
	checkHTML(t, compact(app.HTMLString(v.render(true, false))), nil, []string{"Loading messages…"})
	v.boot(shared.MessagePage{})
	checkHTML(t, compact(app.HTMLString(v.render(false, false))), []string{"Type a shell command below."}, []string{"Loading", "older"})
	if v.shown() {
		t.Error("an empty conversation is shown: the bar would offer its replay")
	}
}

// pieces are the session page's pieces: the page's field that holds each, its type, and
// the files of its methods.
var pieces = []struct{ field, typ string }{
	{"conv", "conversation"},
	{"prompt", "promptBox"},
	{"controls", "agentControls"},
}

// TestPieceBoundaries: each piece of the session page owns its state. Outside its own
// methods, no code reads or writes a piece's fields (the page calls its methods); a
// piece's methods never name the page or reach into another piece (they see the page as
// a sessionHost).
func TestPieceBoundaries(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var parsed []*ast.File
	fields := map[string]map[string]bool{} // type -> its fields
	holds := map[string][]string{}         // type -> the type names its fields use
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, f)
		ast.Inspect(f, func(n ast.Node) bool {
			if ts, ok := n.(*ast.TypeSpec); ok {
				if st, ok := ts.Type.(*ast.StructType); ok {
					for _, fl := range st.Fields.List {
						ast.Inspect(fl.Type, func(n ast.Node) bool {
							if id, ok := n.(*ast.Ident); ok {
								holds[ts.Name.Name] = append(holds[ts.Name.Name], id.Name)
							}
							return true
						})
						for _, id := range fl.Names {
							if fields[ts.Name.Name] == nil {
								fields[ts.Name.Name] = map[string]bool{}
							}
							fields[ts.Name.Name][id.Name] = true
						}
					}
				}
			}
			return true
		})
	}
	pieceOf := map[string]string{} // the page's field -> the piece's type
	for _, p := range pieces {
		if !fields["SessionPage"][p.field] || fields[p.typ] == nil {
			t.Fatalf("SessionPage has no field %s, or there is no type %s: update pieces", p.field, p.typ)
		}
		pieceOf[p.field] = p.typ
	}
	for _, p := range pieces {
		for _, name := range holds[p.typ] {
			if name == "SessionPage" || slices.ContainsFunc(pieces, func(o struct{ field, typ string }) bool { return o.typ == name }) {
				t.Errorf("%s holds a %s: a piece sees the page as a sessionHost, and no other piece", p.typ, name)
			}
		}
	}
	for _, f := range parsed {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			recv := receiverType(fn)
			own := false
			for _, p := range pieces {
				own = own || recv == p.typ
			}
			where := fset.Position(fn.Pos()).String() + " " + fn.Name.Name
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.SelectorExpr:
					// x.<piece>.<field>: reaching into a piece from outside it.
					if inner, ok := n.X.(*ast.SelectorExpr); ok {
						if typ, ok := pieceOf[inner.Sel.Name]; ok && fields[typ][n.Sel.Name] && recv != typ {
							t.Errorf("%s: uses %s's field %s; call a method of the piece", where, typ, n.Sel.Name)
						}
					}
					if _, ok := pieceOf[n.Sel.Name]; ok && own {
						t.Errorf("%s: a piece reaches another through .%s", where, n.Sel.Name)
					}
				case *ast.Ident:
					if own && n.Name == "SessionPage" {
						t.Errorf("%s: a piece names the page; it sees a sessionHost", where)
					}
				}
				return true
			})
		}
	}
}

// receiverType is the name of fn's receiver type, "" for a function.
func receiverType(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return ""
	}
	typ := fn.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
