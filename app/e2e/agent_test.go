//go:build !js

package e2e

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"conch/server/acp/acptest"
	"conch/server/waittest"
)

// TestMain lets the test binary play a third-party ACP agent: the server under test
// starts it (the scripted profile of startAgentsServer) with CONCH_E2E_AGENT=script, and
// it speaks ACP over stdio like any other agent, offering two session modes.
func TestMain(m *testing.M) {
	if os.Getenv("CONCH_E2E_AGENT") == "script" {
		modes := &sdk.SessionModeState{CurrentModeId: "ask", AvailableModes: []sdk.SessionMode{
			{Id: "ask", Name: "Ask", Description: sdk.Ptr("Asks before it edits")}, {Id: "code", Name: "Code", Description: sdk.Ptr("Edits files")}}}
		if err := acptest.Run(context.Background(), os.Stdin, os.Stdout, acptest.Config{Scripts: steps, Modes: modes}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if os.Getenv("CONCH_E2E_AGENT") == "resume" { // an agent that can resume and fork, and reports its usage (usage_test.go)
		if err := acptest.Run(context.Background(), os.Stdin, os.Stdout, acptest.Config{Scripts: spending, Resume: true, Fork: true}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	switch os.Getenv("CONCH_E2E_AGENT") {
	case "signin": // an agent that asks for a terminal sign-in first (signin_test.go)
		login := &sdk.AuthMethodTerminalInline{Id: "login", Name: "Log in to the scripted agent", Description: sdk.Ptr("Opens its login screen in a terminal."),
			Args: []string{"--login"}, Env: map[string]any{"CONCH_E2E_AGENT": "signin-login"}}
		if err := acptest.Run(context.Background(), os.Stdin, os.Stdout, acptest.Config{Scripts: steps, SignIn: login}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	case "signin-login": // that sign-in, run in the session's terminal
		if err := acptest.SignInHere(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println("Signed in. You may close this terminal.")
		os.Exit(0)
	}
	flag.Parse()
	deadline = waittest.Limit(nil)
	code := m.Run()
	if chromium.stop != nil {
		chromium.stop()
	}
	os.Exit(code)
}

// scriptedAgent is the profile name of the test binary as an agent.
const scriptedAgent = "scripted"

// bigDiff is the edit the scripted agent reports for "edit big": a 2 MB diff (1 MB a
// side of numbered lines) that rewrites lines 10 to 12 and adds one at the end.
func bigDiff() (path, oldText, newText string) {
	var before, after strings.Builder
	for i := 1; before.Len() < 1<<20; i++ {
		line := fmt.Sprintf("line %06d of the file as it was before the edit\n", i)
		before.WriteString(line)
		if i >= 10 && i <= 12 {
			line = fmt.Sprintf("line %06d, rewritten by the agent\n", i)
		}
		after.WriteString(line)
	}
	after.WriteString("a line the agent added\n")
	return "/repo/big.txt", before.String(), after.String()
}

// steps are the scripted agent's turns, by prompt text.
var steps = map[string]acptest.Script{
	"edit big": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
		path, oldText, newText := bigDiff()
		err := a.Send(ctx, sid, sdk.StartToolCall("edit-big", "Edit big.txt", sdk.WithStartKind(sdk.ToolKindEdit),
			sdk.WithStartStatus(sdk.ToolCallStatusCompleted),
			sdk.WithStartContent([]sdk.ToolCallContent{sdk.ToolDiffContent(path, newText, oldText)})))
		if err != nil {
			return err
		}
		return a.Send(ctx, sid, sdk.UpdateAgentMessageText("Edited big.txt."))
	},
	"markdown": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
		return a.Send(ctx, sid, sdk.UpdateAgentMessageText(markdownReply))
	},
	"max tokens": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
		if err := a.Send(ctx, sid, sdk.UpdateAgentMessageText("Here is the start of a very long answer")); err != nil {
			return err
		}
		return acptest.StopWith(sdk.StopReasonMaxTokens)
	},
	"refuse": func(context.Context, *acptest.Agent, sdk.SessionId) error {
		return acptest.StopWith(sdk.StopReasonRefusal)
	},
	"plan": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
		step := func(content string, p sdk.PlanEntryPriority, s sdk.PlanEntryStatus) sdk.PlanEntry {
			return sdk.PlanEntry{Content: content, Priority: p, Status: s}
		}
		for _, u := range []sdk.SessionUpdate{
			sdk.UpdatePlan(step("Read the failing test", sdk.PlanEntryPriorityHigh, sdk.PlanEntryStatusInProgress),
				step("Fix the off-by-one in the pager", sdk.PlanEntryPriorityHigh, sdk.PlanEntryStatusPending),
				step("Run the whole suite", sdk.PlanEntryPriorityMedium, sdk.PlanEntryStatusPending)),
			sdk.UpdatePlan(step("Read the failing test", sdk.PlanEntryPriorityHigh, sdk.PlanEntryStatusCompleted),
				step("Fix the off-by-one in the pager", sdk.PlanEntryPriorityHigh, sdk.PlanEntryStatusInProgress),
				step("Run the whole suite", sdk.PlanEntryPriorityMedium, sdk.PlanEntryStatusPending)),
			sdk.UpdateAgentMessageText("Working on the pager."),
		} {
			if err := a.Send(ctx, sid, u); err != nil {
				return err
			}
		}
		return nil
	},
	"offer commands": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
		return a.Send(ctx, sid, sdk.SessionUpdate{AvailableCommandsUpdate: &sdk.SessionAvailableCommandsUpdate{AvailableCommands: []sdk.AvailableCommand{
			{Name: "review", Description: "Review the changes on this branch", Input: &sdk.AvailableCommandInput{Unstructured: &sdk.UnstructuredCommandInput{Hint: "base branch"}}},
			{Name: "release-notes", Description: "Draft release notes"},
			{Name: "init", Description: "Write an AGENTS.md for this repository"},
		}}})
	},
	reviewPrompt: func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
		return a.Send(ctx, sid, sdk.UpdateAgentMessageText(reviewAnswer))
	},
	"fail": func(context.Context, *acptest.Agent, sdk.SessionId) error {
		return errors.New("model overloaded, try again later")
	},
	"fail long": func(context.Context, *acptest.Agent, sdk.SessionId) error {
		return sdk.NewInternalError(map[string]any{"error": longTurnError})
	},
}
