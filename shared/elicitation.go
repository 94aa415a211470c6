package shared

import (
	"encoding/json"
	"math"
	"net/url"
	"slices"
	"strings"
)

// Elicitation is an agent's question to a person (ACP's elicitation/create): a form of a
// few typed fields, or a page to visit. It is metadata.elicitation of an elicitation
// message, whose content is the agent's question; metadata.status is pending until a
// person answers (selected, with Action), the agent says a page's step is done
// (completed, elicitation/complete) or the agent no longer waits (cancelled).
type Elicitation struct {
	Mode string `json:"mode"`          // form | url
	URL  string `json:"url,omitempty"` // url mode: the page, shown as text
	// url mode: the host a link to URL opens, in its xn-- form, with its port; set by the
	// store's projection, "" when URL is no http(s) address (there is no link then).
	Host   string             `json:"host,omitempty"`
	Fields []ElicitationField `json:"fields,omitempty"`
	// What the person answered: accept (a form's Content) | decline | cancel.
	Action  string         `json:"action,omitempty"`
	Content map[string]any `json:"content,omitempty"`
}

// Modes of an elicitation, and the actions that answer one.
const (
	ElicitForm     = "form"
	ElicitURL      = "url"
	ElicitAccept   = "accept"
	ElicitDecline  = "decline"
	ElicitCancel   = "cancel"
	FieldString    = "string"
	FieldNumber    = "number"
	FieldInteger   = "integer"
	FieldBoolean   = "boolean"
	FieldArray     = "array" // several of the field's options (a multi-select), as a JSON array
	maxAnswerBytes = 4 << 10 // a string a person answers, when the field sets no maxLength
)

// ElicitationField is one field of a form: ACP's restricted JSON Schema property.
type ElicitationField struct {
	Name        string              `json:"name"`
	Type        string              `json:"type"` // string | number | integer | boolean | array
	Title       string              `json:"title,omitempty"`
	Description string              `json:"description,omitempty"`
	Required    bool                `json:"required,omitempty"`
	Options     []ElicitationOption `json:"options,omitempty"` // a string's or an array's only values
	// Min and Max bound a number (minimum, maximum), a string's length in characters
	// (minLength, maxLength) or how many options an array holds (minItems, maxItems).
	Min     *float64 `json:"min,omitempty"`
	Max     *float64 `json:"max,omitempty"`
	Default any      `json:"default,omitempty"`
}

// ElicitationOption is one value of a field with a fixed set, and its label.
type ElicitationOption struct {
	Value string `json:"value"`
	Title string `json:"title,omitempty"`
}

// Label is what a person reads for the field.
func (f ElicitationField) Label() string {
	if f.Title != "" {
		return f.Title
	}
	return f.Name
}

// ElicitationAnswer is the body of POST .../elicitations/{message_id} (action and
// content) and the payload of the WebSocket action elicitation.answer (all four).
type ElicitationAnswer struct {
	SessionID string         `json:"session_id,omitempty"`
	MessageID string         `json:"message_id,omitempty"`
	Action    string         `json:"action"`
	Content   map[string]any `json:"content,omitempty"`
}

// Answered is the person's answer as the agent's runtime takes it (acp.Manager.Answered):
// the action and content as JSON.
func (e Elicitation) Answered() string {
	b, _ := json.Marshal(ElicitationAnswer{Action: e.Action, Content: e.Content}) // decoded JSON always encodes
	return string(b)
}

// Bounds of an agent's question: what one message of a list may carry. The whole
// question (the message's content and its metadata.elicitation) is also bounded.
const (
	MaxElicitationMessage = 2 << 10
	MaxElicitationFields  = 16
	MaxElicitationName    = 64
	MaxElicitationTitle   = 200
	MaxElicitationDesc    = 1 << 10
	MaxElicitationOptions = 32
	MaxElicitationURL     = 2 << 10
	MaxElicitationBytes   = 16 << 10
)

