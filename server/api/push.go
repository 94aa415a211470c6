package api

import (
	"context"
	"crypto/ecdh"
	"encoding/base64"
	"net/http"
	"strings"

	"conch/shared"

	"github.com/gofiber/fiber/v2"
)

// Web Push subscriptions (docs/API.md, "Notifications"): any role may ask to be told,
// for its own account; server/push sends.

// maxEndpointBytes bounds a push endpoint: the services' are 200 to 500 bytes.
const maxEndpointBytes = 1024

var errNoPush = shared.Errorf(shared.CodeNotFound, "Web Push is off on this server")

func (s *server) handlePushKey(c *fiber.Ctx) error {
	if s.pushKey == "" {
		return s.fail(c, errNoPush)
	}
	return sendJSON(c, shared.PushServerKey{PublicKey: s.pushKey})
}

// handleSubscribePush stores the browser's subscription for the request's account, and
// for the sign-in it came through (it ends with it).
func (s *server) handleSubscribePush(c *fiber.Ctx) error {
	if s.pushKey == "" {
		return s.fail(c, errNoPush)
	}
	var sub shared.PushSubscription
	if err := decodeBody(c.Body(), &sub); err != nil {
		return s.fail(c, err)
	}
	if err := s.checkSubscription(c.UserContext(), sub); err != nil {
		return s.fail(c, err)
	}
	signIn, err := s.signInUsed(c)
	if err != nil {
		return s.fail(c, err)
	}
	done, err := s.store.Subscribe(c.UserContext(), accountFrom(c.UserContext()).ID, signIn, sub)
	if err != nil {
		return s.fail(c, err)
	}
	return sendJSON(c.Status(http.StatusCreated), done)
}

func (s *server) handleUnsubscribePush(c *fiber.Ctx) error {
	var req shared.PushUnsubscribe
	if err := decodeBody(c.Body(), &req); err != nil {
		return s.fail(c, err)
	}
	if err := s.store.Unsubscribe(c.UserContext(), accountFrom(c.UserContext()).ID, req.Endpoint); err != nil {
		return s.fail(c, err)
	}
	return c.SendStatus(http.StatusNoContent)
}

// signInUsed is the sign-in the request came through: its cookie's, when that is what
// authenticated it (authenticate prefers it); "" for a bearer token.
func (s *server) signInUsed(c *fiber.Ctx) (string, error) {
	id, ok := s.signInOf(c.Cookies(cookieName))
	if s.token == "" || !ok {
		return "", nil
	}
	if _, live, err := s.store.SignedIn(c.UserContext(), id, s.now()); !live || err != nil {
		return "", err
	}
	return id, nil
}

// checkSubscription refuses what no browser gives: the server will send to the endpoint,
// so it must be an https URL of a public host (push.Endpoints), and the keys must be a
// P-256 point and a 16-byte secret (RFC 8291).
func (s *server) checkSubscription(ctx context.Context, sub shared.PushSubscription) error {
	if len(sub.Endpoint) > maxEndpointBytes || len(sub.Replaces) > maxEndpointBytes {
		return shared.Errorf(shared.CodeInvalid, "endpoint is over %d bytes", maxEndpointBytes)
	}
	key, kerr := decodeKey(sub.Keys.P256dh)
	auth, aerr := decodeKey(sub.Keys.Auth)
	if kerr == nil {
		_, kerr = ecdh.P256().NewPublicKey(key)
	}
	if kerr != nil || aerr != nil || len(auth) != 16 {
		return shared.Errorf(shared.CodeInvalid, "keys must hold p256dh, a P-256 public key, and auth, 16 bytes, in base64url")
	}
	return s.pushTo.Check(ctx, sub.Endpoint) // last: it looks the host up
}

// decodeKey reads base64url with or without padding, as browsers differ.
func decodeKey(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}
