//go:build !js

package client

import (
	"bytes"
	"context"
	"io"
	"net/http"

	"github.com/coder/websocket"
)

func (c *Client) roundTrip(ctx context.Context, method, url string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func (c *Client) wsBase() string { return c.base }

func (c *Client) dialOptions() *websocket.DialOptions {
	if c.token == "" {
		return nil
	}
	return &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + c.token}}}
}
