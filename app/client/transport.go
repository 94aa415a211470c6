//go:build !js

package client

import (
	"bytes"
	"context"
	"io"
	"net/http"

	"conch/shared"
)

func (c *Client) roundTrip(ctx context.Context, method, url, ifNoneMatch, contentType string, body []byte) (answer, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	if ifNoneMatch != "" {
		req.Header.Set("If-None-Match", ifNoneMatch)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer r.Body.Close()
	resp, err := io.ReadAll(r.Body)
	return answer{status: r.StatusCode, etag: r.Header.Get("ETag"), offline: r.Header.Get(shared.OfflineHeader) == "1", body: resp}, err
}

func (c *Client) wsBase() string { return c.base }