// Check refuses a question of an agent that Conch does not show: out of its bounds, a
// field of a type it does not render, a URL that is not http(s).
func (e Elicitation) Check(message string) error {
	if err := CheckLength("message", message, MaxElicitationMessage); err != nil {
		return err
	}
	switch e.Mode {
	case ElicitURL:
		if err := CheckLength("url", e.URL, MaxElicitationURL); err != nil {
			return err
		}
		if u, err := url.Parse(e.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return Errorf(CodeInvalid, "url must be an http or https address")
		}
	case ElicitForm:
		if len(e.Fields) > MaxElicitationFields {
			return Errorf(CodeInvalid, "a form has at most %d fields, not %d", MaxElicitationFields, len(e.Fields))
		}
		for _, f := range e.Fields {
			if err := f.check(); err != nil {
				return err
			}
		}
	default:
		return Errorf(CodeInvalid, "mode must be form or url")
	}
	if b, err := json.Marshal(e); err != nil || len(b)+len(message) > MaxElicitationBytes {
		return Errorf(CodeInvalid, "the question is larger than %s", byteCount(MaxElicitationBytes))
	}
	return nil
}

func (f ElicitationField) check() error {
	if f.Name == "" {
		return Errorf(CodeInvalid, "a field has no name")
	}
	for _, c := range []struct {
		name, value string
		max         int
	}{{"a field's name", f.Name, MaxElicitationName}, {"field " + f.Name + "'s title", f.Title, MaxElicitationTitle},
		{"field " + f.Name + "'s description", f.Description, MaxElicitationDesc}} {
		if err := CheckLength(c.name, c.value, c.max); err != nil {
			return err
		}
	}
	switch f.Type {
	case FieldString, FieldNumber, FieldInteger, FieldBoolean:
	case FieldArray:
		if err := f.checkArray(); err != nil {
			return err
		}
	default:
		return Errorf(CodeInvalid, "field %s: type %q is not one Conch shows (string, number, integer, boolean, array)", f.Name, CutLabel(f.Type))
	}
	if len(f.Options) > MaxElicitationOptions {
		return Errorf(CodeInvalid, "field %s has more than %d options", f.Name, MaxElicitationOptions)
	}
	for i, o := range f.Options {
		if err := CheckLength("field "+f.Name+"'s option", o.Value, MaxElicitationTitle); err != nil {
			return err
		}
		if err := CheckLength("field "+f.Name+"'s option title", o.Title, MaxElicitationTitle); err != nil {
			return err
		}
		if hasOption(f.Options[:i], o.Value) {
			return Errorf(CodeInvalid, "field %s has the option %q twice", f.Name, CutLabel(o.Value))
		}
	}
	if f.Default != nil && f.value(f.Default) != nil {
		return Errorf(CodeInvalid, "field %s: its default is not one of its values", f.Name)
	}
	return nil
}

// hasOption reports whether one of opts has the value v.
func hasOption(opts []ElicitationOption, v string) bool {
	return slices.ContainsFunc(opts, func(o ElicitationOption) bool { return o.Value == v })
}

// checkArray refuses a multi-select a person could not answer: no options to tick, or
// bounds on how many that no answer meets.
func (f ElicitationField) checkArray() error {
	if len(f.Options) == 0 {
		return Errorf(CodeInvalid, "field %s: a list takes its items from options (items enum or anyOf)", f.Name)
	}
	for _, n := range []*float64{f.Min, f.Max} {
		if n != nil && (*n < 0 || *n != math.Trunc(*n)) {
			return Errorf(CodeInvalid, "field %s: minItems and maxItems must be whole numbers, at least 0", f.Name)
		}
	}
	if f.Min != nil && (*f.Min > float64(len(f.Options)) || f.Max != nil && *f.Min > *f.Max) {
		return Errorf(CodeInvalid, "field %s: no answer has at least %v of its %d options and at most its maxItems", f.Name, *f.Min, len(f.Options))
	}
	return nil
}

