package api

import (
	"crypto/ecdh"
	"encoding/base64"
	"net/http"
	"net/netip"
	"net/url"
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
	if err := checkSubscription(sub); err != nil {
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
// so it must be an https URL (http only to this host's loopback, for tests), and the keys
// must be a P-256 point and a 16-byte secret (RFC 8291).
func checkSubscription(sub shared.PushSubscription) error {
	u, err := url.Parse(sub.Endpoint)
	switch {
	case len(sub.Endpoint) > maxEndpointBytes || len(sub.Replaces) > maxEndpointBytes:
		return shared.Errorf(shared.CodeInvalid, "endpoint is over %d bytes", maxEndpointBytes)
	case err != nil || u.Host == "" || u.User != nil || u.Fragment != "" ||
		!(u.Scheme == "https" || u.Scheme == "http" && loopbackHost(u.Hostname())):
		return shared.Errorf(shared.CodeInvalid, "endpoint must be an https URL, as the browser's push service gives it")
	}
	key, kerr := decodeKey(sub.Keys.P256dh)
	auth, aerr := decodeKey(sub.Keys.Auth)
	if kerr == nil {
		_, kerr = ecdh.P256().NewPublicKey(key)
	}
	if kerr != nil || aerr != nil || len(auth) != 16 {
		return shared.Errorf(shared.CodeInvalid, "keys must hold p256dh, a P-256 public key, and auth, 16 bytes, in base64url")
	}
	return nil
}

func loopbackHost(host string) bool {
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// decodeKey reads base64url with or without padding, as browsers differ.
func decodeKey(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}
