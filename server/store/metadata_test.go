package store

import (
	"encoding/json"
	"reflect"
	"testing"

	"conch/shared"
)

// Stored metadata decodes as encoding/json decodes it, whatever it holds: what the store
// writes (a reply's markdown tree, a plan's, a command's summary, a question's answers of
// any JSON type) and what it would not write but an older server or a hand-edited file
// might have (names in other cases, a name twice, invalid UTF-8, escapes, numbers out of
// range). A decode error is one in both.
func TestMetadataDecodesAsEncodingJSON(t *testing.T) {
	reply := "Step 3: the tests in `./pkg3` **passed**.\n\n- keeps *ranges*\n- [the index](https://example.com/i)\n\n```go\nfunc f() {}\n```\n"
	written := []*shared.Metadata{
		withMarkdown(shared.AuthorAgent, shared.TypeMessage, reply, nil),
		withMarkdown(shared.AuthorAgent, shared.TypePlan, "", &shared.Metadata{Entries: []shared.PlanEntry{
			{Content: "run **tests**", Priority: "high", Status: "completed"}, {Content: "ship", Priority: "low", Status: "pending"}}}),
		shellMeta(shared.StatusFailed),
		{Elicitation: &shared.Elicitation{Mode: shared.ElicitForm, Action: "accept",
			Content: map[string]any{"n": 1.5, "list": []any{"a", true, nil, 2.0}, "o": map[string]any{"x": "y"}}}},
	}
	var cases []string
	for _, md := range written {
		raw, err := encodeMetadata(md)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, string(raw))
	}
	cases = append(cases,
		`{"Title":"upper case","STATUS":"running"}`,
		`{"title":"first","title":"second"}`,
		"{\"title\":\"bad \xff bytes\"}",
		`{"title":"\u003cb\u003e \u2028 \ud83d\ude00 \ud800"}`,
		`{"detail_bytes":1e400}`,
		`{"detail_bytes":1.5}`,
		`{"elicitation":{"content":{"big":123456789012345678901234567890,"neg":-0}}}`,
		`{"markdown":null,"entries":[],"unknown":{"deep":[1,2]}}`,
		`{"title":1}`,
		`[]`,
		`{"title":"unterminated`,
	)
	for _, raw := range cases {
		want := new(shared.Metadata)
		wantErr := json.Unmarshal([]byte(raw), want)
		got, err := decodeMetadata([]byte(raw))
		if (err != nil) != (wantErr != nil) {
			t.Errorf("%s: error %v, encoding/json's %v", raw, err, wantErr)
			continue
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", raw, got, want)
		}
	}
}
