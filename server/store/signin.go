package store

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// A sign-in is a browser signed in with the token (server/api's cookie names it). It is a
// row, not server memory, so that signing out ends it on every server of the database and
// a copy of the cookie replayed afterwards is refused.
type signInRow struct {
	ID        string `gorm:"primaryKey"`
	AccountID string // "" for the token's own sign-in (shared.Account)
	LinkID    string // the share link a guest signed in with (link.go), or ""
	ExpiresAt int64
}

// SignIn is whose a sign-in is: an account's, the token's (both empty) or a guest's of a
// share link.
type SignIn struct {
	AccountID string
	LinkID    string
	ExpiresAt time.Time // SignedIn's answer only: CreateSignIn takes it apart
}

func (signInRow) TableName() string { return "sign_ins" }

// CreateSignIn records a sign-in of who that lasts until expires and returns its id, 128
// random bits. The sign-ins that have expired go at the same time, so the table holds only
// live ones (and those a new token ended, until they expire).
func (s *Store) CreateSignIn(ctx context.Context, who SignIn, expires time.Time) (string, error) {
	id := rand.Text()
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Where("expires_at <= ?", s.now().UnixNano()).Delete(&signInRow{}).Error; err != nil {
			return err
		}
		return tx.Create(&signInRow{ID: id, AccountID: who.AccountID, LinkID: who.LinkID, ExpiresAt: expires.UnixNano()}).Error
	})
	if err != nil {
		return "", fmt.Errorf("create sign-in: %w", err)
	}
	return id, nil
}

// SignedIn reports whether the sign-in id exists and has not expired at at, and whose it is.
func (s *Store) SignedIn(ctx context.Context, id string, at time.Time) (who SignIn, ok bool, err error) {
	var rows []signInRow
	err = s.db.WithContext(ctx).Where("id = ? AND expires_at > ?", id, at.UnixNano()).Limit(1).Find(&rows).Error
	if err != nil {
		return SignIn{}, false, fmt.Errorf("read sign-in: %w", err)
	}
	if len(rows) == 0 {
		return SignIn{}, false, nil
	}
	return SignIn{AccountID: rows[0].AccountID, LinkID: rows[0].LinkID, ExpiresAt: time.Unix(0, rows[0].ExpiresAt)}, true, nil
}

// DeleteSignIn ends the sign-in id; one that does not exist is no error.
func (s *Store) DeleteSignIn(ctx context.Context, id string) error {
	if err := s.db.WithContext(ctx).Delete(&signInRow{}, "id = ?", id).Error; err != nil {
		return fmt.Errorf("delete sign-in: %w", err)
	}
	return nil
}
