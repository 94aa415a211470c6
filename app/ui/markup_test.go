//go:build !js

package ui

import (
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// FuzzAttrText: whatever the text, go-app's quoting of attrText's result (strconv.Quote)
// writes it as it is, and an HTML parser reads one attribute holding the text back. (The
// C1 controls U+0080-U+009F read back as other characters, by HTML's rule for references.)
func FuzzAttrText(f *testing.F) {
	for _, s := range []string{"", "plain", `x"><meta http-equiv=refresh content=0>`, `a\"b`, "&amp;<>'", "\u202e\x00\t\n\r", "\xff\xfe", "é 日本 ✓\u00a0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v := attrText(s)
		quoted := strconv.Quote(v)
		if quoted != `"`+v+`"` {
			t.Fatalf("Go quoting changes attrText(%q) = %q: %s", s, v, quoted)
		}
		doc, err := html.Parse(strings.NewReader(`<p title=` + quoted + `></p>`))
		if err != nil {
			t.Fatal(err)
		}
		var ps []*html.Node
		for n := range doc.Descendants() {
			if n.Type == html.ElementNode && n.Parent.Data == "body" {
				ps = append(ps, n)
			}
		}
		if len(ps) != 1 || ps[0].Data != "p" || len(ps[0].Attr) != 1 || ps[0].Attr[0].Key != "title" {
			t.Fatalf("attrText(%q) = %q does not read as one title of one element", s, v)
		}
		if got := ps[0].Attr[0].Val; !strings.ContainsFunc(s, func(r rune) bool { return r >= 0x80 && r <= 0x9f }) && got != asParsed(s) {
			t.Fatalf("attrText(%q) reads back as %q", s, got)
		}
	})
}

// FuzzResolve: whatever the location (go-app resolves the path asked for), the resolved
// one is a clean URL; Conch's own locations stay as they are.
func FuzzResolve(f *testing.F) {
	own := []string{"/", "/web/app.css", "/sessions/0192-abc", "/api/v1/task-sessions/s%2F1/messages/m1/shell-output/raw?stream=stdout"}
	for _, s := range own {
		if got := (sameOrigin{}).Resolve(s); got != s {
			f.Errorf("Resolve(%q) = %q", s, got)
		}
		f.Add(s)
	}
	for _, s := range []string{"", `/sessions/a?"><meta x>`, "/sessions/\x00\u202e'\\`", "/sessions/é#\"x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got := (sameOrigin{}).Resolve(s); !cleanURL(got) {
			t.Fatalf("Resolve(%q) = %q", s, got)
		}
	})
}
