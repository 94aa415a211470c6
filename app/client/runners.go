package client

import (
	"context"
	"net/url"

	"conch/shared"
)

// Runners lists the runners the server knows (admins only).
func (c *Client) Runners(ctx context.Context) ([]shared.Runner, error) {
	var out shared.RunnerList
	return out.Runners, c.call(ctx, "GET", "/api/v1/runners", nil, &out)
}

// RunnerTokens lists the runner tokens, without their secrets (admins only).
func (c *Client) RunnerTokens(ctx context.Context) ([]shared.AccessToken, error) {
	return c.tokens(ctx, "/api/v1/runners/tokens")
}

// CreateRunnerToken makes a runner token (admins only); its Token is the secret, shown once.
func (c *Client) CreateRunnerToken(ctx context.Context, name string) (shared.AccessToken, error) {
	var t shared.AccessToken
	return t, c.call(ctx, "POST", "/api/v1/runners/tokens", shared.NewRunnerToken{Name: name}, &t)
}

// RevokeRunnerToken revokes a runner token, which drops the runners connected with it.
func (c *Client) RevokeRunnerToken(ctx context.Context, id string) error {
	return c.call(ctx, "DELETE", "/api/v1/runners/tokens/"+url.PathEscape(id), nil, nil)
}
