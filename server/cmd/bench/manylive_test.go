package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"conch/shared"
)

func TestEmitStampsEachLineWithItsPrintTime(t *testing.T) {
	var out bytes.Buffer
	before := time.Now()
	if err := emit(context.Background(), []string{"-every", "1ms", "-for", "30ms", "-stamp"}, &out); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	var last time.Time
	n := 0
	for line := range strings.Lines(out.String()) {
		n++
		if want := fmt.Sprintf("line %d of the slow command%s", n, stampSep); !strings.HasPrefix(line, want) {
			t.Fatalf("line %q does not start %q", line, want)
		}
		at, err := printedAt(line)
		if err != nil {
			t.Fatal(err)
		}
		if at.Before(before) || at.After(after) || at.Before(last) {
			t.Fatalf("line %d printed at %s: not in order within the run (%s to %s, previous %s)", n, at, before, after, last)
		}
		last = at
	}
	if n == 0 {
		t.Fatal("no lines")
	}
}

func TestEmitAfterWaitsForItsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "begin")
	tick := make(chan time.Time)
	done := make(chan error, 1)
	go func() { done <- awaitFile(context.Background(), path, tick) }()
	select {
	case tick <- time.Now(): // it looked, found nothing, and waits for the next tick
	case err := <-done:
		t.Fatalf("returned before the file existed: %v", err)
	}
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case tick <- time.Now():
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := awaitFile(ctx, path+".never", nil); err == nil || !strings.Contains(err.Error(), "did not appear") {
		t.Fatalf("a file that never appears: %v", err)
	}
}

func TestPrintedAtRejectsALineWithoutItsTime(t *testing.T) {
	at, err := printedAt("line 3 of the slow command" + stampSep + "1765069200123456789\n")
	if err != nil || at.UnixNano() != 1765069200123456789 {
		t.Fatalf("got %v, %v", at.UnixNano(), err)
	}
	for _, line := range []string{"line 3 of the slow command\n", "line 3" + stampSep + "soon\n", "line 3" + stampSep + "\n"} {
		if _, err := printedAt(line); err == nil {
			t.Errorf("%q was read", line)
		}
	}
}

// stamped is a stdout of emit -stamp whose lines were printed at the given times.
func stamped(times ...time.Time) string {
	var b strings.Builder
	for i, at := range times {
		fmt.Fprintf(&b, "line %d of the slow command%s%d\n", i+1, stampSep, at.UnixNano())
	}
	return b.String()
}

func TestPrintDelaysPairEachLineWithTheFirstNoticeThatCountsIt(t *testing.T) {
	t0 := time.Unix(1765069200, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	stdout := stamped(ms(0), ms(100), ms(200))
	firstEnd := int64(strings.Index(stdout, "\n") + 1)
	notices := []notice{
		{total: 0, at: ms(5)},                     // the command started: no line yet
		{total: firstEnd, at: ms(40)},             // the first line
		{total: firstEnd + 10, at: ms(150)},       // half of the second line
		{total: int64(len(stdout)), at: ms(1000)}, // the rest
		{total: int64(len(stdout)), at: ms(2000)}, // its end: counts nothing new
	}
	got, err := printDelays(shared.ShellOutputSnapshot{Output: shared.ShellOutput{Stdout: stdout}}, notices)
	if err != nil {
		t.Fatal(err)
	}
	if want := []time.Duration{40 * time.Millisecond, 900 * time.Millisecond, 800 * time.Millisecond}; !slices.Equal(got, want) {
		t.Fatalf("delays %v, want %v", got, want)
	}
	if _, err := printDelays(shared.ShellOutputSnapshot{Output: shared.ShellOutput{Stdout: stdout}}, notices[:3]); err == nil ||
		!strings.Contains(err.Error(), "no notification counts") {
		t.Fatalf("a line no notice counts: %v", err)
	}
}

func TestPrintDelaysRefusesOutputItCannotRead(t *testing.T) {
	code := 126
	empty := shared.ShellOutputSnapshot{Status: shared.StatusFailed,
		Output: shared.ShellOutput{Stderr: "sh: 1: /work/bin/bench: Permission denied", ExitCode: &code}}
	if _, err := printDelays(empty, nil); err == nil || !strings.Contains(err.Error(), "Permission denied") ||
		!strings.Contains(err.Error(), "exit code 126") {
		t.Fatalf("no output: %v", err)
	}
	cut := shared.ShellOutputSnapshot{Output: shared.ShellOutput{Stdout: stamped(time.Now()), Truncated: true}}
	if _, err := printDelays(cut, []notice{{total: 1 << 20}}); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("truncated output: %v", err)
	}
	foreign := shared.ShellOutputSnapshot{Output: shared.ShellOutput{Stdout: "hello\n"}}
	if _, err := printDelays(foreign, []notice{{total: 6}}); err == nil || !strings.Contains(err.Error(), "no print time") {
		t.Fatalf("a line of another command: %v", err)
	}
}

func TestNoticesOfReadShellCommandsOnly(t *testing.T) {
	stored := time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)
	at := stored.Add(3 * time.Millisecond)
	payload := func(m shared.Message) json.RawMessage {
		raw, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	command := shared.Message{ID: "m1", SessionID: "s1", Type: shared.TypeToolExecute, UpdatedAt: stored,
		Metadata: &shared.Metadata{Status: shared.StatusRunning, Normalized: &shared.Normalized{
			ShellExec: &shared.ShellExec{Output: shared.ShellOutputSummary{StdoutTotalBytes: 42}}}}}
	other := shared.Message{ID: "m2", SessionID: "s1", Type: shared.TypeToolExecute, UpdatedAt: stored,
		Metadata: &shared.Metadata{Status: shared.StatusRunning}}
	got, err := noticesOf([]frame{{payload: payload(other), at: at}, {payload: payload(command), at: at}})
	if err != nil {
		t.Fatal(err)
	}
	want := []notice{{sessionID: "s1", messageID: "m1", total: 42, stored: stored, at: at}}
	if !slices.Equal(got, want) {
		t.Fatalf("notices %+v, want %+v", got, want)
	}
	if _, err := noticesOf([]frame{{payload: json.RawMessage(`{"id":`)}}); err == nil {
		t.Fatal("a broken payload was read")
	}
}
