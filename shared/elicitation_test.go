package shared

import (
	"strings"
	"testing"
)

func float(n float64) *float64 { return &n }

// toppings is a multi-select of three options, of which one to two are taken.
var toppings = ElicitationField{Name: "toppings", Type: FieldArray, Title: "Toppings", Required: true,
	Options: []ElicitationOption{{Value: "ham"}, {Value: "olive", Title: "Olives"}, {Value: "egg"}}, Min: float(1), Max: float(2)}

// A multi-select is a field Conch shows only with options to tick and bounds some answer
// meets; its default is a list of its options.
func TestElicitationCheckArray(t *testing.T) {
	with := func(change func(*ElicitationField)) Elicitation {
		f := toppings
		f.Options = append([]ElicitationOption(nil), toppings.Options...)
		change(&f)
		return Elicitation{Mode: ElicitForm, Fields: []ElicitationField{f}}
	}
	many := make([]ElicitationOption, MaxElicitationOptions+1)
	for i := range many {
		many[i].Value = strings.Repeat("o", i+1)
	}
	for name, tt := range map[string]struct {
		e    Elicitation
		want string
	}{
		"fits":          {with(func(*ElicitationField) {}), ""},
		"default":       {with(func(f *ElicitationField) { f.Default = []any{"egg"} }), ""},
		"no options":    {with(func(f *ElicitationField) { f.Options = nil }), "field toppings: a list takes its items from options (items enum or anyOf)"},
		"many options":  {with(func(f *ElicitationField) { f.Options = many }), "field toppings has more than 32 options"},
		"twice":         {with(func(f *ElicitationField) { f.Options[2].Value = "ham" }), `field toppings has the option "ham" twice`},
		"long option":   {with(func(f *ElicitationField) { f.Options[0].Value = strings.Repeat("h", 201) }), "field toppings's option is longer than 200 bytes"},
		"long title":    {with(func(f *ElicitationField) { f.Options[0].Title = strings.Repeat("h", 201) }), "field toppings's option title is longer than 200 bytes"},
		"nul option":    {with(func(f *ElicitationField) { f.Options[0].Value = "h\x00" }), "field toppings's option contains a NUL character"},
		"negative":      {with(func(f *ElicitationField) { f.Min = float(-1) }), "field toppings: minItems and maxItems must be whole numbers, at least 0"},
		"fraction":      {with(func(f *ElicitationField) { f.Max = float(1.5) }), "field toppings: minItems and maxItems must be whole numbers, at least 0"},
		"min > options": {with(func(f *ElicitationField) { f.Min, f.Max = float(4), nil }), "field toppings: no answer has at least 4 of its 3 options and at most its maxItems"},
		"min > max":     {with(func(f *ElicitationField) { f.Min, f.Max = float(2), float(1) }), "field toppings: no answer has at least 2 of its 3 options and at most its maxItems"},
		"bad default":   {with(func(f *ElicitationField) { f.Default = []any{"ham", "ham"} }), "field toppings: its default is not one of its values"},
		"text default":  {with(func(f *ElicitationField) { f.Default = "ham" }), "field toppings: its default is not one of its values"},
		"other type":    {with(func(f *ElicitationField) { f.Type = "object" }), `field toppings: type "object" is not one Conch shows (string, number, integer, boolean, array)`},
	} {
		err := tt.e.Check("q")
		if tt.want == "" && err != nil || tt.want != "" && (ErrorCode(err) != CodeInvalid || ErrorMessage(err) != tt.want) {
			t.Errorf("%s: %v, want %q", name, err, tt.want)
		}
	}
}

// A multi-select's answer is a JSON list of its options, each once, as many as it takes.
func TestElicitationAnswerArray(t *testing.T) {
	e := Elicitation{Mode: ElicitForm, Fields: []ElicitationField{toppings}}
	for _, tt := range []struct {
		content map[string]any
		want    string
	}{
		{map[string]any{"toppings": []any{"olive", "ham"}}, ""},
		{map[string]any{}, "Toppings is required"},
		{map[string]any{"toppings": []any{}}, "Toppings is required"},
		{map[string]any{"toppings": "ham"}, "Toppings must be a list of its options"},
		{map[string]any{"toppings": []any{"ham", 1.0}}, "Toppings must be a list of its options"},
		{map[string]any{"toppings": []any{"bacon"}}, "Toppings must be a list of its options"},
		{map[string]any{"toppings": []any{"Olives"}}, "Toppings must be a list of its options"}, // a title is not a value
		{map[string]any{"toppings": []any{"ham", "ham"}}, `Toppings has "ham" twice`},
		{map[string]any{"toppings": []any{"ham", "egg", "olive"}}, "Toppings takes at most 2 of its options"},
		{map[string]any{"toppings": map[string]any{"ham": true}}, "Toppings must be a list of its options"},
	} {
		err := e.CheckAnswer(ElicitationAnswer{Action: ElicitAccept, Content: tt.content})
		if tt.want == "" && err != nil || tt.want != "" && (ErrorCode(err) != CodeInvalid || ErrorMessage(err) != tt.want) {
			t.Errorf("%v: %v, want %q", tt.content, err, tt.want)
		}
	}
	optional := toppings
	optional.Required, optional.Min = false, float(2)
	e.Fields = []ElicitationField{optional}
	if err := e.CheckAnswer(ElicitationAnswer{Action: ElicitAccept, Content: map[string]any{"toppings": []any{"egg"}}}); ErrorMessage(err) != "Toppings takes at least 2 of its options" {
		t.Errorf("one of at least two: %v", err)
	}
	if err := e.CheckAnswer(ElicitationAnswer{Action: ElicitAccept}); err != nil {
		t.Errorf("an optional list left out: %v", err)
	}
}
