package acp

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
)

// The marks are read from a hostile stream, in reads cut anywhere: every byte that is not
// a mark is handed on once, in order, and a mark is read whole or not at all.
func TestMarkReader(t *testing.T) {
	c := func(line string) string {
		return "\x1b]133;C;" + base64.StdEncoding.EncodeToString([]byte(line)) + "\a"
	}
	long := "\x1b]133;C;" + strings.Repeat("A", oscLimit) + "\a"
	for _, tc := range []struct {
		name, in, text, marks string
	}{
		{"a command", "\x1b]133;A\a$ \x1b]133;B\aecho hi\r\n" + c("\t echo hi\n") + "hi\r\n\x1b]133;D;0\a", "$ echo hi\r\nhi\r\n", "A|B A|B C(echo hi) D(0)"},
		{"ST ends it", "x\x1b]133;D;2\x1b\\y", "xy", "D(2)"},
		{"other sequences pass", "\x1b[31mred\x1b]0;title\a\x1b]8;;http://x\x1b\\", "\x1b[31mred\x1b]0;title\a\x1b]8;;http://x\x1b\\", ""},
		{"a bad exit code", "\x1b]133;D;-1\a\x1b]133;D;x\a\x1b]133;D;999\a", "", "D(?) D(?) D(?)"},
		{"bad base64 is text", "\x1b]133;C;!!\a", "\x1b]133;C;!!\a", ""},
		{"cancelled by CAN", "\x1b]133;D;0\x18after", "\x1b]133;D;0\x18after", ""},
		{"too long to be a mark", long + "z", long + "z", ""},
		{"invalid UTF-8", "\xff\xfe\x1b]133;D;0\a\xc3", "\xff\xfe\xc3", "D(0)"},
		{"ESC at the end", "ab\x1b", "ab\x1b", ""},
	} {
		for _, size := range []int{1, 2, 3, 7, 1 << 20} {
			t.Run(fmt.Sprintf("%s/%d", tc.name, size), func(t *testing.T) {
				var r markReader
				var text bytes.Buffer
				var marks []string
				in := []byte(tc.in)
				for i := 0; i < len(in); i += size {
					r.feed(in[i:min(i+size, len(in))], func(p []byte) { text.Write(p) }, func(m mark) { marks = append(marks, m.String()) })
				}
				want := tc.text
				if tc.name == "ESC at the end" { // held back until what follows is known
					r.feed([]byte("x"), func(p []byte) { text.Write(p) }, func(mark) {})
					want += "x"
				}
				if text.String() != want {
					t.Errorf("text %q, want %q", text.String(), want)
				}
				if got := strings.Join(marks, " "); got != tc.marks {
					t.Errorf("marks %q, want %q", got, tc.marks)
				}
			})
		}
	}
}

func (m mark) String() string {
	switch m.kind {
	case markPrompt:
		return "A|B"
	case markCommand:
		return "C(" + m.line + ")"
	case markEnd:
		if m.exit == nil {
			return "D(?)"
		}
		return fmt.Sprintf("D(%d)", *m.exit)
	}
	return "?"
}
