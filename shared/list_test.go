package shared

import (
	"encoding/json"
	"net/url"
	"testing"
)

// TestListRequestNormalize is the one check of a list request, whichever way it came.
func TestListRequestNormalize(t *testing.T) {
	for _, c := range []struct {
		name  string
		in    ListRequest
		limit int
		sort  string
		err   string
	}{
		{"defaults", ListRequest{}, DefaultPageLimit, SortAsc, ""},
		{"given", ListRequest{Limit: new(7), Sort: SortDesc, Before: "m1"}, 7, SortDesc, ""},
		{"at the cap", ListRequest{Limit: new(MaxPageLimit)}, MaxPageLimit, SortAsc, ""},
		{"capped", ListRequest{Limit: new(MaxPageLimit + 1)}, MaxPageLimit, SortAsc, ""},
		{"zero", ListRequest{Limit: new(0)}, 0, "", "limit must be a positive integer"},
		{"negative", ListRequest{Limit: new(-1)}, 0, "", "limit must be a positive integer"},
		{"both cursors", ListRequest{Before: "a", After: "b"}, 0, "", "give before or after, not both"},
		{"bad sort", ListRequest{Sort: "up"}, 0, "", "sort must be asc or desc"},
	} {
		got, err := c.in.Normalize()
		switch {
		case c.err != "":
			if ErrorCode(err) != CodeInvalid || ErrorMessage(err) != c.err {
				t.Errorf("%s: %v, want invalid %q", c.name, err, c.err)
			}
		case err != nil || *got.Limit != c.limit || got.Sort != c.sort:
			t.Errorf("%s: %+v %v, want limit %d sort %s", c.name, got, err, c.limit, c.sort)
		}
	}
}

// TestListRequestWire pins the message.list payload and the REST query, and that the
// query parses back to the same request.
func TestListRequestWire(t *testing.T) {
	for _, c := range []struct {
		in          ListRequest
		json, query string
	}{
		{ListRequest{SessionID: "s1"}, `{"session_id":"s1"}`, ""},
		{ListRequest{SessionID: "s1", Limit: new(0)}, `{"session_id":"s1","limit":0}`, "limit=0"},
		{ListRequest{SessionID: "s1", Limit: new(5), Before: "m9", Sort: SortDesc},
			`{"session_id":"s1","limit":5,"before":"m9","sort":"desc"}`, "before=m9&limit=5&sort=desc"},
		{ListRequest{SessionID: "s1", After: "m1"}, `{"session_id":"s1","after":"m1"}`, "after=m1"},
	} {
		if got, err := json.Marshal(c.in); err != nil || string(got) != c.json {
			t.Errorf("JSON %s %v, want %s", got, err, c.json)
		}
		var back ListRequest
		if err := json.Unmarshal([]byte(c.json), &back); err != nil || !sameRequest(back, c.in) {
			t.Errorf("JSON %s decodes to %+v %v", c.json, back, err)
		}
		q := c.in.Query()
		if got := q.Encode(); got != c.query {
			t.Errorf("query %q, want %q", got, c.query)
		}
		if back, err := ParseListQuery("s1", q); err != nil || !sameRequest(back, c.in) {
			t.Errorf("query %q parses to %+v %v", c.query, back, err)
		}
	}
	for _, raw := range []string{"limit=", "limit=abc", "limit=1.5", "limit=0x10"} {
		q, _ := url.ParseQuery(raw)
		if _, err := ParseListQuery("s1", q); ErrorMessage(err) != "limit must be a positive integer" {
			t.Errorf("%s: %v", raw, err)
		}
	}
}

func sameRequest(a, b ListRequest) bool {
	if (a.Limit == nil) != (b.Limit == nil) || (a.Limit != nil && *a.Limit != *b.Limit) {
		return false
	}
	a.Limit, b.Limit = nil, nil
	return a == b
}
