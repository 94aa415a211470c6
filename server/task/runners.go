package task

import (
	"context"
	"crypto/rand"

	"conch/server/store"
	"conch/shared"
)

// Runner tokens (docs/API.md, "Runners"): an admin makes one for each runner or pool of
// runners (`conch runner`), which connects with it; revoking it drops the runners
// connected with it. Made and stored as access tokens are, hashed.

// RunnerTokenPrefix starts every runner token.
const RunnerTokenPrefix = AccessTokenPrefix + "runner_"

// RunnerTokens lists the runner tokens, without their secrets.
func (s *Service) RunnerTokens(ctx context.Context) ([]shared.AccessToken, error) {
	return s.store.RunnerTokens(ctx)
}

// CreateRunnerToken makes a runner token; its secret is in this answer only.
func (s *Service) CreateRunnerToken(ctx context.Context, req shared.NewRunnerToken) (shared.AccessToken, error) {
	if err := checkTokenName(req.Name); err != nil {
		return shared.AccessToken{}, err
	}
	secret := RunnerTokenPrefix + rand.Text()
	tok, err := s.store.CreateRunnerToken(ctx, req.Name, HashSecret(secret))
	if err != nil {
		return shared.AccessToken{}, err
	}
	tok.Token = secret
	return tok, nil
}

// DeleteRunnerToken revokes a runner token, and drops the runners connected with it, on
// every server.
func (s *Service) DeleteRunnerToken(ctx context.Context, id string) error {
	if err := s.store.DeleteRunnerToken(ctx, id); err != nil {
		return err
	}
	s.events.Revoked(RunnerRevokeKey(id))
	return nil
}

// RunnerToken is the id of the runner token secret, a CodeUnauthorized error when no
// token has it.
func (s *Service) RunnerToken(ctx context.Context, secret string) (string, error) {
	id, err := s.store.RunnerToken(ctx, HashSecret(secret))
	if store.IsUnknownToken(err) {
		return "", shared.Errorf(shared.CodeUnauthorized, "not a runner token, or a revoked one")
	}
	return id, err
}

// RunnerRevokeKey names a runner token for Events.Revoked: a runner's connection is
// registered in the hub under it.
func RunnerRevokeKey(id string) string { return RevokeKey("runner-token", id) }
