package client

import (
	"context"
	"net/url"
	"strconv"

	"conch/shared"
)

// Search finds messages across sessions (GET /api/v1/search); q.Cursor continues from a
// page before.
func (c *Client) Search(ctx context.Context, q shared.SearchRequest) (shared.SearchPage, error) {
	v := url.Values{"q": {q.Query}}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Cursor != "" {
		v.Set("cursor", q.Cursor)
	}
	var p shared.SearchPage
	return p, c.call(ctx, "GET", "/api/v1/search?"+v.Encode(), nil, &p)
}
