package diff

import (
	"encoding/json"
	"strings"
	"testing"

	"conch/shared"
)

// Hunks number every line in the texts it is in, with three lines of context, and say
// whether the change was cut at shared.MaxDiffLines lines.
func TestHunks(t *testing.T) {
	text := func(s string) *string { return &s }
	for _, tc := range []struct {
		name     string
		old, new *string
		want     string
	}{
		{"a changed line and one added", text("one\ntwo\nthree\n<b>four</b>\n"), text("one\n2\nthree\n<b>four</b>\nfive\n"),
			`[{"old_line":1,"new_line":1,"lines":[{"kind":" ","old":1,"new":1,"text":"one"},{"kind":"-","old":2,"text":"two"},` +
				`{"kind":"+","new":2,"text":"2"},{"kind":" ","old":3,"new":3,"text":"three"},` +
				`{"kind":" ","old":4,"new":4,"text":"\u003cb\u003efour\u003c/b\u003e"},{"kind":"+","new":5,"text":"five"}]}]`},
		{"a new file", nil, text("package main\n"),
			`[{"old_line":1,"new_line":1,"lines":[{"kind":"+","new":1,"text":"package main"}]}]`},
		{"two hunks", text(strings.Repeat("x\n", 10) + "a\n" + strings.Repeat("y\n", 10)), text("b\n" + strings.Repeat("x\n", 10) + strings.Repeat("y\n", 10)),
			`[{"old_line":1,"new_line":1,"lines":[{"kind":"+","new":1,"text":"b"},{"kind":" ","old":1,"new":2,"text":"x"},{"kind":" ","old":2,"new":3,"text":"x"},{"kind":" ","old":3,"new":4,"text":"x"}]},` +
				`{"old_line":8,"new_line":9,"lines":[{"kind":" ","old":8,"new":9,"text":"x"},{"kind":" ","old":9,"new":10,"text":"x"},{"kind":" ","old":10,"new":11,"text":"x"},` +
				`{"kind":"-","old":11,"text":"a"},{"kind":" ","old":12,"new":12,"text":"y"},{"kind":" ","old":13,"new":13,"text":"y"},{"kind":" ","old":14,"new":14,"text":"y"}]}]`},
		{"no change", text("same\n"), text("same\n"), `null`},
	} {
		hunks, cut := Hunks(tc.old, tc.new)
		if got, _ := json.Marshal(hunks); string(got) != tc.want || cut {
			t.Errorf("%s: cut %v, hunks\n got %s\nwant %s", tc.name, cut, got, tc.want)
		}
	}
	long := strings.Repeat("x\n", shared.MaxDiffLines+10)
	hunks, cut := Hunks(nil, &long)
	if n := len(hunks[len(hunks)-1].Lines); !cut || len(hunks) != 1 || n != shared.MaxDiffLines {
		t.Errorf("a long change: %d hunks, the last of %d lines, cut %v; want one of %d, cut", len(hunks), n, cut, shared.MaxDiffLines)
	}
}
