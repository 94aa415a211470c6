package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"conch/shared"

	"github.com/google/uuid"
	"gorm.io/gorm"
)

// Runner tokens let a `conch runner` connect (server/runner): an admin's, not a person's,
// and stored like access tokens, as hashes of their secrets, with their shape on the wire
// (shared.AccessToken).

type runnerTokenRow struct {
	ID         string `gorm:"primaryKey"`
	Name       string
	Hash       string
	CreatedAt  int64 `gorm:"autoCreateTime:false"`
	LastUsedAt int64
}

func (runnerTokenRow) TableName() string { return "runner_tokens" }

func (r runnerTokenRow) token() accessTokenRow {
	return accessTokenRow{ID: r.ID, Name: r.Name, CreatedAt: r.CreatedAt, LastUsedAt: r.LastUsedAt}
}

// CreateRunnerToken stores a runner token by the hash of its secret.
func (s *Store) CreateRunnerToken(ctx context.Context, name, hash string) (shared.AccessToken, error) {
	row := runnerTokenRow{ID: uuid.NewString(), Name: name, Hash: hash, CreatedAt: s.stamp()}
	if err := s.db.WithContext(ctx).Create(&row).Error; err != nil {
		return shared.AccessToken{}, fmt.Errorf("create runner token: %w", err)
	}
	return row.token().token(), nil
}

// RunnerTokens lists the runner tokens, oldest first; never their secrets.
func (s *Store) RunnerTokens(ctx context.Context) ([]shared.AccessToken, error) {
	var rows []runnerTokenRow
	if err := s.db.WithContext(ctx).Order("created_at, id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list runner tokens: %w", err)
	}
	out := make([]shared.AccessToken, len(rows))
	for i, r := range rows {
		out[i] = r.token().token()
	}
	return out, nil
}

// DeleteRunnerToken revokes a runner token.
func (s *Store) DeleteRunnerToken(ctx context.Context, id string) error {
	res := s.db.WithContext(ctx).Where("id = ?", id).Delete(&runnerTokenRow{})
	if res.Error != nil {
		return fmt.Errorf("delete runner token: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return errNoToken
	}
	return nil
}

// RunnerToken is the id of the runner token whose secret has hash, and records its use
// (once a minute at most, as AccountByToken). A hash no token has is errNoToken
// (IsUnknownToken).
func (s *Store) RunnerToken(ctx context.Context, hash string) (string, error) {
	var row runnerTokenRow
	err := s.db.WithContext(ctx).Where("hash = ?", hash).Take(&row).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return "", errNoToken
	case err != nil:
		return "", fmt.Errorf("read runner token: %w", err)
	}
	if now := s.stamp(); row.LastUsedAt < now-int64(time.Minute) {
		if err := s.db.WithContext(ctx).Model(&row).Update("last_used_at", now).Error; err != nil {
			return "", fmt.Errorf("record runner token use: %w", err)
		}
	}
	return row.ID, nil
}

// RunnerLoads counts the live sessions placed on each runner whose agent is not stopped.
func (s *Store) RunnerLoads(ctx context.Context) (map[string]int, error) {
	var rows []struct {
		Runner string
		N      int
	}
	err := s.db.WithContext(ctx).Model(&sessionRow{}).Select("runner, COUNT(*) AS n").
		Where("runner <> '' AND stopped = ? AND "+live, false).Group("runner").Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("count runners' sessions: %w", err)
	}
	out := make(map[string]int, len(rows))
	for _, r := range rows {
		out[r.Runner] = r.N
	}
	return out, nil
}

// MoveSession records the runner a session's agent was started on again ("" for this
// server) and the directory it works in there: a fresh one, since its old one is on the
// machine it left.
func (s *Store) MoveSession(ctx context.Context, id, runner, cwd string) error {
	if err := shared.CheckText("cwd", cwd); err != nil {
		return err
	}
	res := s.db.WithContext(ctx).Model(&sessionRow{}).Where("id = ?", id).Updates(map[string]any{"runner": runner, "cwd": cwd, "updated_at": s.stamp()})
	if res.Error != nil {
		return fmt.Errorf("move session: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return missing("session")
	}
	return nil
}
