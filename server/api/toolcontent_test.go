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

// GET .../tool-content: the whole kept content, with the snapshot's 404 rules and ETag /
// 304; the message list carries only the summary.
func TestToolContent(t *testing.T) {
	e := newEnv(t)
	s1, s2 := e.session(), e.session()
	oldText, newText := "a\nb\n", "a\nc\n"
	edit, err := e.store.CreateMessage(context.Background(), store.NewMessage{SessionID: s1.ID, AuthorType: shared.AuthorAgent,
		Type: shared.TypeToolCall, Content: "Edit x.go", Metadata: &shared.Metadata{ToolCallID: "e1", Title: "Edit x.go",
			Status: shared.StatusCompleted, Kind: "edit", Normalized: &shared.Normalized{Kind: shared.NormalizedToolContent}},
		ToolContent: []shared.ToolContentItem{{Type: shared.ContentDiff, Path: "/r/x.go", OldText: &oldText, NewText: &newText}}})
	if err != nil {
		t.Fatal(err)
	}
	shell := e.shell(s1.ID, "ls", shared.StatusCompleted, nil)
	base := "/api/v1/task-sessions/" + s1.ID + "/messages/"

	resp, got := e.do("GET", base+edit.ID+"/tool-content", "")
	want := fmt.Sprintf(`{"message_id":%q,"status":"completed","updated_at":%q,"items":[{"type":"diff","path":"/r/x.go","old_text":"a\nb\n","new_text":"a\nc\n",`+
		`"hunks":[{"old_line":1,"new_line":1,"lines":[{"kind":" ","old":1,"new":1,"text":"a"},{"kind":"-","old":2,"text":"b"},{"kind":"+","new":2,"text":"c"}]}]}]}`,
		edit.ID, edit.UpdatedAt.Format("2006-01-02T15:04:05.999999999Z07:00"))
	if resp.StatusCode != http.StatusOK || got != want {
		t.Errorf("tool content %d\n got %s\nwant %s", resp.StatusCode, got, want)
	}
	etag := resp.Header.Get("ETag")
	if resp, body := e.do("GET", base+edit.ID+"/tool-content", "", "If-None-Match", etag); resp.StatusCode != http.StatusNotModified || body != "" {
		t.Errorf("If-None-Match: %d %q", resp.StatusCode, body)
	}
	list := e.expect(http.StatusOK, "GET", base[:len(base)-1], "", nil)
	if wantSummary := `"tool_content":{"items":[{"type":"diff","path":"/r/x.go","old_bytes":4,"new_bytes":4,"added_lines":1,"removed_lines":1}]}`; !strings.Contains(list, wantSummary) || strings.Contains(list, `a\nc\n`) {
		t.Errorf("list %s", list)
	}
	for name, target := range map[string]string{
		"missing":       base + "nope/tool-content",
		"cross-session": "/api/v1/task-sessions/" + s2.ID + "/messages/" + edit.ID + "/tool-content",
		"a shell":       base + shell.ID + "/tool-content",
	} {
		if body := e.expect(http.StatusNotFound, "GET", target, "", nil); body != `{"error":"message not found","code":"not_found"}` {
			t.Errorf("%s: %s", name, body)
		}
	}
}
