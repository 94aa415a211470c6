package client

import (
	"context"

	"conch/shared"
)

// PushKey is the server's VAPID public key; a server without Web Push answers not found.
func (c *Client) PushKey(ctx context.Context) (string, error) {
	var k shared.PushServerKey
	return k.PublicKey, c.call(ctx, "GET", "/api/v1/push/key", nil, &k)
}

// SubscribePush asks the server to notify the browser of sub.
func (c *Client) SubscribePush(ctx context.Context, sub shared.PushSubscription) (shared.PushSubscribed, error) {
	var out shared.PushSubscribed
	return out, c.call(ctx, "POST", "/api/v1/push/subscriptions", sub, &out)
}

// UnsubscribePush stops the notifications of the browser of endpoint.
func (c *Client) UnsubscribePush(ctx context.Context, endpoint string) error {
	return c.call(ctx, "DELETE", "/api/v1/push/subscriptions", shared.PushUnsubscribe{Endpoint: endpoint}, nil)
}
