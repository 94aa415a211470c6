package acp

import (
	"context"

	sdk "github.com/coder/acp-go-sdk"

	"conch/server/store"
	"conch/shared"
)

// Config options (ACP session/set_config_option, config_option_update) are the session's,
// like its modes: stored on the session and published with it. An agent that offers
// none but lists models (the older, unstable session/set_model) gets one select of them.
// All of it is the agent's text: options and values whose ids are not plain text are left
// out, counts are bounded and names cut (shared.MaxConfig*).

// configModel is the id of the select made of an agent's legacy model list.
const configModel = "model"

// offer is what an agent answers session/new, resume or load with besides the session.
type offer struct {
	modes  *sdk.SessionModeState
	config []sdk.SessionConfigOption
	models *sdk.SessionModelState
}

// configOf returns the options of an agent's list that are fit to show and send back.
func configOf(list []sdk.SessionConfigOption) []shared.ConfigOption {
	out := make([]shared.ConfigOption, 0, min(len(list), shared.MaxConfigOptions))
	seen := map[string]bool{}
	for _, o := range list {
		if len(out) == shared.MaxConfigOptions {
			break
		}
		var opt shared.ConfigOption
		switch {
		case o.Select != nil && o.Select.Type == shared.ConfigSelect:
			s := o.Select
			opt = option(string(s.Id), s.Name, s.Description, s.Category)
			opt.Type, opt.Current, opt.Values = shared.ConfigSelect, string(s.CurrentValue), selectValues(s.Options)
			if len(opt.Values) == 0 || !opt.Offers(opt.Current) {
				continue
			}
		case o.Boolean != nil && o.Boolean.Type == shared.ConfigBoolean:
			b := o.Boolean
			opt = option(string(b.Id), b.Name, b.Description, b.Category)
			opt.Type, opt.On = shared.ConfigBoolean, b.CurrentValue
		default:
			continue // a kind this client does not know
		}
		if !shared.PlainText(opt.ID, shared.MaxConfigIDBytes) || seen[opt.ID] {
			continue
		}
		seen[opt.ID] = true
		out = append(out, opt)
	}
	return out
}

func option(id, name string, description *string, category *sdk.SessionConfigOptionCategory) shared.ConfigOption {
	o := shared.ConfigOption{ID: id, Name: cut(name, shared.MaxConfigNameBytes, id), Description: cutPtr(description)}
	if category != nil {
		o.Category = cut(string(*category), shared.MaxConfigNameBytes, "")
	}
	return o
}

// selectValues flattens a select's values, grouped or not, keeping each group's name.
func selectValues(opts sdk.SessionConfigSelectOptions) []shared.ConfigValue {
	var out []shared.ConfigValue
	seen := map[string]bool{}
	add := func(group string, vs []sdk.SessionConfigSelectOption) {
		for _, v := range vs {
			id := string(v.Value)
			if len(out) == shared.MaxConfigValues || !shared.PlainText(id, shared.MaxConfigIDBytes) || seen[id] {
				continue
			}
			seen[id] = true
			out = append(out, shared.ConfigValue{ID: id, Name: cut(v.Name, shared.MaxConfigNameBytes, id),
				Description: cutPtr(v.Description), Group: cut(group, shared.MaxConfigNameBytes, "")})
		}
	}
	switch {
	case opts.Ungrouped != nil:
		add("", *opts.Ungrouped)
	case opts.Grouped != nil:
		for _, g := range *opts.Grouped {
			add(g.Name, g.Options)
		}
	}
	return out
}

// modelsOption is the select of an agent's legacy model list.
func modelsOption(m *sdk.SessionModelState) []shared.ConfigOption {
	opt := shared.ConfigOption{ID: configModel, Name: "Model", Category: string(sdk.SessionConfigOptionCategoryModel),
		Type: shared.ConfigSelect, Current: string(m.CurrentModelId)}
	seen := map[string]bool{}
	for _, v := range m.AvailableModels {
		id := string(v.ModelId)
		if len(opt.Values) == shared.MaxConfigValues || !shared.PlainText(id, shared.MaxConfigIDBytes) || seen[id] {
			continue
		}
		seen[id] = true
		opt.Values = append(opt.Values, shared.ConfigValue{ID: id, Name: cut(v.Name, shared.MaxConfigNameBytes, id), Description: cutPtr(v.Description)})
	}
	if len(opt.Values) == 0 || !opt.Offers(opt.Current) {
		return nil
	}
	return []shared.ConfigOption{opt}
}

// cut bounds an agent's name; an empty one reads as fallback.
func cut(s string, n int, fallback string) string {
	if s == "" {
		return fallback
	}
	return store.CutText(s, n)
}

func cutPtr(s *string) string {
	if s == nil {
		return ""
	}
	return store.CutText(*s, shared.MaxConfigDetailBytes)
}

// offered records the modes and config options the agent offers, if any: its config
// options, else its models.
func (s *session) offered(o offer) {
	if o.modes != nil && len(o.modes.AvailableModes) > 0 {
		s.recordModes(modesOf(o.modes))
	}
	switch {
	case len(o.config) > 0:
		s.recordConfig(configOf(o.config), false)
	case o.models != nil:
		s.recordConfig(modelsOption(o.models), true)
	}
}

