package api

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"conch/server/store"
	"conch/shared"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/gofiber/fiber/v2"
	"golang.org/x/oauth2"
)

// OIDC is an OpenID Connect provider people sign in through (authorization code with
// PKCE), the company's identity provider. Its group claim decides the role.
type OIDC struct {
	Issuer       string
	ClientID     string
	ClientSecret string
	// Groups maps a value of the ID token's "groups" claim to a role; someone in groups
	// of several roles gets the most allowed one. DefaultRole is the role of someone in
	// none of them; "" turns them away.
	Groups      map[string]string
	DefaultRole string
}

// oidcFlow is the provider's discovered configuration, fetched on the first sign-in
// rather than at start-up, so that a provider that is down does not stop the server.
type oidcFlow struct {
	cfg OIDC
	mu  sync.Mutex
	p   *oidc.Provider
}

func (f *oidcFlow) provider(ctx context.Context) (*oidc.Provider, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.p != nil {
		return f.p, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	p, err := oidc.NewProvider(ctx, f.cfg.Issuer)
	if err != nil {
		return nil, shared.Errorf(shared.CodeInternal, "the identity provider %s cannot be reached: %v", f.cfg.Issuer, err)
	}
	f.p = p
	return p, nil
}

func (f *oidcFlow) oauth(p *oidc.Provider, redirect string) *oauth2.Config {
	return &oauth2.Config{ClientID: f.cfg.ClientID, ClientSecret: f.cfg.ClientSecret, Endpoint: p.Endpoint(),
		RedirectURL: redirect, Scopes: []string{oidc.ScopeOpenID, "profile", "email", "groups"}}
}

// roleOf is the role the groups give, or DefaultRole.
func (f *oidcFlow) roleOf(groups []string) string {
	best := f.cfg.DefaultRole
	for _, g := range groups {
		if r := f.cfg.Groups[g]; shared.RoleRank(r) > shared.RoleRank(best) {
			best = r
		}
	}
	return best
}

// oidcCookie carries a sign-in's state, nonce and PKCE verifier from the redirect to the
// provider to its callback: Lax, since the callback is a navigation from the provider's
// site, MACed with the sign-in key, for ten minutes and only on /login/oidc.
const oidcCookie = "conch_oidc"

type oidcPending struct {
	State, Nonce, Verifier, Next string
}

func (s *server) oidcRedirect(c *fiber.Ctx) string {
	return c.BaseURL() + "/login/oidc/callback" // BaseURL: X-Forwarded-* from trusted proxies only
}

// handleOIDCStart sends the browser to the provider.
func (s *server) handleOIDCStart(c *fiber.Ctx) error {
	p, err := s.oidc.provider(c.UserContext())
	if err != nil {
		return s.loginPage(c, err, c.Query("next"))
	}
	pending := oidcPending{State: rand.Text(), Nonce: rand.Text(), Verifier: oauth2.GenerateVerifier(), Next: localPath(c.Query("next"))}
	raw, _ := json.Marshal(pending) // strings always encode
	value := base64.RawURLEncoding.EncodeToString(raw)
	c.Cookie(&fiber.Cookie{Name: oidcCookie, Value: value + "." + s.sessionMAC("oidc:"+value), Path: "/login/oidc",
		HTTPOnly: true, SameSite: fiber.CookieSameSiteLaxMode, Secure: c.Protocol() == "https", MaxAge: 600})
	target := s.oidc.oauth(p, s.oidcRedirect(c)).AuthCodeURL(pending.State, oidc.Nonce(pending.Nonce), oauth2.S256ChallengeOption(pending.Verifier))
	return c.Redirect(target, http.StatusSeeOther)
}

var errOIDCState = shared.Errorf(shared.CodeUnauthorized, "That sign-in did not start here or took too long: try again.")

// pendingOIDC reads and checks the cookie handleOIDCStart set.
func (s *server) pendingOIDC(c *fiber.Ctx) (oidcPending, error) {
	value, mac, ok := strings.Cut(c.Cookies(oidcCookie), ".")
	var p oidcPending
	if !ok || !hmac.Equal([]byte(mac), []byte(s.sessionMAC("oidc:"+value))) {
		return p, errOIDCState
	}
	raw, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil || json.Unmarshal(raw, &p) != nil || subtle.ConstantTimeCompare([]byte(p.State), []byte(c.Query("state"))) != 1 {
		return p, errOIDCState
	}
	return p, nil
}

// oidcClaims are what Conch reads of an ID token.
type oidcClaims struct {
	Subject           string   `json:"sub"`
	PreferredUsername string   `json:"preferred_username"`
	Email             string   `json:"email"`
	Groups            []string `json:"groups"`
}

// handleOIDCCallback finishes a sign-in: the code is exchanged with its PKCE verifier,
// the ID token checked (signature, issuer, audience, expiry, nonce), and the person signed
// in as the account of their subject at this issuer, made on their first sign-in, with
// the role their groups give now.
func (s *server) handleOIDCCallback(c *fiber.Ctx) error {
	pending, err := s.pendingOIDC(c)
	c.Cookie(&fiber.Cookie{Name: oidcCookie, Path: "/login/oidc", HTTPOnly: true, Expires: time.Unix(0, 0)})
	if err != nil {
		return s.loginPage(c, err, "/")
	}
	if e := c.Query("error"); e != "" {
		return s.loginPage(c, shared.Errorf(shared.CodeUnauthorized, "The identity provider refused the sign-in: %s", shared.Visible(firstOf(c.Query("error_description"), e))), pending.Next)
	}
	acc, err := s.oidcAccount(c, pending)
	if err == nil {
		err = s.signInUntil(c, store.SignIn{AccountID: acc.ID}, s.now().Add(ssoSignInLifetime))
	}
	if err != nil {
		return s.loginPage(c, err, pending.Next)
	}
	// A page that goes on, not a redirect: the sign-in cookie is SameSite=Strict, and a
	// redirect still belongs to the navigation the provider's site started.
	c.Type("html", "utf-8")
	c.Set(fiber.HeaderCacheControl, "no-store")
	return continueTemplate.Execute(c, pending.Next)
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (s *server) oidcAccount(c *fiber.Ctx, pending oidcPending) (shared.Account, error) {
	ctx := c.UserContext()
	p, err := s.oidc.provider(ctx)
	if err != nil {
		return shared.Account{}, err
	}
	tok, err := s.oidc.oauth(p, s.oidcRedirect(c)).Exchange(ctx, c.Query("code"), oauth2.VerifierOption(pending.Verifier))
	if err != nil {
		s.log.Warn("oidc: code exchange", "err", err)
		return shared.Account{}, shared.Errorf(shared.CodeUnauthorized, "The identity provider did not confirm the sign-in: try again.")
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, err := p.Verifier(&oidc.Config{ClientID: s.oidc.cfg.ClientID, Now: s.now}).Verify(ctx, raw)
	if err != nil || subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(pending.Nonce)) != 1 {
		s.log.Warn("oidc: ID token refused", "err", err)
		return shared.Account{}, shared.Errorf(shared.CodeUnauthorized, "The identity provider's answer could not be verified: try again.")
	}
	var claims oidcClaims
	if err := idt.Claims(&claims); err != nil {
		return shared.Account{}, fmt.Errorf("oidc claims: %w", err)
	}
	role := s.oidc.roleOf(claims.Groups)
	if role == "" {
		// The provider has dropped this person: what they signed in with before ends now.
		if err := s.tasks.EndExternalAccess(ctx, s.oidc.cfg.Issuer, idt.Subject); err != nil {
			return shared.Account{}, err
		}
		return shared.Account{}, shared.Errorf(shared.CodeForbidden, "Your account at the identity provider is in none of the groups that may use Conch: ask an admin.")
	}
	return s.store.ExternalAccount(ctx, s.oidc.cfg.Issuer, idt.Subject, loginFrom(claims), role)
}

// loginFrom is the login a new account of these claims asks for: the preferred user
// name, else the mail's local part, else the subject, cut down to what logins may hold.
func loginFrom(c oidcClaims) string {
	local, _, _ := strings.Cut(c.Email, "@")
	for _, want := range []string{c.PreferredUsername, local, c.Subject} {
		login := strings.Map(func(r rune) rune {
			if r < 0x80 && (r == '.' || r == '_' || r == '@' || r == '-' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
				return r
			}
			return -1
		}, want)
		login = strings.TrimLeft(login, "._@-")
		if len(login) > 56 {
			login = login[:56]
		}
		if login != "" {
			return login
		}
	}
	return "user"
}

var continueTemplate = template.Must(template.New("continue").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="refresh" content="0;url={{.}}">
<title>Signed in · Conch</title>
<link rel="icon" href="/web/icon.svg"><link rel="stylesheet" href="/web/app.css">
</head><body><div class="page login-page"><main><p class="empty">Signed in. <a href="{{.}}">Continue</a></p></main></div></body></html>
`))

// Check refuses a configuration that cannot work.
func (cfg *OIDC) Check() error {
	if cfg.Issuer == "" || cfg.ClientID == "" {
		return fmt.Errorf("single sign-on needs an issuer and a client id")
	}
	for g, r := range cfg.Groups {
		if shared.RoleRank(r) == 0 {
			return fmt.Errorf("group %q maps to %q, which is not a role (%s)", g, r, strings.Join(shared.Roles, ", "))
		}
	}
	if cfg.DefaultRole != "" && !slices.Contains(shared.Roles, cfg.DefaultRole) {
		return fmt.Errorf("the default role %q is not a role (%s)", cfg.DefaultRole, strings.Join(shared.Roles, ", "))
	}
	return nil
}
