package shared

import (
	"encoding/json"
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
