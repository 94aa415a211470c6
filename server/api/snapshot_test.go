package api

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

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
