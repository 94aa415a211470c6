package client

import (
	"context"
	"net/url"

	"conch/shared"
)

// Me is the account of this client: a person's, "token" for the server's token, or
// "local" on a server without one.
func (c *Client) Me(ctx context.Context) (shared.Account, error) {
	var a shared.Account
	return a, c.call(ctx, "GET", "/api/v1/me", nil, &a)
}

// Accounts lists every account (admins only).
func (c *Client) Accounts(ctx context.Context) ([]shared.Account, error) {
	var out struct {
		Accounts []shared.Account `json:"accounts"`
	}
	return out.Accounts, c.call(ctx, "GET", "/api/v1/accounts", nil, &out)
}

// Invite makes a one-time link that creates an account of role (admins only).
func (c *Client) Invite(ctx context.Context, role string) (shared.Invitation, error) {
	var inv shared.Invitation
	return inv, c.call(ctx, "POST", "/api/v1/accounts", shared.NewAccount{Role: role}, &inv)
}

// CreateAccount makes an account with a password at once (admins only).
func (c *Client) CreateAccount(ctx context.Context, login, role, password string) (shared.Account, error) {
	var a shared.Account
	return a, c.call(ctx, "POST", "/api/v1/accounts", shared.NewAccount{Login: login, Role: role, Password: password}, &a)
}

// DeleteAccount deletes an account with its sign-ins and tokens (admins only).
func (c *Client) DeleteAccount(ctx context.Context, id string) error {
	return c.call(ctx, "DELETE", "/api/v1/accounts/"+url.PathEscape(id), nil, nil)
}

// AccessTokens lists this account's tokens, without their secrets.
func (c *Client) AccessTokens(ctx context.Context) ([]shared.AccessToken, error) {
	return c.tokens(ctx, "/api/v1/tokens")
}

// tokens lists the access or runner tokens of path, without their secrets.
func (c *Client) tokens(ctx context.Context, path string) ([]shared.AccessToken, error) {
	var out struct {
		Tokens []shared.AccessToken `json:"tokens"`
	}
	return out.Tokens, c.call(ctx, "GET", path, nil, &out)
}

// CreateAccessToken makes a token of this account that ends days from now (0: when
// revoked); its Token is the secret, shown once.
func (c *Client) CreateAccessToken(ctx context.Context, name string, days int) (shared.AccessToken, error) {
	var t shared.AccessToken
	return t, c.call(ctx, "POST", "/api/v1/tokens", shared.NewAccessToken{Name: name, ExpiresInDays: days}, &t)
}

// RevokeAccessToken revokes one of this account's tokens.
func (c *Client) RevokeAccessToken(ctx context.Context, id string) error {
	return c.call(ctx, "DELETE", "/api/v1/tokens/"+url.PathEscape(id), nil, nil)
}

// ShareLinks lists a task's read-only links that still work (its owner or an admin).
func (c *Client) ShareLinks(ctx context.Context, taskID string) ([]shared.ShareLink, error) {
	var out struct {
		Links []shared.ShareLink `json:"links"`
	}
	return out.Links, c.call(ctx, "GET", "/api/v1/tasks/"+url.PathEscape(taskID)+"/links", nil, &out)
}

// CreateShareLink makes a read-only link to a task that works for days days; its URL is in
// this answer only.
func (c *Client) CreateShareLink(ctx context.Context, taskID string, days int) (shared.ShareLink, error) {
	var l shared.ShareLink
	return l, c.call(ctx, "POST", "/api/v1/tasks/"+url.PathEscape(taskID)+"/links", shared.NewShareLink{Days: days}, &l)
}

// RevokeShareLink revokes a task's link and signs its guests out.
func (c *Client) RevokeShareLink(ctx context.Context, taskID, id string) error {
	return c.call(ctx, "DELETE", "/api/v1/tasks/"+url.PathEscape(taskID)+"/links/"+url.PathEscape(id), nil, nil)
}
