package shared

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

func TestVisible(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"go test ./...", "go test ./..."},
		{"", ""},
		{"cp x \u202e#gnp.tahc", "cp x ⟨U+202E⟩#gnp.tahc"}, // shows as "cp x chat.png#" unmarked
		{"a\u202ab\u202bc\u202cd\u202de", "a⟨U+202A⟩b⟨U+202B⟩c⟨U+202C⟩d⟨U+202D⟩e"},
		{"\u2066x\u2067y\u2068z\u2069", "⟨U+2066⟩x⟨U+2067⟩y⟨U+2068⟩z⟨U+2069⟩"},
		{"rm\u200b -rf", "rm⟨U+200B⟩ -rf"},
		{"\ufeffBOM", "⟨U+FEFF⟩BOM"},
		{"tag\U000E0041", "tag⟨U+E0041⟩"},
		{"é ü 日本 ✓\ttab\nline", "é ü 日本 ✓\ttab\nline"},                             // letters, marks, symbols, whitespace stay
		{"👩\u200d💻 ❤\ufe0f\u200d🔥 👋🏽\u200d", "👩\u200d💻 ❤\ufe0f\u200d🔥 👋🏽⟨U+200D⟩"}, // an emoji's joiners stay
		{"rm\u200d -rf a\u200db 👩\u200db", "rm⟨U+200D⟩ -rf a⟨U+200D⟩b 👩⟨U+200D⟩b"},
	} {
		if got := Visible(tc.in); got != tc.want {
			t.Errorf("Visible(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzVisible: whatever the input, the result has no format character, text without one
// is unchanged, and marking twice marks nothing more.
func FuzzVisible(f *testing.F) {
	for _, seed := range []string{"", "ls", "x\u202e#gnp.tahc", "\u2066\u2069", "a\u200db", "\xff\xfe", "⟨U+202E⟩"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Visible(s)
		runes := []rune(got)
		for i, r := range runes {
			if unicode.Is(unicode.Cf, r) && (r != zwj || i == 0 || i+1 == len(runes) || !pictograph(runes[i-1]) || !pictograph(runes[i+1])) {
				t.Fatalf("Visible(%q) = %q keeps a format character that is not an emoji's joiner", s, got)
			}
		}
		if utf8.ValidString(s) && strings.IndexFunc(s, isFormat) < 0 && got != s {
			t.Fatalf("Visible(%q) = %q changed text without format characters", s, got)
		}
		if again := Visible(got); again != got {
			t.Fatalf("Visible is not idempotent on %q", s)
		}
	})
}

// TestVisibleValues: the Visible methods of the values that carry an agent's text to a
// page mark every string in them but the ids (and Conch's own kinds), change nothing else,
// and leave the value they were called on as it was. A field added later is marked unless
// it is named here.
func TestVisibleValues(t *testing.T) {
	kept := []string{
		"Message.ID", "Message.SessionID", "Message.TaskID", "Message.AuthorType", "Message.Type",
		"Message.Metadata.ToolCallID", "Message.Metadata.ClientMessageID", "Message.Metadata.SelectedOptionID",
		"Message.Metadata.Options.OptionID", "Message.Metadata.Normalized.Kind",
		"Session.ID", "Session.TaskID", "Session.State", "Session.Modes.Current", "Session.Modes.Available.ID",
		"Session.ConfigOptions.ID", "Session.ConfigOptions.Type", "Session.ConfigOptions.Current", "Session.ConfigOptions.Values.ID",
		"ToolContentSnapshot.MessageID", "ToolContentSnapshot.Items.Hunks.Lines.Kind",
		"Message.Metadata.Elicitation.Mode", "Message.Metadata.Elicitation.Action", "Message.Metadata.Elicitation.Fields.Name",
		"Message.Metadata.Elicitation.Fields.Type", "Message.Metadata.Elicitation.Fields.Options.Value",
		"Message.Metadata.Markdown.Kind", "Message.Metadata.Markdown.Align", "Message.Metadata.Entries.Markdown.Kind",
		"Message.Metadata.Entries.Markdown.Align",
	}
	for _, tc := range []struct {
		name    string
		visible func(any) any
		new     func() any
	}{
		{"Message", func(v any) any { return v.(Message).Visible() }, func() any { return filled[Message]() }},
		{"Session", func(v any) any { return v.(Session).Visible() }, func() any { return filled[Session]() }},
		{"ToolContentSnapshot", func(v any) any { return v.(ToolContentSnapshot).Visible() }, func() any { return filled[ToolContentSnapshot]() }},
	} {
		v := tc.new()
		got := tc.visible(v)
		compareVisible(t, reflect.ValueOf(got), reflect.ValueOf(tc.new()), tc.name, kept)
		if !reflect.DeepEqual(v, tc.new()) {
			t.Errorf("%s.Visible changed the value it was called on", tc.name)
		}
	}
}

// filled is a T with every string "x\u202e", every number 7, every bool true, every
// pointer set and every slice of one element (but a slice of a struct it is in: empty).
func filled[T any]() T {
	var v T
	fill(reflect.ValueOf(&v).Elem(), nil)
	return v
}

func fill(v reflect.Value, in []reflect.Type) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("x\u202e")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(7)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), in)
	case reflect.Slice:
		if slices.Contains(in, v.Type().Elem()) { // a tree's children
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0), in)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)))
			return
		}
		for i := range v.NumField() {
			fill(v.Field(i), append(in, v.Type()))
		}
	}
}

// compareVisible fails t where got is not want marked, path by path.
func compareVisible(t *testing.T, got, want reflect.Value, path string, kept []string) {
	t.Helper()
	switch got.Kind() {
	case reflect.String:
		w := want.String()
		if !slices.Contains(kept, path) {
			w = Visible(w)
		}
		if got.String() != w {
			t.Errorf("%s is %q, want %q", path, got.String(), w)
		}
	case reflect.Pointer:
		if got.IsNil() != want.IsNil() {
			t.Fatalf("%s: nil %v, want %v", path, got.IsNil(), want.IsNil())
		}
		compareVisible(t, got.Elem(), want.Elem(), path, kept)
	case reflect.Slice:
		if got.Len() != want.Len() {
			t.Fatalf("%s: %d elements, want %d", path, got.Len(), want.Len())
		}
		for i := range got.Len() {
			compareVisible(t, got.Index(i), want.Index(i), path, kept)
		}
	case reflect.Struct:
		if got.Type() != reflect.TypeFor[time.Time]() {
			for i := range got.NumField() {
				compareVisible(t, got.Field(i), want.Field(i), path+"."+got.Type().Field(i).Name, kept)
			}
			return
		}
		fallthrough // compared whole
	default: // maps and interfaces too: an answer's content and a field's default are values, kept
		if !reflect.DeepEqual(got.Interface(), want.Interface()) {
			t.Errorf("%s is %v, want %v", path, got.Interface(), want.Interface())
		}
	}
}
