package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"conch/app/ui"
	"conch/server/store"
	"conch/shared"
)

var registerRoutes sync.Once

// withRealUI serves the go-app UI itself, so the first page load is the real one.
func withRealUI(c *Config) {
	registerRoutes.Do(ui.Routes)
	c.UI = ui.Handler(nil, false)
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
// the first page load. Only the snapshot endpoint may return it.
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
	for _, name := range []string{"REST list", "WS list", "updated"} {
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
