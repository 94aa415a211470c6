//go:build !js

package client

import (
	"bytes"
	"context"
	"io"
	"net/http"

	"github.com/coder/websocket"
)

func (c *Client) roundTrip(ctx context.Context, method, url, ifNoneMatch string, body []byte) (status int, etag string, resp []byte, err error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return 0, "", nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if ifNoneMatch != "" {
		req.Header.Set("If-None-Match", ifNoneMatch)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer r.Body.Close()
	resp, err = io.ReadAll(r.Body)
	return r.StatusCode, r.Header.Get("ETag"), resp, err
}

func (c *Client) wsBase() string { return c.base }

func (c *Client) dialOptions() *websocket.DialOptions {
	if c.token == "" {
		return nil
	}
	return &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + c.token}}}
}
