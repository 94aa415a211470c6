package store

import (
	"context"
	"fmt"

	"conch/shared"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Web Push: the database's VAPID key pair (one row, made by the first server that needs
// it, so every server signs with the same key and a browser's subscription works through
// any of them) and the browsers subscribed (docs/API.md, "Notifications").

type pushKeyRow struct {
	ID         int `gorm:"primaryKey"`
	PrivateKey string
	PublicKey  string
}

func (pushKeyRow) TableName() string { return "push_keys" }

type pushSubscriptionRow struct {
	Endpoint  string `gorm:"primaryKey"`
	AccountID string // "" for the server's token (everyone who has it is one person)
	// SignInID is the browser sign-in that subscribed ("" through a bearer token): the
	// subscription lasts while it does, so signing out of a shared computer stops it.
	SignInID  string
	P256dh    string
	Auth      string
	EveryTask bool
	CreatedAt int64 `gorm:"autoCreateTime:false"`
}

func (pushSubscriptionRow) TableName() string { return "push_subscriptions" }

func (r pushSubscriptionRow) subscribed() shared.PushSubscribed {
	return shared.PushSubscribed{Endpoint: r.Endpoint, EveryTask: r.EveryTask, CreatedAt: fromNanos(r.CreatedAt)}
}

// MaxPushSubscriptions bounds the browsers of one account: a new one beyond it replaces
// the account's oldest.
const MaxPushSubscriptions = 10

var errNoPushSubscription = shared.Errorf(shared.CodeNotFound, "push subscription not found")

// VAPIDKeys is the database's VAPID key pair, made with generate by the first caller:
// servers that start together each generate one, the first stored wins, all read it.
func (s *Store) VAPIDKeys(ctx context.Context, generate func() (private, public string, err error)) (private, public string, err error) {
	var rows []pushKeyRow
	if err := s.db.WithContext(ctx).Where("id = 1").Find(&rows).Error; err != nil {
		return "", "", fmt.Errorf("read push keys: %w", err)
	}
	if len(rows) == 1 {
		return rows[0].PrivateKey, rows[0].PublicKey, nil
	}
	row := pushKeyRow{ID: 1}
	if row.PrivateKey, row.PublicKey, err = generate(); err != nil {
		return "", "", fmt.Errorf("make push keys: %w", err)
	}
	if err := s.db.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error; err != nil {
		return "", "", fmt.Errorf("store push keys: %w", err)
	}
	if err := s.db.WithContext(ctx).Where("id = 1").Take(&row).Error; err != nil {
		return "", "", fmt.Errorf("read push keys: %w", err)
	}
	return row.PrivateKey, row.PublicKey, nil
}

// Subscribe stores a browser's subscription for an account (checked by the caller), made
// through signInID ("" through a bearer token). The endpoint names the browser: subscribing
// again updates it, also for another account (someone else signed in on it). Beyond
// MaxPushSubscriptions the account's oldest go, and so do those whose sign-in ended. The
// account's subscription that sub replaces goes, and sub keeps its choice of every task.
func (s *Store) Subscribe(ctx context.Context, accountID, signInID string, sub shared.PushSubscription) (shared.PushSubscribed, error) {
	row := pushSubscriptionRow{Endpoint: sub.Endpoint, AccountID: accountID, SignInID: signInID,
		P256dh: sub.Keys.P256dh, Auth: sub.Keys.Auth, EveryTask: sub.EveryTask, CreatedAt: s.stamp()}
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if sub.Replaces != "" && sub.Replaces != sub.Endpoint {
			var old []pushSubscriptionRow
			if err := tx.Where("endpoint = ? AND account_id = ?", sub.Replaces, accountID).Find(&old).Error; err != nil {
				return fmt.Errorf("read replaced push subscription: %w", err)
			}
			for _, o := range old {
				row.EveryTask = o.EveryTask
				if err := tx.Delete(&o).Error; err != nil {
					return fmt.Errorf("delete replaced push subscription: %w", err)
				}
			}
		}
		if err := tx.Clauses(clause.OnConflict{UpdateAll: true}).Create(&row).Error; err != nil {
			return fmt.Errorf("store push subscription: %w", err)
		}
		ended := tx.Where("account_id = ? AND sign_in_id <> '' AND NOT EXISTS (SELECT 1 FROM sign_ins s WHERE s.id = sign_in_id AND s.expires_at > ?)",
			accountID, s.stamp()).Delete(&pushSubscriptionRow{})
		if ended.Error != nil {
			return fmt.Errorf("delete ended push subscriptions: %w", ended.Error)
		}
		var kept []string
		if err := tx.Model(&pushSubscriptionRow{}).Where("account_id = ?", accountID).
			Order("created_at DESC, endpoint").Limit(MaxPushSubscriptions).Pluck("endpoint", &kept).Error; err != nil {
			return fmt.Errorf("read push subscriptions: %w", err)
		}
		if err := tx.Where("account_id = ? AND endpoint NOT IN ?", accountID, kept).Delete(&pushSubscriptionRow{}).Error; err != nil {
			return fmt.Errorf("delete old push subscriptions: %w", err)
		}
		return nil
	})
	if err != nil {
		return shared.PushSubscribed{}, err
	}
	return row.subscribed(), nil
}

// Unsubscribe deletes an account's subscription; another account's is not found.
func (s *Store) Unsubscribe(ctx context.Context, accountID, endpoint string) error {
	res := s.db.WithContext(ctx).Where("endpoint = ? AND account_id = ?", endpoint, accountID).Delete(&pushSubscriptionRow{})
	if res.Error != nil {
		return fmt.Errorf("delete push subscription: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return errNoPushSubscription
	}
	return nil
}

// DropPushSubscription deletes a subscription the push service says is gone (404, 410).
func (s *Store) DropPushSubscription(ctx context.Context, endpoint string) error {
	if err := s.db.WithContext(ctx).Where("endpoint = ?", endpoint).Delete(&pushSubscriptionRow{}).Error; err != nil {
		return fmt.Errorf("delete push subscription: %w", err)
	}
	return nil
}

// Watchers are the subscriptions to notify of the task: those of its owner and editors,
// and those that asked for every task (everyone may read every task), whose sign-in, when
// they came through one, still lasts.
func (s *Store) Watchers(ctx context.Context, taskID string) ([]shared.PushSubscription, error) {
	var rows []pushSubscriptionRow
	err := s.db.WithContext(ctx).Table("push_subscriptions AS p").Select("p.*").
		Joins("JOIN tasks t ON t.id = ?", taskID).
		Where("p.sign_in_id = '' OR EXISTS (SELECT 1 FROM sign_ins s WHERE s.id = p.sign_in_id AND s.expires_at > ?)", s.stamp()).
		Where("p.every_task OR p.account_id = t.owner_id OR EXISTS (SELECT 1 FROM task_editors e WHERE e.task_id = t.id AND e.account_id = p.account_id)").
		Order("p.endpoint").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("read push subscriptions: %w", err)
	}
	out := make([]shared.PushSubscription, len(rows))
	for i, r := range rows {
		out[i] = shared.PushSubscription{Endpoint: r.Endpoint, Keys: shared.PushKeys{P256dh: r.P256dh, Auth: r.Auth}, EveryTask: r.EveryTask}
	}
	return out, nil
}
