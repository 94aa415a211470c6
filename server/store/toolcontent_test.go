package store

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"conch/shared"
)

func toolMeta(status shared.ToolStatus) *shared.Metadata {
	return &shared.Metadata{ToolCallID: "edit-1", Title: "Edit main.go", Status: status, Kind: "edit",
		Normalized: &shared.Normalized{Kind: shared.NormalizedToolContent}}
}

func diffItem(path, oldText, newText string) shared.ToolContentItem {
	return shared.ToolContentItem{Type: shared.ContentDiff, Path: path, OldText: &oldText, NewText: &newText}
}

// A tool call's diffs and texts are stored apart: the message carries sizes and line
// counts only, the snapshot the kept bodies; a later update without content keeps them.
func TestToolContentStoredApart(t *testing.T) {
	s, _ := open(t, 1)
	ctx := context.Background()
	sess := newSession(t, s)
	note := "wrote 3 lines"
	items := []shared.ToolContentItem{
		diffItem("/repo/main.go", "package main\n\nfunc a() {}\nfunc b() {}\n", "package main\n\nfunc a() { x() }\nfunc b() {}\nfunc c() {}\n"),
		diffItem("/repo/new.go", "", "package main\n"),
		{Type: shared.ContentText, Text: &note},
	}
	m, err := s.CreateMessage(ctx, NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent, Type: shared.TypeToolCall,
		Content: "Edit main.go", Metadata: toolMeta(shared.StatusRunning), ToolContent: items})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(m.Metadata.Normalized)
	want := `{"kind":"tool_content","tool_content":{"items":[` +
		`{"type":"diff","path":"/repo/main.go","old_bytes":38,"new_bytes":55,"added_lines":2,"removed_lines":1},` +
		`{"type":"diff","path":"/repo/new.go","old_bytes":0,"new_bytes":13,"added_lines":1,"removed_lines":0},` +
		`{"type":"text","bytes":13}]}}`
	if string(got) != want {
		t.Errorf("normalized\n got %s\nwant %s", got, want)
	}
	if strings.Contains(string(got), "func") {
		t.Error("a body travels with the message")
	}

	// A status change alone keeps the content and its summary.
	done, _, err := s.UpdateMessage(ctx, m.ID, Update{Metadata: toolMeta(shared.StatusCompleted)})
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := json.Marshal(done.Metadata.Normalized); string(again) != want {
		t.Errorf("after a status update: %s", again)
	}
	snap, err := s.GetToolContent(ctx, sess.ID, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Status != shared.StatusCompleted || !snap.UpdatedAt.Equal(done.UpdatedAt) || len(snap.Items) != 3 ||
		*snap.Items[0].NewText != *items[0].NewText || *snap.Items[1].OldText != "" || *snap.Items[2].Text != note || snap.Truncated {
		t.Errorf("snapshot %+v", snap)
	}
	// The diffs come with the hunks the page draws; a text has none.
	if h, _ := json.Marshal([]any{snap.Items[1].Hunks, snap.Items[2].Hunks}); string(h) !=
		`[[{"old_line":1,"new_line":1,"lines":[{"kind":"+","new":1,"text":"package main"}]}],null]` || len(snap.Items[0].Hunks) != 1 {
		t.Errorf("hunks %s, and %d of main.go's", h, len(snap.Items[0].Hunks))
	}
	if stamp, err := s.GetToolContentStamp(ctx, sess.ID, m.ID); err != nil || !stamp.Equal(done.UpdatedAt) {
		t.Errorf("stamp %v %v", stamp, err)
	}

	// 404 alike for absent, another session's and not a tool call.
	other := newSession(t, s)
	shell, err := s.CreateMessage(ctx, NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent, Type: shared.TypeToolExecute,
		Content: "ls", Metadata: shellMeta(shared.StatusRunning)})
	if err != nil {
		t.Fatal(err)
	}
	for name, ref := range map[string][2]string{"absent": {sess.ID, "nope"}, "another session's": {other.ID, m.ID}, "a shell command": {sess.ID, shell.ID}} {
		if _, err := s.GetToolContent(ctx, ref[0], ref[1]); shared.ErrorMessage(err) != "message not found" {
			t.Errorf("%s: %v", name, err)
		}
		if _, err := s.GetToolContentStamp(ctx, ref[0], ref[1]); shared.ErrorMessage(err) != "message not found" {
			t.Errorf("%s stamp: %v", name, err)
		}
	}
}

// A diff over the bound is never cut: it is omitted with its sizes and no line counts, and
// the summary says truncated; a long text keeps its tail.
func TestToolContentBound(t *testing.T) {
	big := strings.Repeat("x\n", shared.DiffSideLimit/2+1)
	long := strings.Repeat("y", shared.OutputLimit+10)
	kept, sum := boundContent([]shared.ToolContentItem{diffItem("big.txt", "", big), {Type: shared.ContentText, Text: &long}, diffItem("ok.txt", "a\n", "b\n")})
	if !sum.Truncated || !kept.truncated {
		t.Error("not truncated")
	}
	b := sum.Items[0]
	if !b.Omitted || *b.NewBytes != len(big) || b.AddedLines != nil || kept.items[0].NewText != nil || !kept.items[0].Omitted {
		t.Errorf("big diff: %+v / %+v", b, kept.items[0])
	}
	if *sum.Items[1].Bytes != shared.OutputLimit || len(*kept.items[1].Text) != shared.OutputLimit {
		t.Errorf("long text kept %d", *sum.Items[1].Bytes)
	}
	if ok := sum.Items[2]; ok.Omitted || *ok.AddedLines != 1 || *ok.RemovedLines != 1 {
		t.Errorf("small diff: %+v", ok)
	}
}
