package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"conch/server/store"
	"conch/shared"
)

// An error message's list entry carries its headline and the size of the whole text;
// GET .../error-detail answers the whole text, with the snapshot's 404 rules and ETag / 304.
func TestErrorDetail(t *testing.T) {
	e := newEnv(t)
	s1, s2 := e.session(), e.session()
	whole := "The agent's turn failed: Internal error: quota exceeded\n" + strings.Repeat("Prompt: you are an agent\n", 500)
	failed, err := e.store.CreateMessage(context.Background(), store.NewMessage{SessionID: s1.ID, AuthorType: shared.AuthorAgent,
		Type: shared.TypeError, Content: whole})
	if err != nil {
		t.Fatal(err)
	}
	shell := e.shell(s1.ID, "ls", shared.StatusCompleted, nil)
	base := "/api/v1/task-sessions/" + s1.ID + "/messages/"

	list := e.expect(http.StatusOK, "GET", base[:len(base)-1], "", nil)
	entry := fmt.Sprintf(`"content":"The agent's turn failed: Internal error: quota exceeded","metadata":{"detail_bytes":%d}`, len(whole))
	if !strings.Contains(list, entry) || strings.Contains(list, "Prompt:") {
		t.Errorf("list carries more than the headline, or not it: %.600s", list)
	}
	resp, got := e.do("GET", base+failed.ID+"/error-detail", "")
	want := fmt.Sprintf(`{"message_id":%q,"updated_at":%q,"text":%q}`, failed.ID, failed.UpdatedAt.Format("2006-01-02T15:04:05.999999999Z07:00"), whole)
	if resp.StatusCode != http.StatusOK || got != want {
		t.Errorf("error detail %d\n got %.300s\nwant %.300s", resp.StatusCode, got, want)
	}
	if resp, body := e.do("GET", base+failed.ID+"/error-detail", "", "If-None-Match", resp.Header.Get("ETag")); resp.StatusCode != http.StatusNotModified || body != "" {
		t.Errorf("If-None-Match: %d %q", resp.StatusCode, body)
	}
	for name, target := range map[string]string{
		"missing":       base + "nope/error-detail",
		"cross-session": "/api/v1/task-sessions/" + s2.ID + "/messages/" + failed.ID + "/error-detail",
		"a shell":       base + shell.ID + "/error-detail",
	} {
		if body := e.expect(http.StatusNotFound, "GET", target, "", nil); body != `{"error":"message not found","code":"not_found"}` {
			t.Errorf("%s: %s", name, body)
		}
	}
}
