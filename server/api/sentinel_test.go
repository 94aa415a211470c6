package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"conch/app/ui"
	"conch/server/store"
	"conch/shared"
)

var registerRoutes sync.Once

// withRealUI serves the go-app UI itself, so the first page load is the real one.
func withRealUI(c *Config) {
	registerRoutes.Do(ui.Routes)
	c.UI = func(boot func(string) (shared.Boot, error)) http.Handler { return ui.Handler(nil, false, boot) }
}

// sentinelOutput is about size bytes of a token unique to this run.
func sentinelOutput(t *testing.T, size int) (token, body string) {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	token = "SENTINEL-" + hex.EncodeToString(b) + "\n"
	return token, strings.Repeat(token, size/len(token))
}

// TestOutputBodiesNeverLeaveThroughBrowserPaths stores a command whose stdout is a large
// unique sentinel and looks for it in every payload a browser gets without asking for
// the output: the REST list, the WebSocket list, the added and updated notifications and
// the HTML of the session's page, which carries its newest messages. Only the snapshot endpoint may return it.
func TestOutputBodiesNeverLeaveThroughBrowserPaths(t *testing.T) {
	e := newEnv(t, withRealUI)
	s := e.session()
	token, stdout := sentinelOutput(t, 200<<10)
	w := mustDial(t, e.listen())
	w.request(shared.ActionSubscribe, shared.SessionRef{SessionID: s.ID})

	ctx := context.Background()
	msg := e.shell(s.ID, "cat big.log", shared.StatusRunning, &shared.ShellOutput{Stdout: stdout})
	e.hub.MessageAdded(msg)
	md := *msg.Metadata
	md.Status = shared.StatusCompleted
	_, tail := sentinelOutput(t, 1000)
	final := shared.ShellOutput{Stdout: stdout + tail, Stderr: token, ExitCode: intp(0)}
	updated, changed, err := e.store.UpdateMessage(ctx, msg.ID, store.Update{Metadata: &md, Output: &final})
	if err != nil || !changed {
		t.Fatalf("update: %v, changed %v", err, changed)
	}
	e.hub.MessageUpdated(updated)

	wantStdout := fmt.Sprintf(`"stdout_bytes":%d`, len(final.Stdout))
	wantStderr := fmt.Sprintf(`"stderr_bytes":%d`, len(token))
	paths := map[string]string{
		"REST list": e.expect(http.StatusOK, "GET", "/api/v1/task-sessions/"+s.ID+"/messages", "", nil),
		"WS list":   string(w.request(shared.ActionMessageList, map[string]string{"session_id": s.ID}).Payload),
	}
	added, upd := w.next(), w.next()
	if added.Action != shared.ActionMessageAdded || upd.Action != shared.ActionMessageUpdated {
		t.Fatalf("notifications %s, %s", added.Action, upd.Action)
	}
	paths["added"], paths["updated"] = string(added.Payload), string(upd.Payload)
	paths["page load"] = e.expect(http.StatusOK, "GET", "/sessions/"+s.ID, "", nil)
	if !strings.Contains(paths["page load"], "app.js") {
		t.Errorf("the page load is not go-app's page: %.300s", paths["page load"])
	}

	for name, payload := range paths {
		if strings.Contains(payload, "SENTINEL-") {
			t.Errorf("%s carries the output body (%d bytes)", name, len(payload))
		}
		if len(payload) > 4096 && name != "page load" {
			t.Errorf("%s is %d bytes for one command", name, len(payload))
		}
	}
	if !strings.Contains(paths["added"], fmt.Sprintf(`"has_output":true,"stdout_bytes":%d,"stderr_bytes":0`, len(stdout))) {
		t.Errorf("added lacks the summary: %s", paths["added"])
	}
	// The page load carries the command too (prerendered and in its boot payload), summarised.
	for _, name := range []string{"REST list", "WS list", "updated", "page load"} {
		if !strings.Contains(paths[name], `"has_output":true,`+wantStdout+","+wantStderr+`,"truncated":false,"exit_code":0`) {
			t.Errorf("%s lacks the final summary: %s", name, paths[name])
		}
	}
	// Live and reloaded agree byte for byte.
	if !strings.Contains(paths["REST list"], paths["updated"]) {
		t.Errorf("the updated notification differs from the listed message:\n%s\n%s", paths["updated"], paths["REST list"])
	}

	var snap shared.ShellOutputSnapshot
	e.expect(http.StatusOK, "GET", "/api/v1/task-sessions/"+s.ID+"/messages/"+msg.ID+"/shell-output", "", &snap)
	if snap.Output.Stdout != final.Stdout || snap.Output.Stderr != token || snap.Status != shared.StatusCompleted {
		t.Errorf("snapshot: status %s, %d stdout bytes, stderr %q", snap.Status, len(snap.Output.Stdout), snap.Output.Stderr)
	}
}

