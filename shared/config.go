package shared

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Config option kinds (ACP session config options).
const (
	ConfigSelect  = "select"  // one value of a list (a model, a mode, a thought level)
	ConfigBoolean = "boolean" // on or off
)

// Bounds of what an agent offers as config options: an option or value past them, or
// whose id is not plain text (PlainText), is left out; longer names and descriptions are
// cut.
const (
	MaxConfigOptions     = 16  // options per session
	MaxConfigValues      = 64  // values per select
	MaxConfigIDBytes     = 128 // an option's or a value's id, sent back as it came
	MaxConfigNameBytes   = 128 // a name, a category, a group's name
	MaxConfigDetailBytes = 512 // a description
)

// ConfigOption is one setting of an agent's session (ACP session config options, or the
// legacy model list): a select of values, or a boolean.
type ConfigOption struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Category is the agent's hint of what it sets (mode, model, model_config,
	// thought_level, or its own); the UI needs none to show the option.
	Category string        `json:"category,omitempty"`
	Type     string        `json:"type"`              // ConfigSelect or ConfigBoolean
	Current  string        `json:"current,omitempty"` // a select's value
	On       bool          `json:"on,omitempty"`      // a boolean's value
	Values   []ConfigValue `json:"values,omitempty"`  // a select's values
}

// Offers reports whether value is one of a select's values.
func (o ConfigOption) Offers(value string) bool {
	return slices.ContainsFunc(o.Values, func(v ConfigValue) bool { return v.ID == value })
}

// ConfigValue is one value of a select option.
type ConfigValue struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Group       string `json:"group,omitempty"` // the name of the group the agent lists it under
}

// ConfigRequest is the body of POST .../config and the payload of the WebSocket action
// session.set_config: Value is a string (a select's value id) or a boolean.
type ConfigRequest struct {
	SessionID string `json:"session_id,omitempty"`
	ConfigID  string `json:"config_id"`
	Value     any    `json:"value"`
}

// Check refuses a request without an option id, or whose value is neither a string nor a
// boolean, or an id or value that is not plain text.
func (r ConfigRequest) Check() error {
	if !PlainText(r.ConfigID, MaxConfigIDBytes) {
		return Errorf(CodeInvalid, "config_id is required: plain text of at most %d bytes", MaxConfigIDBytes)
	}
	switch v := r.Value.(type) {
	case bool:
	case string:
		if !PlainText(v, MaxConfigIDBytes) {
			return Errorf(CodeInvalid, "value is empty, over %d bytes, or not plain text", MaxConfigIDBytes)
		}
	default:
		return Errorf(CodeInvalid, "value must be a string (a select's value) or a boolean")
	}
	return nil
}

// PlainText reports whether s is an id fit to store and send back: not empty, at most max
// bytes, valid UTF-8, no control characters.
func PlainText(s string, max int) bool {
	return s != "" && len(s) <= max && utf8.ValidString(s) && !strings.ContainsFunc(s, unicode.IsControl)
}
