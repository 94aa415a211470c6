package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"conch/shared"

	"gorm.io/gorm"
)

// A share link is a read-only link to one task (shared.ShareLink), stored by the hash of
// its code like an invitation, so a copy of the database opens nothing. Deleting it, or
// its task, ends the guests' sign-ins it made.
type shareLinkRow struct {
	ID        string `gorm:"primaryKey"`
	TaskID    string
	Hash      string
	CreatedBy string
	CreatedAt int64
	ExpiresAt int64
}

func (shareLinkRow) TableName() string { return "share_links" }

func (r shareLinkRow) link() shared.ShareLink {
	return shared.ShareLink{ID: r.ID, TaskID: r.TaskID, CreatedBy: r.CreatedBy,
		CreatedAt: time.Unix(0, r.CreatedAt).UTC(), ExpiresAt: time.Unix(0, r.ExpiresAt).UTC()}
}

var errNoLink = shared.Errorf(shared.CodeNotFound, "this link is not valid: it was revoked, it expired, or it is wrong")

// CreateShareLink stores a link to a task, made by the login createdBy, by the hash of its
// code; it works until expires.
func (s *Store) CreateShareLink(ctx context.Context, taskID, createdBy, hash string, expires time.Time) (shared.ShareLink, error) {
	if _, err := s.GetTask(ctx, taskID); err != nil {
		return shared.ShareLink{}, err
	}
	row := shareLinkRow{ID: newID(), TaskID: taskID, Hash: hash, CreatedBy: createdBy, CreatedAt: s.stamp(), ExpiresAt: expires.UnixNano()}
	if err := s.db.WithContext(ctx).Create(&row).Error; err != nil {
		return shared.ShareLink{}, fmt.Errorf("create share link: %w", err)
	}
	return row.link(), nil
}

// ShareLinks lists a task's links that still work, oldest first; never their codes.
func (s *Store) ShareLinks(ctx context.Context, taskID string) ([]shared.ShareLink, error) {
	var rows []shareLinkRow
	err := s.db.WithContext(ctx).Where("task_id = ? AND expires_at > ?", taskID, s.stamp()).Order("created_at, id").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("list share links: %w", err)
	}
	out := make([]shared.ShareLink, len(rows))
	for i, r := range rows {
		out[i] = r.link()
	}
	return out, nil
}

// DeleteShareLink revokes a link of the task and ends the sign-ins it made, at once on
// every server of the database.
func (s *Store) DeleteShareLink(ctx context.Context, taskID, id string) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Where("id = ? AND task_id = ?", id, taskID).Delete(&shareLinkRow{})
		switch {
		case res.Error != nil:
			return fmt.Errorf("delete share link: %w", res.Error)
		case res.RowsAffected == 0:
			return shared.Errorf(shared.CodeNotFound, "share link not found")
		}
		if err := tx.Where("link_id = ?", id).Delete(&signInRow{}).Error; err != nil {
			return fmt.Errorf("end the link's sign-ins: %w", err)
		}
		return nil
	})
}

// ShareLinkByHash is the link that still works whose code has hash; any other is not
// found.
func (s *Store) ShareLinkByHash(ctx context.Context, hash string) (shared.ShareLink, error) {
	return s.liveLink(ctx, "hash = ?", hash)
}

// ShareLink is the link id while it works; a revoked or expired one is not found.
func (s *Store) ShareLink(ctx context.Context, id string) (shared.ShareLink, error) {
	return s.liveLink(ctx, "id = ?", id)
}

func (s *Store) liveLink(ctx context.Context, where, value string) (shared.ShareLink, error) {
	var row shareLinkRow
	err := s.db.WithContext(ctx).Where(where+" AND expires_at > ?", value, s.stamp()).Take(&row).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return shared.ShareLink{}, errNoLink
	case err != nil:
		return shared.ShareLink{}, fmt.Errorf("read share link: %w", err)
	}
	return row.link(), nil
}
