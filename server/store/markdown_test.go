package store

import (
	"context"
	"strings"
	"testing"
	"time"

	"conch/shared"
)

// treeText is the text of a reply of one paragraph, src its markdown, "" for anything else
// (a tree whose ranges are not of src too).
func treeText(src string, tree []shared.MarkdownNode) string {
	if len(tree) != 1 || len(tree[0].Children) != 1 || !shared.MarkdownFits(src, tree) {
		return ""
	}
	return shared.ResolvedMarkdown(src, tree)[0].Children[0].Text
}

// An agent's reply and its plan's entries carry their markdown parsed, as stored and as
// updated (a streamed reply as it grows); a person's prompt, a thought and a tool call
// carry none; a reply whose tree passes shared.MaxMarkdownBytes has none, and shows as
// text.
func TestStoredMarkdown(t *testing.T) {
	s, _ := open(t, time.Millisecond)
	ctx := context.Background()
	sess := newSession(t, s)
	add := func(author shared.AuthorType, typ shared.MessageType, content string, md *shared.Metadata) shared.Message {
		t.Helper()
		m, err := s.CreateMessage(ctx, NewMessage{SessionID: sess.ID, AuthorType: author, Type: typ, Content: content, Metadata: md})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	markdownOf := func(m shared.Message) []shared.MarkdownNode {
		if m.Metadata == nil {
			return nil
		}
		return m.Metadata.Markdown
	}
	reply := add(shared.AuthorAgent, shared.TypeMessage, "**hel", nil)
	if got := treeText(reply.Content, markdownOf(reply)); got != "**hel" {
		t.Errorf("reply: %+v", markdownOf(reply))
	}
	grown := "**hello**"
	upd, _, err := s.UpdateMessage(ctx, reply.ID, Update{Content: &grown})
	if err != nil {
		t.Fatal(err)
	}
	listed, err := s.GetMessage(ctx, reply.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []shared.Message{upd, listed} {
		tree := shared.ResolvedMarkdown(m.Content, markdownOf(m))
		if len(tree) != 1 || len(tree[0].Children) != 1 || tree[0].Children[0].Kind != shared.MarkdownStrong ||
			tree[0].Children[0].Children[0].Text != "hello" {
			t.Errorf("grown reply: %+v", tree)
		}
	}
	plan := add(shared.AuthorAgent, shared.TypePlan, "Plan: 0 of 2 steps done", &shared.Metadata{Entries: []shared.PlanEntry{
		{Content: "one", Status: "pending"}, {Content: "two", Status: "pending"}}})
	if e := plan.Metadata.Entries; treeText(e[0].Content, e[0].Markdown) != "one" || treeText(e[1].Content, e[1].Markdown) != "two" {
		t.Errorf("plan: %+v", e)
	}
	plan, _, err = s.UpdateMessage(ctx, plan.ID, Update{Metadata: &shared.Metadata{Entries: []shared.PlanEntry{{Content: "three", Status: "completed"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if e := plan.Metadata.Entries; len(e) != 1 || treeText(e[0].Content, e[0].Markdown) != "three" {
		t.Errorf("updated plan: %+v", e)
	}
	for _, m := range []shared.Message{
		add(shared.AuthorUser, shared.TypeMessage, "**a**", nil),
		add(shared.AuthorAgent, shared.TypeThinking, "**a**", nil),
		add(shared.AuthorAgent, shared.TypeToolCall, "**a**", &shared.Metadata{Title: "**a**", Status: shared.StatusPending}),
	} {
		if markdownOf(m) != nil {
			t.Errorf("%s %s: markdown %+v", m.AuthorType, m.Type, markdownOf(m))
		}
	}
	thought := add(shared.AuthorAgent, shared.TypeThinking, "a", nil)
	if m, _, err := s.UpdateMessage(ctx, thought.ID, Update{Content: &grown}); err != nil || markdownOf(m) != nil {
		t.Errorf("a thought grown: %+v (%v)", m.Metadata, err)
	}
	// Every character a node of its own: the tree is far more than the text.
	big := strings.Repeat("*a* ", MaxTextBytes/4-100)
	if m := add(shared.AuthorAgent, shared.TypeMessage, big, nil); m.Content != big || markdownOf(m) != nil {
		t.Errorf("a reply past the bound: %d bytes, %d nodes", len(m.Content), len(markdownOf(m)))
	}
}
