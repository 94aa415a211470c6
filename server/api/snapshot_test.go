package api

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/andybalholm/brotli"

	"conch/server/store"
	"conch/shared"
)

// A client holding the current version gets 304; any change of the output gives a new
// version and the new body, never the cached old one.
func TestShellOutputVersions(t *testing.T) {
	e := newEnv(t)
	sess := e.session()
	cmd := e.shell(sess.ID, "seq 3", shared.StatusRunning, &shared.ShellOutput{Stdout: "1\n"})
	target := "/api/v1/task-sessions/" + sess.ID + "/messages/" + cmd.ID + "/shell-output"

	first, body := e.do("GET", target, "")
	etag := first.Header.Get("ETag")
	if first.StatusCode != http.StatusOK || etag == "" || first.Header.Get("Cache-Control") != "no-cache" ||
		!strings.Contains(body, `"stdout":"1\n"`) {
		t.Fatalf("first: %d etag %q cache %q body %s", first.StatusCode, etag, first.Header.Get("Cache-Control"), body)
	}
	again, body := e.do("GET", target, "", "If-None-Match", etag)
	if again.StatusCode != http.StatusNotModified || body != "" || again.Header.Get("ETag") != etag {
		t.Fatalf("same version: %d %q %q", again.StatusCode, again.Header.Get("ETag"), body)
	}

	md := *cmd.Metadata
	md.Status = shared.StatusCompleted
	if _, _, err := e.store.UpdateMessage(context.Background(), cmd.ID, store.Update{Metadata: &md,
		Output: &shared.ShellOutput{Stdout: "1\n2\n3\n", ExitCode: intp(0)}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // the second answer comes from the cache
		changed, body := e.do("GET", target, "", "If-None-Match", etag)
		if changed.StatusCode != http.StatusOK || changed.Header.Get("ETag") == etag ||
			!strings.Contains(body, `"status":"completed"`) || !strings.Contains(body, `"stdout":"1\n2\n3\n","exit_code":0`) {
			t.Fatalf("after the update (%d): %d %q %s", i, changed.StatusCode, changed.Header.Get("ETag"), body)
		}
	}
}

func TestSnapshotCacheBound(t *testing.T) {
	c := newSnapshotCache(10)
	t0 := time.Unix(1, 0)
	c.put("a", t0, []byte("aaaa"))
	c.put("b", t0, []byte("bbbb"))
	c.get("a", t0)                 // a is now the most recent
	c.put("c", t0, []byte("cccc")) // 12 bytes > 10: b, the least recent, goes
	if c.get("b", t0) != nil || string(c.get("a", t0)) != "aaaa" || string(c.get("c", t0)) != "cccc" || c.size != 8 {
		t.Fatalf("after eviction: size %d", c.size)
	}
	if c.get("a", t0.Add(1)) != nil {
		t.Fatal("an entry of another version answered")
	}
	c.put("a", t0.Add(1), []byte("a2"))
	if string(c.get("a", t0.Add(1))) != "a2" || c.size != 6 {
		t.Fatalf("replace: size %d", c.size)
	}
	c.put("big", t0, make([]byte, 11))
	if c.get("big", t0) != nil || c.size != 6 {
		t.Fatal("an entry over the bound was kept")
	}
}

// With offsets, the answer holds only what came after them while the kept tail reaches
// back that far, else the whole snapshot; bad offsets change nothing and say why.
func TestShellOutputOffsets(t *testing.T) {
	e := newEnv(t)
	sess := e.session()
	cmd := e.shell(sess.ID, "seq 3", shared.StatusRunning, &shared.ShellOutput{Stdout: "1\n2\n3\n", Stderr: "w\n"})
	target := "/api/v1/task-sessions/" + sess.ID + "/messages/" + cmd.ID + "/shell-output"
	head := fmt.Sprintf(`{"message_id":%q,"status":"running","updated_at":%q,`, cmd.ID, cmd.UpdatedAt.Format(time.RFC3339Nano))
	for q, want := range map[string]string{
		"?stdout_offset=2&stderr_offset=0": `"append":true,"output":{"stdout":"2\n3\n","stderr":"w\n","stdout_total_bytes":6,"stderr_total_bytes":2,"stdout_offset":2,"stderr_offset":0}}`,
		"?stdout_offset=6&stderr_offset=2": `"append":true,"output":{"stdout_total_bytes":6,"stderr_total_bytes":2,"stdout_offset":6,"stderr_offset":2}}`,
		"?stdout_offset=6":                 `"append":true,"output":{"stderr":"w\n","stdout_total_bytes":6,"stderr_total_bytes":2,"stdout_offset":6,"stderr_offset":0}}`,
		"?stdout_offset=7&stderr_offset=0": `"append":false,"output":{"stdout":"1\n2\n3\n","stderr":"w\n","stdout_total_bytes":6,"stderr_total_bytes":2}}`,
	} {
		res, body := e.do("GET", target+q, "")
		if res.StatusCode != http.StatusOK || body != head+want || res.Header.Get("ETag") == "" {
			t.Errorf("%s: %d %s\nwant %s", q, res.StatusCode, body, head+want)
		}
	}
	res, _ := e.do("GET", target+"?stdout_offset=2", "")
	if again, body := e.do("GET", target+"?stdout_offset=2", "", "If-None-Match", res.Header.Get("ETag")); again.StatusCode != http.StatusNotModified || body != "" {
		t.Errorf("offsets with the current version: %d %q", again.StatusCode, body)
	}
	for _, q := range []string{"?stdout_offset=-1", "?stdout_offset=abc", "?stdout_offset=", "?stdout_offset=1.5", "?stderr_offset=1e3",
		"?stdout_offset=99999999999999999999"} {
		name, _, _ := strings.Cut(strings.TrimPrefix(q, "?"), "=")
		want := `{"error":"` + name + ` must be a whole number of bytes, 0 or more","code":"invalid"}`
		if body := e.expect(http.StatusBadRequest, "GET", target+q, "", nil); body != want {
			t.Errorf("%s: %s", q, body)
		}
	}
	if body := e.expect(http.StatusNotFound, "GET", "/api/v1/task-sessions/"+sess.ID+"/messages/nope/shell-output?stdout_offset=0", "", nil); body != `{"error":"message not found","code":"not_found"}` {
		t.Errorf("offsets of a missing message: %s", body)
	}
}

// Answers over 1 KiB are compressed as the client accepts (brotli first), the same bytes
// once decoded; small ones and clients that accept nothing go as they are.
func TestShellOutputCompressed(t *testing.T) {
	e := newEnv(t)
	sess := e.session()
	big := strings.Repeat("ok  \tconch/pkg\t0.012s\n", 400)
	cmd := e.shell(sess.ID, "go test", shared.StatusCompleted, &shared.ShellOutput{Stdout: big, Stderr: "e", ExitCode: intp(0)})
	small := e.shell(sess.ID, "true", shared.StatusCompleted, &shared.ShellOutput{Stdout: "tiny", ExitCode: intp(0)})
	base := "/api/v1/task-sessions/" + sess.ID + "/messages/"
	_, plain := e.do("GET", base+cmd.ID+"/shell-output", "")
	decode := map[string]func(io.Reader) (io.Reader, error){
		"":     func(r io.Reader) (io.Reader, error) { return r, nil },
		"br":   func(r io.Reader) (io.Reader, error) { return brotli.NewReader(r), nil },
		"gzip": func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) },
	}
	for _, tc := range []struct{ target, accept, want, body string }{
		{base + cmd.ID + "/shell-output", "gzip, deflate, br, zstd", "br", plain},
		{base + cmd.ID + "/shell-output", "gzip, deflate, br, zstd", "br", plain}, // from the cache
		{base + cmd.ID + "/shell-output", "br;q=0, gzip", "gzip", plain},
		{base + cmd.ID + "/shell-output", "identity", "", plain},
		{base + cmd.ID + "/shell-output", "", "", plain},
		{base + cmd.ID + "/shell-output?stdout_offset=0", "br", "br", ""},
		{base + cmd.ID + "/shell-output/raw?stream=stdout", "gzip", "gzip", big},
		{base + cmd.ID + "/shell-output/raw?stream=stderr", "br", "", "e"},
		{base + small.ID + "/shell-output", "br", "", ""},
	} {
		res, raw := e.do("GET", tc.target, "", "Accept-Encoding", tc.accept)
		got := res.Header.Get("Content-Encoding")
		r, err := decode[got](strings.NewReader(raw))
		var body []byte
		if err == nil {
			body, err = io.ReadAll(r)
		}
		if res.StatusCode != http.StatusOK || got != tc.want || err != nil || (tc.body != "" && string(body) != tc.body) ||
			res.Header.Get("Vary") != "Accept-Encoding" {
			t.Errorf("%s, Accept-Encoding %q: %d, Content-Encoding %q (want %q), Vary %q, %v", tc.target, tc.accept, res.StatusCode,
				got, tc.want, res.Header.Get("Vary"), err)
		}
		if got != "" && len(raw) >= len(body) {
			t.Errorf("%s: %d bytes compressed from %d", tc.target, len(raw), len(body))
		}
	}
}

// A compressed form is made once per version and counts against the cache's bound.
func TestSnapshotCacheEncoded(t *testing.T) {
	c := newSnapshotCache(1 << 20)
	t0 := time.Unix(1, 0)
	body := []byte(strings.Repeat("compress me ", 1000))
	c.put("a", t0, body)
	first := c.encoded("a", t0, "br", body)
	if again := c.encoded("a", t0, "br", body); &again[0] != &first[0] {
		t.Error("the compressed form was made again")
	}
	if c.size != len(body)+len(first) {
		t.Errorf("size %d, want %d", c.size, len(body)+len(first))
	}
	if other := c.encoded("a", t0.Add(1), "br", body); &other[0] == &first[0] || c.size != len(body)+len(first) {
		t.Error("a form of another version was answered or kept")
	}
	c.put("a", t0.Add(1), body)
	if c.size != len(body) {
		t.Errorf("after a new version: size %d, want %d", c.size, len(body))
	}
}
