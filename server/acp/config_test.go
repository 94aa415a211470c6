package acp

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"conch/server/acp/acptest"
	"conch/server/waittest"
	"conch/shared"
)

func values(ids ...string) sdk.SessionConfigSelectOptions {
	vs := sdk.SessionConfigSelectOptionsUngrouped{}
	for _, id := range ids {
		vs = append(vs, sdk.SessionConfigSelectOption{Value: sdk.SessionConfigValueId(id), Name: strings.ToUpper(id)})
	}
	return sdk.SessionConfigSelectOptions{Ungrouped: &vs}
}

func selectOption(id, current string, category sdk.SessionConfigOptionCategory, opts sdk.SessionConfigSelectOptions) sdk.SessionConfigOption {
	return sdk.SessionConfigOption{Select: &sdk.SessionConfigOptionSelect{Id: sdk.SessionConfigId(id), Name: "Option " + id,
		Type: shared.ConfigSelect, Category: &category, CurrentValue: sdk.SessionConfigValueId(current), Options: opts}}
}

func booleanOption(id string, on bool) sdk.SessionConfigOption {
	return sdk.SessionConfigOption{Boolean: &sdk.SessionConfigOptionBoolean{Id: sdk.SessionConfigId(id), Name: "Option " + id,
		Type: shared.ConfigBoolean, Category: new(sdk.SessionConfigOptionCategory("model_config")), CurrentValue: on}}
}

// configAgent offers a model select, a boolean and a thought level, then what hostile
// adds; its "think" turn reports a new thought level by itself.
func configAgent(hostile ...sdk.SessionConfigOption) acptest.Config {
	return acptest.Config{
		ConfigOptions: append([]sdk.SessionConfigOption{
			selectOption("model", "small", sdk.SessionConfigOptionCategoryModel, values("small", "large")),
			booleanOption("fast", false),
			selectOption("effort", "low", sdk.SessionConfigOptionCategoryThoughtLevel, values("low", "high")),
		}, hostile...),
		Scripts: map[string]script{"think": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
			return a.Send(ctx, sid, sdk.SessionUpdate{ConfigOptionUpdate: &sdk.SessionConfigOptionUpdate{ConfigOptions: []sdk.SessionConfigOption{
				selectOption("effort", "high", sdk.SessionConfigOptionCategoryThoughtLevel, values("low", "high"))}}})
		}},
	}
}

