package api

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"

	"conch/shared"
)

func TestNegotiate(t *testing.T) {
	for _, tc := range []struct {
		accept string
		n      int
		want   string
	}{
		{"gzip, deflate, br, zstd", 2048, "br"},
		{"gzip, deflate, br", compressMin, ""}, // 1 KiB is not over 1 KiB
		{"GZIP", 2048, "gzip"},
		{"br;q=0, gzip;q=0.5", 2048, "gzip"},
		{"br; q=0.0", 2048, ""},
		{"deflate, identity", 2048, ""},
		{"*", 2048, ""},
		{"", 2048, ""},
	} {
		if got := negotiate(tc.accept, tc.n); got != tc.want {
			t.Errorf("negotiate(%q, %d) = %q, want %q", tc.accept, tc.n, got, tc.want)
		}
	}
}

// buildLog is the JSON snapshot of a typical build log at the 256 KiB bound, coloured.
func buildLog() []byte {
	var b strings.Builder
	for i := 0; b.Len() < shared.OutputLimit-200; i++ {
		switch i % 5 {
		case 0:
			fmt.Fprintf(&b, "\x1b[32mok\x1b[0m  \tconch/server/pkg%d\t%d.%03ds\n", i, i%7, i%1000)
		case 1:
			fmt.Fprintf(&b, "=== RUN   TestSomething%d/case_%d\n", i, i%13)
		case 2:
			fmt.Fprintf(&b, "    thing_test.go:%d: got %d, want %d\n", 10+i%300, i, i+1)
		case 3:
			fmt.Fprintf(&b, "--- PASS: TestSomething%d (0.%02ds)\n", i, i%100)
		default:
			fmt.Fprintf(&b, "go: downloading example.com/mod%d v1.%d.%d\n", i%50, i%9, i%17)
		}
	}
	body, _ := json.Marshal(shared.ShellOutputSnapshot{MessageID: "m", Status: shared.StatusCompleted,
		Output: shared.ShellOutput{Stdout: b.String()}})
	return body
}

// BenchmarkCompress measures the encodings on a 256 KiB build log snapshot; the sizes
// are reported as bytes per answer (go test -bench Compress -run X ./server/api).
func BenchmarkCompress(b *testing.B) {
	body := buildLog()
	for _, tc := range []struct {
		name string
		do   func([]byte) []byte
	}{
		{"br5", func(p []byte) []byte { return compress("br", p) }},
		{"br11", func(p []byte) []byte {
			var out bytes.Buffer
			w := brotli.NewWriterLevel(&out, brotli.BestCompression)
			w.Write(p)
			w.Close()
			return out.Bytes()
		}},
		{"gzip", func(p []byte) []byte { return compress("gzip", p) }},
		{"gzip9", func(p []byte) []byte {
			var out bytes.Buffer
			w, _ := gzip.NewWriterLevel(&out, gzip.BestCompression)
			w.Write(p)
			w.Close()
			return out.Bytes()
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			var n int
			for b.Loop() {
				n = len(tc.do(body))
			}
			b.ReportMetric(float64(len(body)), "plain-bytes")
			b.ReportMetric(float64(n), "encoded-bytes")
		})
	}
}

// Lists, and the session page that carries the newest of them, are compressed as the
// client accepts like snapshots (docs/API.md: JSON answers over 1 KiB), the same bytes
// once decoded; a client that accepts nothing gets them as they are.
func TestListsCompressed(t *testing.T) {
	e := newEnv(t, withRealUI)
	sess := e.session()
	for i := range 20 {
		e.text(sess.ID, fmt.Sprintf("prompt %d: run the tests of the store again", i))
		e.shell(sess.ID, "go test ./server/store/...", shared.StatusCompleted, &shared.ShellOutput{Stdout: "ok", ExitCode: intp(0)})
	}
	for _, target := range []string{
		"/api/v1/task-sessions/" + sess.ID + "/messages?limit=40",
		"/sessions/" + sess.ID,
	} {
		_, plain := e.do("GET", target, "")
		for accept, want := range map[string]string{"gzip, deflate, br, zstd": "br", "gzip": "gzip", "": ""} {
			res, raw := e.do("GET", target, "", "Accept-Encoding", accept)
			got := res.Header.Get("Content-Encoding")
			body, err := decoded(got, raw)
			if got != want || err != nil || !strings.Contains(string(body), "prompt 19") || (want != "" && len(raw) >= len(body)) ||
				res.Header.Get("Vary") != "Accept-Encoding" {
				t.Errorf("%s, Accept-Encoding %q: Content-Encoding %q (want %q), %d bytes for %d, Vary %q, %v", target, accept,
					got, want, len(raw), len(body), res.Header.Get("Vary"), err)
			}
			if strings.HasPrefix(target, "/api/") && string(body) != plain {
				t.Errorf("%s, Accept-Encoding %q: decodes to another answer", target, accept)
			}
		}
	}
}
