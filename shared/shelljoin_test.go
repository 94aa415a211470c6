//go:build !js

package shared

import (
	"os/exec"
	"reflect"
	"strings"
	"testing"
)

// sh reads a joined line back as the same words, and plain words stay unquoted.
func TestShellJoin(t *testing.T) {
	words := []string{"printf", "%s\\n", "plain", "/tmp/it's here", "a b", "", "$HOME", "tab\there", "*", "ünï"}
	line := ShellJoin(words...)
	if !strings.HasPrefix(line, "printf '%s\\n' plain '/tmp/it'\\''s here'") {
		t.Errorf("line %q quotes more than needed", line)
	}
	out, err := exec.Command("sh", "-c", line).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"); !reflect.DeepEqual(got, words[2:]) {
		t.Fatalf("sh -c %s printed %q, want %q", line, got, words[2:])
	}
}