// The config options an agent offers are on its session from the start; setting one
// goes to the agent (session/set_config_option) and the session holds what the agent
// answered; the agent's own config_option_update replaces them. What the agent may not
// offer (bad ids, unknown kinds, too many values) is left out, names are cut; a request
// for an option or value it does not offer is refused and changes nothing.
func TestConfigOptions(t *testing.T) {
	t.Parallel()
	many := make([]string, 100)
	for i := range many {
		many[i] = fmt.Sprintf("v%d", i)
	}
	grouped := sdk.SessionConfigSelectOptionsGrouped{{Group: "g", Name: "Fast ones", Options: []sdk.SessionConfigSelectOption{{Value: "a", Name: "A"}}}}
	long := selectOption("long", "v0", "", values(many...))
	long.Select.Name = strings.Repeat("n", 1000)
	env := newEnv(t, scriptedAs(configAgent(
		selectOption("bad\x1bid", "small", "", values("small")), // a control character in its id
		booleanOption("fast", true),                             // the same id again
		sdk.SessionConfigOption{Select: &sdk.SessionConfigOptionSelect{Id: "num", Type: "number", Options: values("1")}},
		selectOption("orphan", "gone", "", values("here")), // its value is not among its values
		selectOption("grouped", "a", "", sdk.SessionConfigSelectOptions{Grouped: &grouped}),
		long,
	)), false, Profile{Name: "scripted"})
	sess := env.start(t, "scripted")
	var ids []string
	for _, o := range sess.ConfigOptions {
		ids = append(ids, o.ID)
	}
	if strings.Join(ids, ",") != "model,fast,effort,grouped,long" {
		t.Fatalf("options kept: %v", ids)
	}
	if m := sess.ConfigOptions[0]; m.Type != shared.ConfigSelect || m.Category != "model" || m.Current != "small" || len(m.Values) != 2 || m.Values[1] != (shared.ConfigValue{ID: "large", Name: "LARGE"}) {
		t.Errorf("model: %+v", m)
	}
	if f := sess.ConfigOptions[1]; f.Type != shared.ConfigBoolean || f.On || f.Category != "model_config" {
		t.Errorf("fast: %+v", f)
	}
	if g := sess.ConfigOptions[3]; g.Values[0].Group != "Fast ones" {
		t.Errorf("grouped: %+v", g)
	}
	if l := sess.ConfigOptions[4]; len(l.Values) != shared.MaxConfigValues || len(l.Name) != shared.MaxConfigNameBytes {
		t.Errorf("long: %d values, a name of %d bytes", len(l.Values), len(l.Name))
	}

	ctx := context.Background()
	for _, bad := range []shared.ConfigRequest{
		{ConfigID: "nope", Value: "small"},
		{ConfigID: "model", Value: "huge"},
		{ConfigID: "model", Value: true},
		{ConfigID: "fast", Value: "small"},
		{ConfigID: "model", Value: 3.0},
		{ConfigID: "", Value: "small"},
	} {
		if _, err := env.m.SetConfig(ctx, sess.ID, bad); shared.ErrorCode(err) != shared.CodeInvalid {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	if _, err := env.m.SetConfig(ctx, sess.ID, shared.ConfigRequest{ConfigID: "model", Value: "large"}); err != nil {
		t.Fatal(err)
	}
	got, err := env.m.SetConfig(ctx, sess.ID, shared.ConfigRequest{ConfigID: "fast", Value: true})
	if err != nil {
		t.Fatal(err)
	}
	if got.ConfigOptions[0].Current != "large" || !got.ConfigOptions[1].On {
		t.Errorf("after the sets: %+v", got.ConfigOptions)
	}
	env.prompt(t, sess.ID, "think")
	stored, err := env.st.GetSession(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored.ConfigOptions) != 1 || stored.ConfigOptions[0].ID != "effort" || stored.ConfigOptions[0].Current != "high" {
		t.Errorf("after the agent's update: %+v", stored.ConfigOptions)
	}
	if _, err := env.m.SetConfig(ctx, "nope", shared.ConfigRequest{ConfigID: "effort", Value: "low"}); shared.ErrorCode(err) != shared.CodeNotFound {
		t.Errorf("unknown session: %v", err)
	}
}

// An agent that lists models but offers no config options gets one model select, set
// through session/set_model; one that offers neither has no options to set.
func TestModelsFallback(t *testing.T) {
	t.Parallel()
	env := newEnv(t, scriptedAs(acptest.Config{Models: &sdk.SessionModelState{CurrentModelId: "m1", AvailableModels: []sdk.ModelInfo{
		{ModelId: "m1", Name: "Model one"}, {ModelId: "m2", Name: "Model two", Description: sdk.Ptr("the larger")}, {ModelId: "m\x00", Name: "hostile"}}}}),
		false, Profile{Name: "scripted"})
	sess := env.start(t, "scripted")
	if len(sess.ConfigOptions) != 1 || sess.ConfigOptions[0].ID != "model" || sess.ConfigOptions[0].Current != "m1" || len(sess.ConfigOptions[0].Values) != 2 {
		t.Fatalf("models as an option: %+v", sess.ConfigOptions)
	}
	got, err := env.m.SetConfig(context.Background(), sess.ID, shared.ConfigRequest{ConfigID: "model", Value: "m2"})
	if err != nil {
		t.Fatal(err)
	}
	if got.ConfigOptions[0].Current != "m2" {
		t.Errorf("after set_model: %+v", got.ConfigOptions)
	}

	plain := newEnv(t, scripted(nil), false, Profile{Name: "scripted"})
	none := plain.start(t, "scripted")
	if none.ConfigOptions != nil {
		t.Errorf("options of an agent without any: %+v", none.ConfigOptions)
	}
	if _, err := plain.m.SetConfig(context.Background(), none.ID, shared.ConfigRequest{ConfigID: "model", Value: "m2"}); shared.ErrorCode(err) != shared.CodeConflict {
		t.Errorf("an agent without options: %v", err)
	}
}

// An agent that never answers a set costs the person a timeout error, and is told the
// request is withdrawn (ACP $/cancel_request, which the SDK sends when the request's
// context ends); the options stay as they were.
func TestConfigSetUnanswered(t *testing.T) {
	t.Parallel()
	withdrawn := make(chan error, 1)
	cfg := configAgent()
	cfg.ConfigSwitch = func(ctx context.Context) error {
		<-ctx.Done() // never answers on its own
		withdrawn <- context.Cause(ctx)
		return ctx.Err()
	}
	env := newEnv(t, scriptedAs(cfg), false, Profile{Name: "scripted"})
	env.m.cfg.RequestTimeout = time.Millisecond
	sess := env.start(t, "scripted")
	_, err := env.m.SetConfig(context.Background(), sess.ID, shared.ConfigRequest{ConfigID: "model", Value: "large"})
	if shared.ErrorCode(err) != shared.CodeTimeout {
		t.Errorf("an unanswered set: %v", err)
	}
	select {
	case <-withdrawn:
	case <-time.After(waittest.Limit(t)):
		t.Fatal("the agent was never told the request is withdrawn")
	}
	stored, err := env.st.GetSession(context.Background(), sess.ID)
	if err != nil || stored.ConfigOptions[0].Current != "small" {
		t.Errorf("after the timeout: %+v, %v", stored.ConfigOptions, err)
	}
}
