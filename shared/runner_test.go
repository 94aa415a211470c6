package shared

import (
	"strings"
	"testing"
)

func TestCheckRunner(t *testing.T) {
	many := make([]string, MaxRunnerLabels+1)
	for i := range many {
		many[i] = "l" + strings.Repeat("x", i)
	}
	for _, c := range []struct {
		name     string
		labels   []string
		capacity int
		problem  string // "" when it passes
	}{
		{"gpu-1", []string{"gpu", "os=linux", "zone=eu-west.1"}, 4, ""},
		{"r", nil, MaxRunnerCapacity, ""},
		{"", nil, 1, "a runner's name"},
		{"-r", nil, 1, "a runner's name"},
		{strings.Repeat("r", 65), nil, 1, "a runner's name"},
		{"r", nil, 0, "capacity is 1 to"},
		{"r", nil, MaxRunnerCapacity + 1, "capacity is 1 to"},
		{"r", []string{strings.Repeat("g", 63), "os=Linux-6.1"}, 1, ""},
		{"r", []string{strings.Repeat("g", 64)}, 1, "is not a name"},
		{"r", []string{"os=-x"}, 1, `label "os=-x"`},
		{"r", []string{"GPU"}, 1, `label "GPU"`},
		{"r", []string{"os="}, 1, `label "os="`},
		{"r", []string{"a=b=c"}, 1, `label "a=b=c"`},
		{"r", []string{"gpu\n"}, 1, `label "gpu\n"`},
		{"r", []string{""}, 1, `label ""`},
		{"r", []string{"gpu", "gpu"}, 1, `"gpu" is given twice`},
		{"r", many, 1, "at most 32 labels"},
	} {
		err := CheckRunner(c.name, c.labels, c.capacity)
		if c.problem == "" && err != nil || c.problem != "" && (ErrorCode(err) != CodeInvalid || !strings.Contains(err.Error(), c.problem)) {
			t.Errorf("CheckRunner(%q, %q, %d) = %v, want %q", c.name, c.labels, c.capacity, err, c.problem)
		}
	}
}
