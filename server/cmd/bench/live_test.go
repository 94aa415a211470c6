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