// CutLabel shortens an agent's word quoted in an error.
func CutLabel(s string) string {
	if len(s) > 40 {
		return strings.ToValidUTF8(s[:40], "") + "…"
	}
	return s
}

// CheckAnswer refuses a person's answer the question does not take: an unknown action,
// content with a decline or cancel, or a form's content that is not what its fields ask.
func (e Elicitation) CheckAnswer(a ElicitationAnswer) error {
	switch a.Action {
	case ElicitAccept:
		if e.Mode == ElicitURL && len(a.Content) > 0 {
			return Errorf(CodeInvalid, "a question with a url takes no content")
		}
	case ElicitDecline, ElicitCancel:
		if len(a.Content) > 0 {
			return Errorf(CodeInvalid, "%s takes no content", a.Action)
		}
		return nil
	default:
		return Errorf(CodeInvalid, "action must be accept, decline or cancel")
	}
	for name := range a.Content {
		if !slices.ContainsFunc(e.Fields, func(f ElicitationField) bool { return f.Name == name }) {
			return Errorf(CodeInvalid, "the question has no field %q", CutLabel(name))
		}
	}
	for _, f := range e.Fields {
		v, ok := a.Content[f.Name]
		if list, isList := v.([]any); !ok || v == nil || isList && len(list) == 0 && f.Required { // nothing ticked is no answer
			if f.Required {
				return Errorf(CodeInvalid, "%s is required", f.Label())
			}
			continue
		}
		if err := f.value(v); err != nil {
			return err
		}
	}
	return nil
}

// value refuses v, a decoded JSON value, unless the field takes it.
func (f ElicitationField) value(v any) error {
	between := func(n float64, what string) error {
		if f.Min != nil && n < *f.Min {
			return Errorf(CodeInvalid, "%s must be at least %v%s", f.Label(), *f.Min, what)
		}
		if f.Max != nil && n > *f.Max {
			return Errorf(CodeInvalid, "%s must be at most %v%s", f.Label(), *f.Max, what)
		}
		return nil
	}
	switch f.Type {
	case FieldString:
		s, ok := v.(string)
		if !ok {
			return Errorf(CodeInvalid, "%s must be text", f.Label())
		}
		if err := CheckLength(f.Label(), s, maxAnswerBytes); err != nil {
			return err
		}
		if len(f.Options) > 0 && !hasOption(f.Options, s) {
			return Errorf(CodeInvalid, "%s must be one of its options", f.Label())
		}
		return between(float64(len([]rune(s))), " characters long")
	case FieldNumber, FieldInteger:
		n, ok := v.(float64)
		if !ok || math.IsInf(n, 0) || math.IsNaN(n) {
			return Errorf(CodeInvalid, "%s must be a number", f.Label())
		}
		if f.Type == FieldInteger && (n != math.Trunc(n) || math.Abs(n) > 1<<53) {
			return Errorf(CodeInvalid, "%s must be a whole number", f.Label())
		}
		return between(n, "")
	case FieldBoolean:
		if _, ok := v.(bool); !ok {
			return Errorf(CodeInvalid, "%s must be true or false", f.Label())
		}
	case FieldArray:
		list, ok := v.([]any)
		if !ok {
			return Errorf(CodeInvalid, "%s must be a list of its options", f.Label())
		}
		for i, item := range list {
			s, ok := item.(string)
			if !ok || !hasOption(f.Options, s) {
				return Errorf(CodeInvalid, "%s must be a list of its options", f.Label())
			}
			if slices.Contains(list[:i], item) {
				return Errorf(CodeInvalid, "%s has %q twice", f.Label(), CutLabel(s))
			}
		}
		if n := float64(len(list)); f.Min != nil && n < *f.Min {
			return Errorf(CodeInvalid, "%s takes at least %v of its options", f.Label(), *f.Min)
		} else if f.Max != nil && n > *f.Max {
			return Errorf(CodeInvalid, "%s takes at most %v of its options", f.Label(), *f.Max)
		}
	}
	return nil
}
