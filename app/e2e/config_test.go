//go:build !js

package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	sdk "github.com/coder/acp-go-sdk"

	"conch/server/acp/acptest"
	"conch/shared"
)

// With CONCH_E2E_AGENT=config the test binary plays an agent with config options (the
// profile of TestConfigOnTheBar): a model select, a thinking toggle and a thought level,
// which its "think" turn raises by itself.
func init() {
	if os.Getenv("CONCH_E2E_AGENT") != "config" {
		return
	}
	models := sdk.SessionConfigSelectOptionsUngrouped{{Value: "swift", Name: "Swift 2"}, {Value: "deep", Name: "Deep 4", Description: sdk.Ptr("Slower, more careful")}}
	levels := func() sdk.SessionConfigSelectOptions {
		l := sdk.SessionConfigSelectOptionsUngrouped{{Value: "low", Name: "Low"}, {Value: "high", Name: "High"}}
		return sdk.SessionConfigSelectOptions{Ungrouped: &l}
	}
	effort := func(current string) sdk.SessionConfigOption {
		return sdk.SessionConfigOption{Select: &sdk.SessionConfigOptionSelect{Id: "effort", Name: "Effort", Type: shared.ConfigSelect,
			Category: new(sdk.SessionConfigOptionCategoryThoughtLevel), CurrentValue: sdk.SessionConfigValueId(current), Options: levels()}}
	}
	opts := []sdk.SessionConfigOption{
		{Select: &sdk.SessionConfigOptionSelect{Id: "model", Name: "Model", Type: shared.ConfigSelect, Category: new(sdk.SessionConfigOptionCategoryModel),
			CurrentValue: "swift", Options: sdk.SessionConfigSelectOptions{Ungrouped: &models}}},
		{Boolean: &sdk.SessionConfigOptionBoolean{Id: "thinking", Name: "Thinking", Type: shared.ConfigBoolean,
			Category: new(sdk.SessionConfigOptionCategory("model_config")), Description: sdk.Ptr("Think before answering")}},
		effort("low"),
	}
	scripts := map[string]acptest.Script{"think": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
		opts[2] = effort("high")
		if err := a.Send(ctx, sid, sdk.SessionUpdate{ConfigOptionUpdate: &sdk.SessionConfigOptionUpdate{ConfigOptions: opts}}); err != nil {
			return err
		}
		return a.Send(ctx, sid, sdk.UpdateAgentMessageText("thinking harder now"))
	}}
	if err := acptest.Run(context.Background(), os.Stdin, os.Stdout, acptest.Config{Scripts: scripts, ConfigOptions: opts}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// The session bar shows the agent's config options: a person picks a model and turns a
// boolean on, each stored once the agent agreed, and a change the agent makes itself
// shows on the bar live.
func TestConfigOnTheBar(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s, _ := startProfilesServer(t, []map[string]any{{"name": "configured", "command": exe, "env": map[string]string{"CONCH_E2E_AGENT": "config"}}})
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	sess := s.sessionOf(t, "a task with options", "configured")
	stored := func(what string, ok func([]shared.ConfigOption) bool) {
		t.Helper()
		for got, _ := s.API.GetSession(ctx, sess.ID); !ok(got.ConfigOptions); got, _ = s.API.GetSession(ctx, sess.ID) {
			select {
			case <-ctx.Done():
				t.Fatalf("%s not stored: %+v", what, got.ConfigOptions)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}

	b := newBrowser(t)
	b.open(t, s.URL+"/sessions/"+sess.ID)
	b.waitLive(t, "Live")
	model, thinking, effort := `document.querySelector('.bar select.config[data-config="model"]')`,
		`document.querySelector('.bar input.config[data-config="thinking"]')`, `document.querySelector('.bar select.config[data-config="effort"]')`
	b.waitFor(t, "the options on the bar", model+`.value === "swift" && !`+thinking+`.checked && `+effort+`.value === "low"`)

	b.do(t, chromedp.Evaluate[chromedp.Void](model+`.value = "deep"; `+model+`.dispatchEvent(new Event("change"))`))
	stored("the model", func(o []shared.ConfigOption) bool { return len(o) == 3 && o[0].Current == "deep" })
	b.waitFor(t, "the bar after the model", model+`.value === "deep" && !`+model+`.disabled`)

	b.do(t, chromedp.Evaluate[chromedp.Void](thinking+`.click()`))
	stored("thinking", func(o []shared.ConfigOption) bool { return len(o) == 3 && o[1].On })
	b.waitFor(t, "the bar after thinking", thinking+`.checked && !`+thinking+`.disabled && !document.querySelector(".alerts .alert")`)

	if _, err := s.API.SendMessage(ctx, sess.ID, "think", ""); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, "the agent's own change on the bar", effort+`.value === "high"`)
	b.screenshots(t, "config-bar", ".bar")
}