// TestSessionPageCarriesItsNewestMessages: the HTML of a session page carries the session
// and its newest page of messages as the REST list projects them, byte for byte, in an
// element no message text can end; it is never answered from a cache; an unknown session
// says so.
func TestSessionPageCarriesItsNewestMessages(t *testing.T) {
	e := newEnv(t, withRealUI)
	s := e.session()
	for i := range 3 {
		e.text(s.ID, fmt.Sprintf("message %d </script><script>alert(1)</script> & more", i))
	}
	cmd := e.shell(s.ID, "echo '</script>'", shared.StatusCompleted, &shared.ShellOutput{Stdout: "</script>\n", ExitCode: intp(0)})

	resp, html := e.do("GET", "/sessions/"+s.ID, "", "If-None-Match", "*")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("page: %d", resp.StatusCode)
	}
	if cc, etag := resp.Header.Get("Cache-Control"), resp.Header.Get("ETag"); cc != "no-store" || etag != "" {
		t.Errorf("a session page may be cached: Cache-Control %q, ETag %q", cc, etag)
	}
	open := `<script type="application/json" id="` + shared.BootElementID + `">`
	start := strings.Index(html, open)
	if start < 0 {
		t.Fatalf("no boot payload in the page:\n%s", html)
	}
	payload, _, ok := strings.Cut(html[start+len(open):], "</script>")
	if !ok {
		t.Fatal("the boot payload's element does not end")
	}
	var boot struct {
		Session  json.RawMessage `json:"session"`
		Messages json.RawMessage `json:"messages"`
		At       time.Time       `json:"at"`
	}
	if err := json.Unmarshal([]byte(payload), &boot); err != nil {
		t.Fatalf("the boot payload ends early or is not JSON (%v): %s", err, payload)
	}
	list := e.expect(http.StatusOK, "GET", "/api/v1/task-sessions/"+s.ID+"/messages?sort=desc&limit=100", "", nil)
	if string(boot.Messages) != strings.TrimSpace(list) {
		t.Errorf("the page's messages differ from the list:\n%s\n%s", boot.Messages, list)
	}
	session := e.expect(http.StatusOK, "GET", "/api/v1/task-sessions/"+s.ID, "", nil)
	if string(boot.Session) != strings.TrimSpace(session) {
		t.Errorf("the page's session differs from the API's:\n%s\n%s", boot.Session, session)
	}
	if !boot.At.Equal(e.clock.Now()) {
		t.Errorf("boot read at %v", boot.At)
	}
	// Prerendered: the rows are in the HTML before the app runs, with their text escaped.
	for _, want := range []string{`data-message-id="` + cmd.ID + `"`, "message 2 &lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt; &amp; more"} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Count(html, "<script>") != 0 {
		t.Error("a message's text became a script element")
	}

	resp, html = e.do("GET", "/sessions/no-such-session", "")
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(html, "This session does not exist.") || strings.Contains(html, open) {
		t.Errorf("unknown session: %d\n%s", resp.StatusCode, html)
	}
}
