package shared

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func intp(i int) *int { return &i }

func TestSummarize(t *testing.T) {
	started := time.Date(2026, 12, 3, 8, 0, 0, 5e8, time.UTC)
	finished := started.Add(12300 * time.Millisecond)
	tests := []struct {
		name string
		in   ShellOutput
		want string
	}{
		{"stdout only", ShellOutput{Stdout: "hello\n"},
			`{"has_output":true,"stdout_bytes":6,"stderr_bytes":0,"truncated":false,"stdout_total_bytes":6,"stderr_total_bytes":0}`},
		{"stderr only", ShellOutput{Stderr: "boom\n", ExitCode: intp(2)},
			`{"has_output":true,"stdout_bytes":0,"stderr_bytes":5,"truncated":false,"exit_code":2,"stdout_total_bytes":0,"stderr_total_bytes":5}`},
		{"both", ShellOutput{Stdout: "a", Stderr: "bc", Truncated: true},
			`{"has_output":true,"stdout_bytes":1,"stderr_bytes":2,"truncated":true,"stdout_total_bytes":1,"stderr_total_bytes":2}`},
		{"empty running", ShellOutput{},
			`{"has_output":false,"stdout_bytes":0,"stderr_bytes":0,"truncated":false,"stdout_total_bytes":0,"stderr_total_bytes":0}`},
		{"exit 0 is known", ShellOutput{ExitCode: intp(0)},
			`{"has_output":false,"stdout_bytes":0,"stderr_bytes":0,"truncated":false,"exit_code":0,"stdout_total_bytes":0,"stderr_total_bytes":0}`},
		{"signal", ShellOutput{Stdout: "x", Signal: "SIGKILL"},
			`{"has_output":true,"stdout_bytes":1,"stderr_bytes":0,"truncated":false,"signal":"SIGKILL","stdout_total_bytes":1,"stderr_total_bytes":0}`},
		{"totals, times", ShellOutput{Stdout: "tail", StdoutTotalBytes: 50 << 20, StderrTotalBytes: 3,
			StartedAt: &started, FinishedAt: &finished},
			`{"has_output":true,"stdout_bytes":4,"stderr_bytes":0,"truncated":false,"stdout_total_bytes":52428800,"stderr_total_bytes":3,` +
				`"started_at":"2026-12-03T08:00:00.5Z","finished_at":"2026-12-03T08:00:12.8Z"}`},
		{"a total short of the kept bytes is raised", ShellOutput{Stdout: "abc", StdoutTotalBytes: 1},
			`{"has_output":true,"stdout_bytes":3,"stderr_bytes":0,"truncated":false,"stdout_total_bytes":3,"stderr_total_bytes":0}`},
		// UTF-8 bytes, not characters: "héllo" is 6 bytes, "日本" 6, "🙂" 4.
		{"multibyte", ShellOutput{Stdout: "héllo", Stderr: "日本🙂"},
			`{"has_output":true,"stdout_bytes":6,"stderr_bytes":10,"truncated":false,"stdout_total_bytes":6,"stderr_total_bytes":10}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.in
			if tt.in.ExitCode != nil {
				code := *tt.in.ExitCode
				before.ExitCode = &code
			}
			got, err := json.Marshal(tt.in.Summarize())
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("summary\n got %s\nwant %s", got, tt.want)
			}
			if !reflect.DeepEqual(before, tt.in) {
				t.Errorf("input changed: %+v -> %+v", before, tt.in)
			}
		})
	}
}

func TestBoundedSanitizesInvalidUTF8(t *testing.T) {
	in := ShellOutput{Stdout: "ok\xff\xfe!", Stderr: "\xc3", StdoutTotalBytes: 5, StderrTotalBytes: 1}
	got := in.Bounded()
	if got.Stdout != "ok\uFFFD!" || got.Stderr != "\uFFFD" || got.Truncated {
		t.Fatalf("Bounded() = %+v", got)
	}
	// The one invalid byte became three: produced is never shown as less than kept.
	if got.StdoutTotalBytes != 6 || got.StderrTotalBytes != 3 {
		t.Fatalf("totals %d, %d after Bounded, want 6, 3", got.StdoutTotalBytes, got.StderrTotalBytes)
	}
	if s := got.Summarize(); s.StdoutBytes != len("ok\uFFFD!") {
		t.Fatalf("summary counts %d bytes, body has %d", s.StdoutBytes, len(got.Stdout))
	}
	if in.Stdout != "ok\xff\xfe!" {
		t.Fatal("input changed")
	}
}

// The contract states the bound in bytes, so this test does too: a change of OutputLimit
// by a single byte fails here, where the tests written relative to the constant would pass.
func TestBoundedKeeps262144Bytes(t *testing.T) {
	for _, tt := range []struct {
		in, kept  int
		truncated bool
	}{
		{262143, 262143, false},
		{262144, 262144, false},
		{262145, 262144, true},
		{262146, 262144, true},
	} {
		// A distinct first byte shows whether the head was kept or the tail.
		in := "b" + strings.Repeat("a", tt.in-1)
		got := ShellOutput{Stdout: in, Stderr: in}.Bounded()
		if len(got.Stdout) != tt.kept || len(got.Stderr) != tt.kept || got.Truncated != tt.truncated ||
			got.Stdout != in[tt.in-tt.kept:] {
			t.Errorf("%d bytes: kept %d and %d bytes, truncated=%v; want the last %d, truncated=%v",
				tt.in, len(got.Stdout), len(got.Stderr), got.Truncated, tt.kept, tt.truncated)
		}
	}
}

func TestBoundEdges(t *testing.T) {
	a := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct {
		name      string
		in        string
		wantLen   int
		wantCut   bool
		wantStart string
	}{
		{"one under", a(OutputLimit - 1), OutputLimit - 1, false, "a"},
		{"exact", a(OutputLimit), OutputLimit, false, "a"},
		{"one over", "b" + a(OutputLimit), OutputLimit, true, "a"},
		// A 3-byte character whose first byte falls just before the cut: the cut moves past it.
		{"3-byte straddles", "€" + a(OutputLimit-1), OutputLimit - 1, true, "a"},
		{"3-byte straddles by two", "x€" + a(OutputLimit-2), OutputLimit - 2, true, "a"},
		// A 4-byte character at the cut: kept whole when it starts exactly at the cut.
		{"4-byte at cut", "x" + "🙂" + a(OutputLimit-4), OutputLimit, true, "🙂"},
		{"4-byte straddles", "🙂" + a(OutputLimit-1), OutputLimit - 1, true, "a"},
		// "\xff" becomes the 3-byte U+FFFD, which then no longer fits whole and is dropped.
		{"invalid grows past limit", "\xff" + a(OutputLimit-1), OutputLimit - 1, true, "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, cut := Bound(tt.in, OutputLimit)
			if cut != tt.wantCut || len(got) > OutputLimit || !utf8.ValidString(got) {
				t.Fatalf("Bound: len %d cut %v valid %v", len(got), cut, utf8.ValidString(got))
			}
			if len(got) != tt.wantLen || !strings.HasPrefix(got, tt.wantStart) {
				t.Fatalf("got len %d prefix %q, want len %d prefix %q", len(got), got[:4], tt.wantLen, tt.wantStart)
			}
		})
	}
}

func FuzzBound(f *testing.F) {
	for _, seed := range []string{"", "a", "\xff", "€🙂", strings.Repeat("é", OutputLimit/2+1),
		strings.Repeat("\xf0\x9f\x99", OutputLimit/3+2), "x" + strings.Repeat("🙂", OutputLimit/4)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, cut := Bound(in, OutputLimit)
		clean := strings.ToValidUTF8(in, "\uFFFD")
		if !utf8.ValidString(got) {
			t.Fatal("not valid UTF-8")
		}
		if len(got) > OutputLimit {
			t.Fatalf("len %d over the limit", len(got))
		}
		if !strings.HasSuffix(clean, got) {
			t.Fatal("not a suffix of the sanitised input")
		}
		if cut != (len(got) < len(clean)) {
			t.Fatalf("cut=%v but kept %d of %d", cut, len(got), len(clean))
		}
		if len(clean)-len(got) > 0 && len(got) < OutputLimit-3 {
			t.Fatalf("kept %d bytes: more than one character short of the limit", len(got))
		}
	})
}

func TestSince(t *testing.T) {
	snap := func(stdout string, outTotal int64, stderr string, errTotal int64) ShellOutputSnapshot {
		return ShellOutputSnapshot{MessageID: "m", Status: StatusRunning, Output: ShellOutput{Stdout: stdout, StdoutTotalBytes: outTotal,
			Stderr: stderr, StderrTotalBytes: errTotal, Truncated: outTotal > int64(len(stdout))}}
	}
	tests := []struct {
		name string
		s    ShellOutputSnapshot
		from Offsets
		want string // the output as JSON, then the value of append
	}{
		{"nothing new", snap("abcdef", 6, "", 0), Offsets{6, 0},
			`{"stdout_total_bytes":6,"stdout_offset":6,"stderr_offset":0} true`},
		{"the rest of both", snap("abcdef", 6, "warn\n", 5), Offsets{2, 4},
			`{"stdout":"cdef","stderr":"\n","stdout_total_bytes":6,"stderr_total_bytes":5,"stdout_offset":2,"stderr_offset":4} true`},
		{"from the start", snap("ab", 2, "", 0), Offsets{0, 0},
			`{"stdout":"ab","stdout_total_bytes":2,"stdout_offset":0,"stderr_offset":0} true`},
		{"inside the kept tail", snap("defghi", 100, "", 0), Offsets{96, 0},
			`{"stdout":"fghi","truncated":true,"stdout_total_bytes":100,"stdout_offset":96,"stderr_offset":0} true`},
		{"the tail moved past the offset: all", snap("defghi", 100, "", 0), Offsets{50, 0},
			`{"stdout":"defghi","truncated":true,"stdout_total_bytes":100} false`},
		{"past the end: all", snap("abc", 3, "", 0), Offsets{4, 0},
			`{"stdout":"abc","stdout_total_bytes":3} false`},
		{"stderr past its end: all", snap("abc", 3, "e", 1), Offsets{3, 2},
			`{"stdout":"abc","stderr":"e","stdout_total_bytes":3,"stderr_total_bytes":1} false`},
		{"negative: all", snap("abc", 3, "", 0), Offsets{-1, 0},
			`{"stdout":"abc","stdout_total_bytes":3} false`},
		{"inside a character: all", snap("héllo", 6, "", 0), Offsets{2, 0},
			`{"stdout":"héllo","stdout_total_bytes":6} false`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.s.Since(tt.from)
			raw, _ := json.Marshal(got.Output)
			if s := string(raw) + " " + fmt.Sprint(*got.Append); s != tt.want {
				t.Errorf("Since(%v)\n got %s\nwant %s", tt.from, s, tt.want)
			}
		})
	}
}

// A reader that asks for what is new after what it holds, and extends it with the
// answers, holds what the whole snapshot holds, also as the kept tail slides past
// characters of several bytes; an answer that does not start where it ends is refused.
func TestSinceThenExtend(t *testing.T) {
	var produced strings.Builder
	var held ShellOutputSnapshot
	for i := 0; i < 12; i++ {
		produced.WriteString(strings.Repeat("日本語 line "+fmt.Sprint(i)+"\n", 3000*(i%3)+1))
		whole := ShellOutputSnapshot{MessageID: "m", Status: StatusRunning, Output: ShellOutput{Stdout: produced.String()}.Bounded()}
		answer := whole.Since(held.End())
		if *answer.Append {
			var ok bool
			if held, ok = held.Extend(answer); !ok {
				t.Fatalf("step %d: an answer to held.End() refused", i)
			}
		} else {
			held, held.Append = answer, nil
		}
		if held.Output.Stdout != whole.Output.Stdout || held.Output.Truncated != whole.Output.Truncated || held.End() != whole.End() {
			t.Fatalf("step %d (append %v): held %d bytes (truncated %v), whole %d (truncated %v)", i, *answer.Append,
				len(held.Output.Stdout), held.Output.Truncated, len(whole.Output.Stdout), whole.Output.Truncated)
		}
	}
	stale := held.Since(Offsets{0, 0})
	if _, ok := held.Extend(stale); ok || *stale.Append {
		t.Fatal("an answer from other offsets was taken")
	}
}
