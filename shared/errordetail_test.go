package shared

import (
	"strings"
	"testing"
)

func TestHeadline(t *testing.T) {
	long := strings.Repeat("é", HeadlineLimit) // two bytes each: the cut falls inside one
	for _, c := range []struct {
		in, line string
		more     bool
	}{
		{"agent crashed", "agent crashed", false},
		{"\n  agent crashed \n\n", "agent crashed", false},
		{"failed: quota\nstderr:\ntrace", "failed: quota", true},
		{long, strings.Repeat("é", HeadlineLimit/2) + "…", true},
		{"", "", false},
	} {
		line, more := Headline(c.in)
		if line != c.line || more != c.more {
			t.Errorf("Headline(%.40q) = %q, %v; want %q, %v", c.in, line, more, c.line, c.more)
		}
	}
}
