package acp

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"conch/shared"
)

// An agent's question (elicitation/create, unstable in ACP) is answered by a person as a
// permission request is (permission.go): stored as an elicitation message, registered under
// its id, and whichever of the person's answer, a withdrawal and (for a URL question) the
// agent's own elicitation/complete reaches it first wins. Only
// an `ask` profile offers it (elicitationCapabilities), as only there a person answers.
// What the agent asks is checked against shared.Elicitation's bounds before anything is
// stored; a question out of them is refused to the agent and told to the person.

// elicitationCapabilities is what the client advertises for the profile: both modes
// where a person answers, none otherwise.
func (p Profile) elicitationCapabilities() *sdk.ElicitationCapabilities {
	if p.Permission == PermissionAllow || p.Permission == PermissionDeny { // as decide: no policy asks
		return nil
	}
	return &sdk.ElicitationCapabilities{Form: &sdk.ElicitationFormCapabilities{}, Url: &sdk.ElicitationUrlCapabilities{}}
}

var elicitCancelled = sdk.NewUnstableCreateElicitationResponseCancel()

// UnstableCreateElicitation asks the person the agent's question and answers with what
// the person chose: accept (with a form's content), decline, or cancel when the question
// was withdrawn.
func (s *session) UnstableCreateElicitation(ctx context.Context, p sdk.UnstableCreateElicitationRequest) (sdk.UnstableCreateElicitationResponse, error) {
	if s.profile.elicitationCapabilities() == nil {
		return elicitCancelled, sdk.NewInvalidRequest(map[string]any{"error": "this client did not offer elicitation"})
	}
	question, e, err := elicitation(p)
	if err == nil {
		err = e.Check(question)
	}
	if err != nil {
		s.log.Warn("an agent's question refused", "err", err)
		s.say("The agent asked a question Conch does not show: " + shared.ErrorMessage(err) + ".")
		return elicitCancelled, sdk.NewInvalidParams(map[string]any{"error": shared.ErrorMessage(err)})
	}
	s.rec.flush() // what the agent said before asking is shown first
	var url sdk.UnstableElicitationId
	if p.Url != nil {
		url = p.Url.ElicitationId
	}
	body, err := s.wait(ctx, shared.TypeElicitation, question, &shared.Metadata{Status: shared.StatusPending, Elicitation: &e}, url)
	var a shared.ElicitationAnswer
	if err != nil || body == "" || json.Unmarshal([]byte(body), &a) != nil {
		return elicitCancelled, err
	}
	switch a.Action {
	case shared.ElicitAccept:
		r := sdk.NewUnstableCreateElicitationResponseAccept()
		r.Accept.Content = a.Content
		return r, nil
	case shared.ElicitDecline:
		return sdk.NewUnstableCreateElicitationResponseDecline(), nil
	}
	return elicitCancelled, nil
}

// elicitCompleted is what the agent's URL question is answered when the agent itself
// says the person's step is done: accept, as the person's Done would.
var elicitCompleted = shared.Elicitation{Action: shared.ElicitAccept}.Answered()

// UnstableCompleteElicitation ends the URL question the agent says is done (the person
// finished the step on its page): stored completed, so every tab stops asking, and the
// agent's request answered accept. An id of no question waiting here (unknown, of another
// session's agent, answered or withdrawn already) changes nothing.
func (s *session) UnstableCompleteElicitation(_ context.Context, p sdk.UnstableCompleteElicitationNotification) error {
	s.do(func(c *core) {
		id := c.asks.byURL(p.ElicitationId)
		if id == "" {
			s.log.Warn("the agent completed no question that waits", "elicitation", shared.CutLabel(string(p.ElicitationId)))
			return
		}
		m, changed, err := s.m.cfg.Store.CompleteElicitation(context.Background(), s.id, id)
		if err != nil { // it waits on for the person's answer
			s.log.Error("complete a question", "message", id, "err", err)
			return
		}
		c.asks.answer(id, elicitCompleted)
		if changed {
			s.m.cfg.Events.MessageUpdated(m)
		}
	})
	return nil
}

