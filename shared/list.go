package shared

import (
	"net/url"
	"strconv"
)

// Sort orders of a message list.
const (
	SortAsc  = "asc"
	SortDesc = "desc"
)

// Page bounds of a message list. A page also stops once its messages' content and
// metadata pass MaxPageBytes (after at least one message), and then says has_more: agent
// text segments reach 256 KiB each, so 500 of them would be a page of 128 MiB.
const (
	DefaultPageLimit = 100
	MaxPageLimit     = 500
	MaxPageBytes     = 4 << 20
)

// ListRequest selects a page of a session's messages: the payload of message.list, the
// path and query of GET .../messages, and what the store and the Go client take. Pages
// are keyset ranges on (created_at, id): Before takes the messages just older than that
// message, After the ones just newer; without either, asc starts at the oldest and desc
// at the newest. Limit is a pointer so that a limit given as 0 is refused rather than
// taken for "none given".
type ListRequest struct {
	SessionID string `json:"session_id"`
	Limit     *int   `json:"limit,omitempty"`
	Before    string `json:"before,omitempty"`
	After     string `json:"after,omitempty"`
	Sort      string `json:"sort,omitempty"`
}

var errLimit = Errorf(CodeInvalid, "limit must be a positive integer")

// Normalize is the one check of a list request (docs/API.md, "Pages of messages"): it
// refuses a limit that is not positive, both cursors and an unknown sort, and fills in
// the defaults, so that Limit is set, at most MaxPageLimit, and Sort is asc or desc.
func (r ListRequest) Normalize() (ListRequest, error) {
	switch {
	case r.Limit == nil:
		r.Limit = new(DefaultPageLimit)
	case *r.Limit <= 0:
		return r, errLimit
	case *r.Limit > MaxPageLimit:
		r.Limit = new(MaxPageLimit)
	}
	switch {
	case r.Before != "" && r.After != "":
		return r, Errorf(CodeInvalid, "give before or after, not both")
	case r.Sort == "":
		r.Sort = SortAsc
	case r.Sort != SortAsc && r.Sort != SortDesc:
		return r, Errorf(CodeInvalid, "sort must be asc or desc")
	}
	return r, nil
}

// Query is r as the query of GET .../messages; the session goes in the path.
func (r ListRequest) Query() url.Values {
	q := url.Values{}
	if r.Limit != nil {
		q.Set("limit", strconv.Itoa(*r.Limit))
	}
	for key, v := range map[string]string{"before": r.Before, "after": r.After, "sort": r.Sort} {
		if v != "" {
			q.Set(key, v)
		}
	}
	return q
}

// ParseListQuery reads the query of GET .../messages, the inverse of Query. It refuses
// only a limit that is not an integer; Normalize checks the rest.
func ParseListQuery(sessionID string, q url.Values) (ListRequest, error) {
	r := ListRequest{SessionID: sessionID, Before: q.Get("before"), After: q.Get("after"), Sort: q.Get("sort")}
	if q.Has("limit") {
		n, err := ParseLimit(q.Get("limit"))
		if err != nil {
			return r, err
		}
		r.Limit = n
	}
	return r, nil
}

// ParseLimit reads a limit written as text (a query value, a JSON value): anything but
// an integer, one too large included, is refused as any other bad limit.
func ParseLimit(text string) (*int, error) {
	n, err := strconv.Atoi(text)
	if err != nil {
		return nil, errLimit
	}
	return &n, nil
}
