package task

import (
	"context"
	"crypto/rand"
	"regexp"
	"time"
	"unicode/utf8"

	"conch/server/store"
	"conch/shared"
)

// Accounts and their personal access tokens (docs/API.md, "Accounts and roles"): made and
// deleted by admins, tokens by the account itself.

// AccessTokenPrefix starts every personal access token, so that a leaked one is easy to
// find (secret scanners) and the server knows to look it up rather than compare it with
// its --token.
const AccessTokenPrefix = "conch_"

// LoginPattern is what a login is.
var LoginPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// CheckNewAccount is the rule for a login and a password.
func CheckNewAccount(login, password string) error {
	switch {
	case !LoginPattern.MatchString(login):
		return shared.Errorf(shared.CodeInvalid, "a login is 1 to 64 letters, digits, '.', '_', '@' or '-', starting with a letter or digit")
	case utf8.RuneCountInString(password) < 10 || len(password) > 256 || !utf8.ValidString(password):
		return shared.Errorf(shared.CodeInvalid, "a password is 10 to 256 bytes of UTF-8, at least 10 characters")
	}
	return nil
}

// CreateAccount makes the account req names at once when it has a login or password, or
// else an invitation that lets someone set them: the answer is a shared.Account or a
// shared.Invitation.
func (s *Service) CreateAccount(ctx context.Context, req shared.NewAccount) (any, error) {
	if shared.RoleRank(req.Role) == 0 {
		return nil, shared.Errorf(shared.CodeInvalid, "role must be admin, member or viewer")
	}
	if req.Password == "" && req.Login == "" {
		return Invite(ctx, s.store, req.Role, s.now().Add(invitationLifetime))
	}
	if err := CheckNewAccount(req.Login, req.Password); err != nil {
		return nil, err
	}
	return s.store.CreateAccount(ctx, req.Login, req.Role, HashPassword(req.Password))
}

// DeleteAccount deletes an account with its tokens and sign-ins, and closes the
// WebSockets they opened.
func (s *Service) DeleteAccount(ctx context.Context, id string) error {
	if err := s.store.DeleteAccount(ctx, id); err != nil {
		return err
	}
	s.events.Revoked(RevokeKey("account", id))
	return nil
}

// invitationLifetime is how long an invitation link works.
const invitationLifetime = 7 * 24 * time.Hour

// Invite makes a one-time link that creates an account of role until expires. The server
// calls it at start-up for the first admin (serve), and admins through the API.
func Invite(ctx context.Context, st *store.Store, role string, expires time.Time) (shared.Invitation, error) {
	code := rand.Text()
	if err := st.CreateInvitation(ctx, HashSecret(code), role, expires); err != nil {
		return shared.Invitation{}, err
	}
	return shared.Invitation{Role: role, URL: "/invite/" + code, ExpiresAt: expires.UTC()}, nil
}

// HasOwnTokens refuses the accounts that have no access tokens: the server's token and a
// server without one.
func HasOwnTokens(acc shared.Account) error {
	if acc.ID == "" {
		return errNoOwnTokens
	}
	return nil
}

var errNoOwnTokens = shared.Errorf(shared.CodeInvalid, "the server's token has no access tokens of its own: sign in with an account")

// AccessTokens is acc's tokens, without their secrets.
func (s *Service) AccessTokens(ctx context.Context, acc shared.Account) ([]shared.AccessToken, error) {
	if err := HasOwnTokens(acc); err != nil {
		return nil, err
	}
	return s.store.AccessTokens(ctx, acc.ID)
}

// CreateToken makes a token of acc; its secret is in this answer only.
func (s *Service) CreateToken(ctx context.Context, acc shared.Account, req shared.NewAccessToken) (shared.AccessToken, error) {
	if err := HasOwnTokens(acc); err != nil {
		return shared.AccessToken{}, err
	}
	if err := checkTokenName(req.Name); err != nil {
		return shared.AccessToken{}, err
	}
	days, err := tokenDays(acc, req.ExpiresInDays)
	if err != nil {
		return shared.AccessToken{}, err
	}
	var expires time.Time
	if days > 0 {
		expires = s.now().Add(time.Duration(days) * 24 * time.Hour)
	}
	secret := AccessTokenPrefix + rand.Text()
	tok, err := s.store.CreateAccessToken(ctx, acc.ID, req.Name, HashSecret(secret), expires)
	if err != nil {
		return shared.AccessToken{}, err
	}
	tok.Token = secret
	return tok, nil
}

// checkTokenName is the rule for the name of an access or runner token.
func checkTokenName(name string) error {
	if name == "" || len(name) > 100 || !utf8.ValidString(name) {
		return shared.Errorf(shared.CodeInvalid, "name is 1 to 100 bytes of UTF-8")
	}
	return nil
}

// tokenDays is how many days a new token of acc lasts when it asks for asked (0: until
// revoked). An account of single sign-on gets at most shared.SSOTokenDays, so that a
// person the identity provider drops keeps no way in for long without signing in.
func tokenDays(acc shared.Account, asked int) (int, error) {
	most := shared.MaxTokenDays
	if acc.Provider != "" {
		most = shared.SSOTokenDays
		if asked == 0 {
			return most, nil
		}
	}
	if asked < 0 || asked > most {
		return 0, shared.Errorf(shared.CodeInvalid, "expires_in_days is 1 to %d, or 0 for a token that lasts until revoked (accounts of single sign-on: at most %d)", shared.MaxTokenDays, shared.SSOTokenDays)
	}
	return asked, nil
}

// DeleteToken revokes one of acc's tokens, and closes the WebSockets it opened.
func (s *Service) DeleteToken(ctx context.Context, acc shared.Account, id string) error {
	if err := HasOwnTokens(acc); err != nil {
		return err
	}
	if err := s.store.DeleteAccessToken(ctx, acc.ID, id); err != nil {
		return err
	}
	s.events.Revoked(RevokeKey("token", id))
	return nil
}

// AcceptInvitation makes the account an invitation's code (valid, unused) lets someone
// make, with login and password.
func (s *Service) AcceptInvitation(ctx context.Context, code, login, password string) (shared.Account, error) {
	if err := CheckNewAccount(login, password); err != nil {
		return shared.Account{}, err
	}
	return s.store.AcceptInvitation(ctx, HashSecret(code), login, HashPassword(password))
}

// SignOut ends a sign-in and closes the WebSockets it opened.
func (s *Service) SignOut(ctx context.Context, signInID string) error {
	if err := s.store.DeleteSignIn(ctx, signInID); err != nil {
		return err
	}
	s.events.Revoked(RevokeKey("sign-in", signInID))
	return nil
}

// EndExternalAccess ends what the account the identity provider issuer knows as subject
// signed in with, once the provider has dropped that person (none of the groups that may
// use Conch), and closes its WebSockets.
func (s *Service) EndExternalAccess(ctx context.Context, issuer, subject string) error {
	id, err := s.store.EndExternalAccess(ctx, issuer, subject)
	if err != nil {
		return err
	}
	if id != "" {
		s.events.Revoked(RevokeKey("account", id))
	}
	return nil
}
