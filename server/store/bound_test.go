package store

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"conch/shared"
)

// An agent's text is stored within its bounds however much it sends: a 30 MB message is
// cut to MaxTextBytes between characters and says so; a tool call's 30 MB title and
// command and a plan of a million entries keep the row within maxMessageBytes; a list
// page holding them stays within shared.MaxPageBytes. What is within the bounds is kept
// as it is, also when written again.
func TestAgentTextIsBounded(t *testing.T) {
	s, _ := open(t, time.Millisecond)
	ctx := context.Background()
	sess := newSession(t, s)
	huge := "a" + strings.Repeat("é", 15<<20) // 30 MB, the cut falls inside a character
	text, err := s.CreateMessage(ctx, NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent, Type: shared.TypeMessage, Content: huge})
	if err != nil {
		t.Fatal(err)
	}
	md := shellMeta(shared.StatusRunning)
	md.Title, md.Normalized.ShellExec.Command = huge, huge
	md.Entries = make([]shared.PlanEntry, 1_000_000)
	tool, err := s.CreateMessage(ctx, NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent, Type: shared.TypeToolExecute, Content: huge, Metadata: md})
	if err != nil {
		t.Fatal(err)
	}
	if md.Title != huge || len(md.Entries) != 1_000_000 {
		t.Error("bounding changed the caller's metadata")
	}
	upd, _, err := s.UpdateMessage(ctx, text.ID, Update{Content: &huge})
	if err != nil {
		t.Fatal(err)
	}
	small := "within bounds"
	fine, err := s.CreateMessage(ctx, NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent, Type: shared.TypeMessage, Content: small})
	if err != nil {
		t.Fatal(err)
	}
	page, err := s.ListMessages(ctx, shared.ListRequest{SessionID: sess.ID})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(page)
	if len(page.Messages) != 3 || len(raw) > shared.MaxPageBytes {
		t.Fatalf("a page of %d messages is %d bytes", len(page.Messages), len(raw))
	}
	for _, m := range []shared.Message{text, tool, upd, page.Messages[0], page.Messages[1]} {
		rowJSON, _ := json.Marshal(m.Metadata)
		if len(m.Content) > MaxTextBytes || !utf8.ValidString(m.Content) || !strings.HasSuffix(m.Content, cutMarker) ||
			m.Metadata == nil || !m.Metadata.TextTruncated || len(rowJSON) > maxMessageBytes {
			t.Errorf("message %s: %d bytes of content, metadata %d bytes, truncated %v", m.ID, len(m.Content), len(rowJSON), m.Metadata != nil && m.Metadata.TextTruncated)
		}
	}
	tm := page.Messages[1].Metadata
	if len(tm.Title) > MaxTextBytes || len(tm.Normalized.ShellExec.Command) > MaxTextBytes || len(tm.Entries) == 0 || len(tm.Entries) >= 1_000_000 ||
		!strings.HasPrefix(huge, tm.Title) {
		t.Errorf("tool call: title %d, command %d, %d entries", len(tm.Title), len(tm.Normalized.ShellExec.Command), len(tm.Entries))
	}
	if f := page.Messages[2]; f.Content != small || f.Metadata == nil || f.Metadata.TextTruncated || f.ID != fine.ID {
		t.Errorf("a message within bounds changed: %+v", f)
	}
	again, changed, err := s.UpdateMessage(ctx, text.ID, Update{Content: &page.Messages[0].Content})
	if err != nil || !changed || again.Content != page.Messages[0].Content {
		t.Errorf("a bounded message written again changed: %v %v", changed, err)
	}
}

// A session's modes, commands and error come from the agent too: lists over the bound are
// refused and leave what was stored; an error text is cut.
func TestAgentSessionTextIsBounded(t *testing.T) {
	s, _ := open(t, time.Millisecond)
	ctx := context.Background()
	sess := newSession(t, s)
	small := shared.Modes{Current: "a", Available: []shared.SessionMode{{ID: "a", Name: "Ask"}}}
	if _, err := s.SetSessionModes(ctx, sess.ID, small); err != nil {
		t.Fatal(err)
	}
	huge := strings.Repeat("x", MaxTextBytes)
	if _, err := s.SetSessionModes(ctx, sess.ID, shared.Modes{Current: "a", Available: []shared.SessionMode{{ID: "a", Description: huge}}}); shared.ErrorCode(err) != shared.CodeInvalid {
		t.Fatalf("modes over the bound: err %v, want invalid", err)
	}
	if _, err := s.SetSessionCommands(ctx, sess.ID, []shared.Command{{Name: "c", Description: huge}}); shared.ErrorCode(err) != shared.CodeInvalid {
		t.Fatalf("commands over the bound: err %v, want invalid", err)
	}
	got, err := s.SetSessionState(ctx, sess.ID, shared.SessionFailed, "x"+huge+huge)
	if err != nil {
		t.Fatal(err)
	}
	if got.Modes == nil || len(got.Modes.Available) != 1 || got.Modes.Available[0].Name != "Ask" || len(got.Commands) != 0 {
		t.Errorf("a refused list changed what was stored: modes %+v, commands %d", got.Modes, len(got.Commands))
	}
	if len(got.Error) > MaxTextBytes || !strings.HasPrefix(got.Error, "xx") {
		t.Errorf("error text: %d bytes, want at most %d", len(got.Error), MaxTextBytes)
	}
}

// A diff's path is the agent's text too: the summary every list carries keeps it bounded.
func TestAgentDiffPathIsBounded(t *testing.T) {
	s, _ := open(t, time.Millisecond)
	sess := newSession(t, s)
	huge := "/" + strings.Repeat("p", 30<<20)
	md := &shared.Metadata{Status: shared.StatusCompleted, Normalized: &shared.Normalized{Kind: shared.NormalizedToolContent}}
	text := "new"
	m, err := s.CreateMessage(context.Background(), NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent, Type: shared.TypeToolCall,
		Content: "Edit", Metadata: md, ToolContent: []shared.ToolContentItem{{Type: "diff", Path: huge, NewText: &text}}})
	if err != nil {
		t.Fatal(err)
	}
	items := m.Metadata.Normalized.ToolContent.Items
	if len(items) != 1 || len(items[0].Path) > MaxTextBytes || !strings.HasPrefix(huge, items[0].Path) || !m.Metadata.TextTruncated {
		t.Errorf("diff path: %d items, %d bytes, truncated %v", len(items), len(items[0].Path), m.Metadata.TextTruncated)
	}
}