// recordConfig stores the options the agent offers; models says they are its model list.
func (s *session) recordConfig(opts []shared.ConfigOption, models bool) {
	s.keep(func() (shared.Session, error) {
		sess, err := s.m.cfg.Store.SetSessionConfig(context.Background(), s.id, opts)
		if err == nil {
			s.config, s.models = opts, models
		}
		return sess, err
	})
}

// setConfig asks the agent to set one of its options (session/set_config_option, or
// session/set_model for a model list) and records what it answers.
func (s *session) setConfig(ctx context.Context, r shared.ConfigRequest) (shared.Session, error) {
	if err := s.startedYet(); err != nil {
		return shared.Session{}, err
	}
	s.rowMu.Lock()
	opt, models, err := s.configOption(r)
	s.rowMu.Unlock()
	if err != nil {
		return shared.Session{}, err
	}
	// Not under rowMu: the agent may report the change (config_option_update) before
	// it answers, and the reader that takes that report must not wait for this call.
	var answered []sdk.SessionConfigOption
	method := sdk.AgentMethodSessionSetConfigOption
	if models {
		method = sdk.AgentMethodSessionSetModel
	}
	id := s.agentSession()
	if err := s.request(ctx, method, func(ctx context.Context) error {
		if models {
			_, err := s.conn.UnstableSetSessionModel(ctx, sdk.UnstableSetSessionModelRequest{SessionId: id, ModelId: sdk.UnstableModelId(opt.Current)})
			return err
		}
		req := sdk.SetSessionConfigOptionRequest{ValueId: &sdk.SetSessionConfigOptionValueId{SessionId: id, ConfigId: sdk.SessionConfigId(opt.ID), Value: sdk.SessionConfigValueId(opt.Current)}}
		if opt.Type == shared.ConfigBoolean {
			req = sdk.SetSessionConfigOptionRequest{Boolean: &sdk.SetSessionConfigOptionBoolean{SessionId: id, ConfigId: sdk.SessionConfigId(opt.ID), Type: shared.ConfigBoolean, Value: opt.On}}
		}
		resp, err := s.conn.SetSessionConfigOption(ctx, req)
		answered = resp.ConfigOptions
		return err
	}); err != nil {
		return shared.Session{}, err
	}
	return s.write(func() (shared.Session, error) {
		opts := configOf(answered) // ACP: the answer is the whole set, with the new value
		if len(opts) == 0 {        // an agent that answered with none: the value it accepted
			opts = replaced(s.config, opt)
		}
		sess, err := s.m.cfg.Store.SetSessionConfig(ctx, s.id, opts)
		if err == nil {
			s.config = opts
		}
		return sess, err
	})
}

// configOption returns the option r sets, holding r's value, and whether it is the model
// list; rowMu is held.
func (s *session) configOption(r shared.ConfigRequest) (shared.ConfigOption, bool, error) {
	i := -1
	for j, o := range s.config {
		if o.ID == r.ConfigID {
			i = j
			break
		}
	}
	if i < 0 {
		if len(s.config) == 0 {
			return shared.ConfigOption{}, false, shared.Errorf(shared.CodeConflict, "the agent offers no config options")
		}
		return shared.ConfigOption{}, false, shared.Errorf(shared.CodeInvalid, "config option %q is not offered by the agent", r.ConfigID)
	}
	opt := s.config[i]
	switch v := r.Value.(type) { // one of the two (ConfigRequest.Check)
	case string:
		if opt.Type != shared.ConfigSelect || !opt.Offers(v) {
			return opt, false, shared.Errorf(shared.CodeInvalid, "%q is not a value of config option %q", v, r.ConfigID)
		}
		opt.Current = v
	case bool:
		if opt.Type != shared.ConfigBoolean {
			return opt, false, shared.Errorf(shared.CodeInvalid, "config option %q takes one of its values, not a boolean", r.ConfigID)
		}
		opt.On = v
	}
	return opt, s.models, nil
}

// replaced is opts with the option of opt's id replaced by opt.
func replaced(opts []shared.ConfigOption, opt shared.ConfigOption) []shared.ConfigOption {
	out := make([]shared.ConfigOption, len(opts))
	for i, o := range opts {
		if o.ID == opt.ID {
			o = opt
		}
		out[i] = o
	}
	return out
}

// SetConfig sets one of the config options the session's agent offers to one of its
// values (a string) or, for a boolean, true or false. An option or value it does not
// offer is shared.CodeInvalid; a session without a live agent, or an agent that offers
// no options or refuses, shared.CodeConflict; an agent that does not answer within
// RequestTimeout, shared.CodeTimeout.
func (m *Manager) SetConfig(ctx context.Context, sessionID string, r shared.ConfigRequest) (shared.Session, error) {
	if err := r.Check(); err != nil {
		return shared.Session{}, err
	}
	s, err := m.live(sessionID)
	if err != nil {
		return shared.Session{}, err
	}
	return s.setConfig(ctx, r)
}
