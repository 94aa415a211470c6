package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
)

func TestEmitWritesNumberedLinesUntilTheEnd(t *testing.T) {
	var out bytes.Buffer
	if err := emit(context.Background(), []string{"-every", "1ms", "-for", "50ms"}, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) == 0 || lines[0] != "line 1 of the slow command" {
		t.Fatalf("output %q", out.String())
	}
	for i, l := range lines {
		if want := fmt.Sprintf("line %d of the slow command", i+1); l != want {
			t.Fatalf("line %d is %q, want %q", i+1, l, want)
		}
	}
	if err := emit(context.Background(), []string{"-every", "0s"}, &out); err == nil {
		t.Fatal("a zero interval was accepted")
	}
}

// The lines of ticks a loaded machine skipped come with the next tick, numbered in order;
// a tick with nothing due writes nothing.
func TestEmitLinesCatchesUp(t *testing.T) {
	var out bytes.Buffer
	printed, err := emitLines(&out, 1, 4, false)
	if err != nil || printed != 4 || out.String() != "line 2 of the slow command\nline 3 of the slow command\nline 4 of the slow command\n" {
		t.Fatalf("printed %d, %q, %v", printed, out.String(), err)
	}
	out.Reset()
	if printed, err := emitLines(&out, 4, 4, false); err != nil || printed != 4 || out.Len() != 0 {
		t.Fatalf("nothing due: printed %d, %q, %v", printed, out.String(), err)
	}
	if _, err := emitLines(&out, 0, 1, true); err != nil || !strings.HasPrefix(out.String(), "line 1 of the slow command"+stampSep) {
		t.Fatalf("a stamped line: %q, %v", out.String(), err)
	}
}