// property is the part of ACP's restricted JSON Schema property that Conch shows: MCP's
// (2025-11-25), where a multi-select is an array whose items are a string enum or anyOf.
type property struct {
	Type        string `json:"type"`
	Title       string `json:"title"`
	Description string `json:"description"`
	choices
	Items *struct {
		Type string `json:"type"`
		choices
	} `json:"items"`
	Minimum   *float64 `json:"minimum"`
	Maximum   *float64 `json:"maximum"`
	MinLength *float64 `json:"minLength"`
	MaxLength *float64 `json:"maxLength"`
	MinItems  *float64 `json:"minItems"`
	MaxItems  *float64 `json:"maxItems"`
	Default   any      `json:"default"`
}

// choices are a field's fixed values: untitled (enum) or titled (oneOf for one, anyOf
// for an array's items).
type choices struct {
	Enum  []string `json:"enum"`
	OneOf []choice `json:"oneOf"`
	AnyOf []choice `json:"anyOf"`
}

type choice struct {
	Const string `json:"const"`
	Title string `json:"title"`
}

func (c choices) options() []shared.ElicitationOption {
	var opts []shared.ElicitationOption
	for _, v := range c.Enum {
		opts = append(opts, shared.ElicitationOption{Value: v})
	}
	for _, o := range slices.Concat(c.OneOf, c.AnyOf) {
		opts = append(opts, shared.ElicitationOption{Value: o.Const, Title: o.Title})
	}
	return opts
}

// elicitation returns the question an agent's request asks, and its form or URL. The
// fields come in the order of their names: the SDK decodes the properties into a map.
func elicitation(p sdk.UnstableCreateElicitationRequest) (string, shared.Elicitation, error) {
	if u := p.Url; u != nil {
		return u.Message, shared.Elicitation{Mode: shared.ElicitURL, URL: u.Url}, nil
	}
	f := p.Form
	schema := f.RequestedSchema
	if len(schema.Properties) > shared.MaxElicitationFields {
		return "", shared.Elicitation{}, shared.Errorf(shared.CodeInvalid, "a form has at most %d fields, not %d", shared.MaxElicitationFields, len(schema.Properties))
	}
	e := shared.Elicitation{Mode: shared.ElicitForm, Fields: make([]shared.ElicitationField, 0, len(schema.Properties))}
	for name, raw := range schema.Properties {
		var pr property
		b, err := json.Marshal(raw)
		if err == nil {
			err = json.Unmarshal(b, &pr)
		}
		if err != nil {
			return "", e, shared.Errorf(shared.CodeInvalid, "field %s is not a schema Conch reads", shared.CutLabel(name))
		}
		fd := shared.ElicitationField{Name: name, Type: pr.Type, Title: pr.Title, Description: pr.Description,
			Required: slices.Contains(schema.Required, name), Min: pr.Minimum, Max: pr.Maximum, Default: pr.Default}
		values := pr.choices
		switch pr.Type {
		case shared.FieldString:
			fd.Min, fd.Max = pr.MinLength, pr.MaxLength
		case shared.FieldArray:
			if pr.Items == nil || pr.Items.Type != "" && pr.Items.Type != shared.FieldString {
				return "", e, shared.Errorf(shared.CodeInvalid, "field %s: a list's items must be text options", shared.CutLabel(name))
			}
			fd.Min, fd.Max, values = pr.MinItems, pr.MaxItems, pr.Items.choices
		}
		fd.Options = values.options()
		e.Fields = append(e.Fields, fd)
	}
	for _, r := range schema.Required {
		if _, ok := schema.Properties[r]; !ok {
			return "", e, shared.Errorf(shared.CodeInvalid, "the required field %s is not in the form", shared.CutLabel(r))
		}
	}
	slices.SortFunc(e.Fields, func(a, b shared.ElicitationField) int { return strings.Compare(a.Name, b.Name) })
	return f.Message, e, nil
}
