package task

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"conch/shared"
)

// A task is shared two ways, both by its owner or an admin alone (CheckShare): with an
// account for editing, and by read-only links (shared.ShareLink) that sign a browser in
// as a guest of that one task for 1 to 30 days.

// AddEditor shares the task for editing with the account of login.
func (s *Service) AddEditor(ctx context.Context, acc shared.Account, taskID, login string) (shared.Account, error) {
	if err := s.CheckShare(ctx, acc, taskID); err != nil {
		return shared.Account{}, err
	}
	return s.store.ShareTask(ctx, taskID, login)
}

// RemoveEditor takes an editor's access to the task back.
func (s *Service) RemoveEditor(ctx context.Context, acc shared.Account, taskID, accountID string) error {
	if err := s.CheckShare(ctx, acc, taskID); err != nil {
		return err
	}
	return s.store.UnshareTask(ctx, taskID, accountID)
}

// Links is the task's share links that still work, without their codes.
func (s *Service) Links(ctx context.Context, acc shared.Account, taskID string) ([]shared.ShareLink, error) {
	if err := s.CheckShare(ctx, acc, taskID); err != nil {
		return nil, err
	}
	return s.store.ShareLinks(ctx, taskID)
}

// CreateLink makes a link to the task that works for days days; its URL, with the code
// only its hash is kept of, is in this answer alone.
func (s *Service) CreateLink(ctx context.Context, acc shared.Account, taskID string, days int) (shared.ShareLink, error) {
	if days < 1 || days > 30 {
		return shared.ShareLink{}, shared.Errorf(shared.CodeInvalid, "days must be 1 to 30")
	}
	if err := s.CheckShare(ctx, acc, taskID); err != nil {
		return shared.ShareLink{}, err
	}
	code := rand.Text()
	link, err := s.store.CreateShareLink(ctx, taskID, acc.Login, HashSecret(code), s.now().Add(time.Duration(days)*24*time.Hour))
	if err != nil {
		return shared.ShareLink{}, err
	}
	link.URL = "/share/" + code
	return link, nil
}

// DeleteLink revokes a share link: the guests it signed in are signed out at once.
func (s *Service) DeleteLink(ctx context.Context, acc shared.Account, taskID, linkID string) error {
	if err := s.CheckShare(ctx, acc, taskID); err != nil {
		return err
	}
	if err := s.store.DeleteShareLink(ctx, taskID, linkID); err != nil {
		return err
	}
	s.events.Revoked(RevokeKey("link", linkID))
	return nil
}

// RevokeKey names a sign-in, access token, share link or account (kind) for
// Events.Revoked, which closes the WebSockets it let in (hub.Who's keys).
func RevokeKey(kind, id string) string { return kind + ":" + id }

// HashSecret is how access tokens, invitation codes and share links' codes are stored:
// they are 130 random bits, so a fast hash is enough.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}
