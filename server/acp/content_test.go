package acp

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"conch/server/acp/acptest"
	"conch/shared"
)

// An edit's diff and text content is kept apart from its message: a 2 MB diff is listed
// as a summary of a few hundred bytes and served whole by GetToolContent; a status update
// without content keeps it; new content replaces it, as ACP says.
func TestToolCallContentKeptApart(t *testing.T) {
	t.Parallel()
	oldText := strings.Repeat("line of the old file\n", 50_000)                                              // about 1 MB
	newText := strings.Replace(oldText, "line of the old file\n", "line of the new file\n", 3) + "the end\n" // about 1 MB
	env := newEnv(t, scripted(map[string]script{
		"edit": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
			if err := a.Send(ctx, sid, sdk.StartToolCall("edit-1", "Edit big.txt", sdk.WithStartKind(sdk.ToolKindEdit),
				sdk.WithStartStatus(sdk.ToolCallStatusInProgress),
				sdk.WithStartContent([]sdk.ToolCallContent{sdk.ToolDiffContent("/repo/big.txt", newText, oldText), sdk.ToolContent(sdk.TextBlock("3 lines changed"))}))); err != nil {
				return err
			}
			if err := a.Send(ctx, sid, sdk.UpdateToolCall("edit-1", sdk.WithUpdateStatus(sdk.ToolCallStatusCompleted))); err != nil {
				return err
			}
			if err := a.Send(ctx, sid, sdk.StartToolCall("edit-2", "Write notes.md", sdk.WithStartKind(sdk.ToolKindEdit),
				sdk.WithStartContent([]sdk.ToolCallContent{sdk.ToolDiffContent("/repo/notes.md", "first\n")}))); err != nil {
				return err
			}
			return a.Send(ctx, sid, sdk.UpdateToolCall("edit-2", sdk.WithUpdateStatus(sdk.ToolCallStatusCompleted),
				sdk.WithUpdateContent([]sdk.ToolCallContent{sdk.ToolDiffContent("/repo/notes.md", "second\n")})))
		},
	}), false, Profile{Name: "scripted", Permission: PermissionAllow})
	sess := env.start(t, "scripted")
	env.prompt(t, sess.ID, "edit")

	big, _ := env.tool(t, sess.ID, "edit-1")
	listed, _ := json.Marshal(big)
	if len(listed) > 1000 {
		t.Errorf("the edit of a 2 MB diff is listed in %d bytes", len(listed))
	}
	sum := shared.ToolContentOf(big)
	if big.Metadata.Status != shared.StatusCompleted || sum == nil || len(sum.Items) != 2 || *sum.Items[0].AddedLines != 4 ||
		*sum.Items[0].RemovedLines != 3 || *sum.Items[0].NewBytes != len(newText) || *sum.Items[1].Bytes != len("3 lines changed") {
		t.Fatalf("listed %s", listed)
	}
	snap, err := env.st.GetToolContent(context.Background(), sess.ID, big.ID)
	if err != nil {
		t.Fatal(err)
	}
	if *snap.Items[0].OldText != oldText || *snap.Items[0].NewText != newText || snap.Items[0].Path != "/repo/big.txt" {
		t.Error("the snapshot does not hold the whole diff")
	}

	notes, _ := env.tool(t, sess.ID, "edit-2")
	snap, err = env.st.GetToolContent(context.Background(), sess.ID, notes.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Items) != 1 || *snap.Items[0].NewText != "second\n" || *snap.Items[0].OldText != "" {
		t.Errorf("replaced content: %+v", snap.Items)
	}
	assertEventsMatchStore(t, env, sess.ID)
}

// ACP plan updates are one plan message per turn, updated in place with the whole plan
// each time; the next turn's plan is a new message.
func TestPlanOneMessagePerTurn(t *testing.T) {
	t.Parallel()
	entry := func(content string, status sdk.PlanEntryStatus) sdk.PlanEntry {
		return sdk.PlanEntry{Content: content, Priority: sdk.PlanEntryPriorityHigh, Status: status}
	}
	env := newEnv(t, scripted(map[string]script{
		"plan": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
			for _, u := range []sdk.SessionUpdate{
				sdk.UpdateAgentMessageText("Let me plan."),
				sdk.UpdatePlan(entry("Read the code", sdk.PlanEntryStatusInProgress), entry("Fix the bug", sdk.PlanEntryStatusPending)),
				sdk.UpdateAgentMessageText("Reading."),
				sdk.UpdatePlan(entry("Read the code", sdk.PlanEntryStatusCompleted), entry("Fix the bug", sdk.PlanEntryStatusInProgress)),
				sdk.UpdatePlan(entry("Read the code", sdk.PlanEntryStatusCompleted), entry("Fix the bug", sdk.PlanEntryStatusCompleted)),
			} {
				if err := a.Send(ctx, sid, u); err != nil {
					return err
				}
			}
			return nil
		},
	}), false, Profile{Name: "scripted"})
	sess := env.start(t, "scripted")
	env.prompt(t, sess.ID, "plan")
	env.prompt(t, sess.ID, "plan")
	var plans []shared.Message
	var order []string
	for _, m := range env.messages(t, sess.ID) {
		order = append(order, string(m.Type)+":"+m.Content)
		if m.Type == shared.TypePlan {
			plans = append(plans, m)
		}
	}
	if len(plans) != 2 {
		t.Fatalf("%d plan messages for two turns: %q", len(plans), order)
	}
	var got [][3]string // each entry's text, priority and status; its text parsed as markdown
	for _, e := range plans[0].Metadata.Entries {
		got = append(got, [3]string{e.Content, e.Priority, e.Status})
		if e.Markdown == nil {
			t.Errorf("plan entry %q without its markdown", e.Content)
		}
	}
	want := [][3]string{{"Read the code", "high", "completed"}, {"Fix the bug", "high", "completed"}}
	if !slices.Equal(got, want) || plans[0].Content != "Plan: 2 of 2 steps done" {
		t.Errorf("plan %q %q", plans[0].Content, got)
	}
	if got := strings.Join(order[:4], " | "); got != "message:plan | message:Let me plan. | plan:Plan: 2 of 2 steps done | message:Reading." {
		t.Errorf("first turn: %s", got)
	}
	assertEventsMatchStore(t, env, sess.ID)
}
