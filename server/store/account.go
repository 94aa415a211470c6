package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"conch/shared"

	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Accounts are the people who sign in (shared.Account); the password hash is server/api's
// (an argon2id PHC string), stored here as it is given. Access tokens and invitations are
// stored only as hashes of their secrets, so a copy of the database signs no one in.

type accountRow struct {
	ID           string `gorm:"primaryKey"`
	Login        string
	Role         string
	PasswordHash string
	OidcIssuer   string // with OidcSubject, who the identity provider says it is (ExternalAccount)
	OidcSubject  string
	CreatedAt    int64 `gorm:"autoCreateTime:false"`
}

func (accountRow) TableName() string { return "accounts" }

func (r accountRow) account() shared.Account {
	return shared.Account{ID: r.ID, Login: r.Login, Role: r.Role, CreatedAt: time.Unix(0, r.CreatedAt).UTC(), Provider: r.OidcIssuer}
}

type accessTokenRow struct {
	ID         string `gorm:"primaryKey"`
	AccountID  string
	Name       string
	Hash       string
	CreatedAt  int64 `gorm:"autoCreateTime:false"`
	LastUsedAt int64
	ExpiresAt  int64 // 0: until revoked
}

func (accessTokenRow) TableName() string { return "access_tokens" }

type invitationRow struct {
	Hash      string `gorm:"primaryKey"`
	Role      string
	ExpiresAt int64
}

func (invitationRow) TableName() string { return "invitations" }

var (
	errNoAccount   = shared.Errorf(shared.CodeNotFound, "account not found")
	errLoginTaken  = shared.Errorf(shared.CodeConflict, "that login is taken (token, local and guest are the server's own)")
	errNoToken     = shared.Errorf(shared.CodeNotFound, "token not found")
	errInvitation  = shared.Errorf(shared.CodeNotFound, "this invitation is not valid: it was used, it expired, or the link is wrong")
	errLastAdmin   = shared.Errorf(shared.CodeConflict, "the last admin account cannot be deleted")
	errNoSuchLogin = errors.New("no such login")
)

// CreateAccount makes an account; a login that exists is a conflict.
func (s *Store) CreateAccount(ctx context.Context, login, role, passwordHash string) (shared.Account, error) {
	row := accountRow{ID: uuid.NewString(), Login: login, Role: role, PasswordHash: passwordHash, CreatedAt: s.stamp()}
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		return createAccount(tx, &row)
	})
	if err != nil {
		return shared.Account{}, err
	}
	return row.account(), nil
}

func createAccount(tx *gorm.DB, row *accountRow) error {
	if shared.ReservedLogin(row.Login) {
		return errLoginTaken
	}
	var n int64
	if err := tx.Model(&accountRow{}).Where("login = ?", row.Login).Count(&n).Error; err != nil {
		return fmt.Errorf("read accounts: %w", err)
	}
	if n > 0 {
		return errLoginTaken
	}
	if err := tx.Create(row).Error; err != nil {
		return fmt.Errorf("create account: %w", err)
	}
	return nil
}

// ExternalAccount is the account of subject at an OpenID Connect issuer, with role, the
// one the provider's groups give now: made on the first sign-in with login (or login-2,
// login-3, … when it is taken), its role updated on later ones.
func (s *Store) ExternalAccount(ctx context.Context, issuer, subject, login, role string) (shared.Account, error) {
	var row accountRow
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		err := tx.Where("oidc_issuer = ? AND oidc_subject = ?", issuer, subject).Take(&row).Error
		switch {
		case err == nil:
			if row.Role == role {
				return nil
			}
			row.Role = role
			return tx.Model(&row).Update("role", role).Error
		case !errors.Is(err, gorm.ErrRecordNotFound):
			return fmt.Errorf("read account: %w", err)
		}
		for n := 1; n <= 100; n++ {
			row = accountRow{ID: uuid.NewString(), Login: login, Role: role, OidcIssuer: issuer, OidcSubject: subject, CreatedAt: s.stamp()}
			if n > 1 {
				row.Login = fmt.Sprintf("%s-%d", login, n)
			}
			if err := createAccount(tx, &row); err != errLoginTaken {
				return err
			}
		}
		return errLoginTaken
	})
	if err != nil {
		return shared.Account{}, err
	}
	return row.account(), nil
}

// EndExternalAccess ends every way in of the account of subject at issuer, whom the
// identity provider no longer puts in a group that may use Conch: its sign-ins and
// access tokens go (its tasks and what it wrote stay). It returns the account's id, ""
// when the subject has none.
func (s *Store) EndExternalAccess(ctx context.Context, issuer, subject string) (string, error) {
	var row accountRow
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		err := tx.Where("oidc_issuer = ? AND oidc_subject = ?", issuer, subject).Take(&row).Error
		if err != nil {
			return err
		}
		if err := tx.Where("account_id = ?", row.ID).Delete(&signInRow{}).Error; err != nil {
			return err
		}
		return tx.Where("account_id = ?", row.ID).Delete(&accessTokenRow{}).Error
	})
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("end access of %s: %w", subject, err)
	}
	return row.ID, nil
}

// AccountByLogin is the account of a login and its password hash. A login that does not
// exist is an error apart from a failing store, so that sign-in can tell them apart
// without saying which to the person.
func (s *Store) AccountByLogin(ctx context.Context, login string) (shared.Account, string, error) {
	var row accountRow
	err := s.db.WithContext(ctx).Where("login = ?", login).Take(&row).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return shared.Account{}, "", errNoSuchLogin
	case err != nil:
		return shared.Account{}, "", fmt.Errorf("read account: %w", err)
	}
	return row.account(), row.PasswordHash, nil
}

// IsNoSuchLogin reports whether err is AccountByLogin's "no such login".
func IsNoSuchLogin(err error) bool { return errors.Is(err, errNoSuchLogin) }

// Account is one account.
func (s *Store) Account(ctx context.Context, id string) (shared.Account, error) {
	var row accountRow
	err := s.db.WithContext(ctx).Where("id = ?", id).Take(&row).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return shared.Account{}, errNoAccount
	case err != nil:
		return shared.Account{}, fmt.Errorf("read account: %w", err)
	}
	return row.account(), nil
}

// Accounts lists every account, oldest first.
func (s *Store) Accounts(ctx context.Context) ([]shared.Account, error) {
	var rows []accountRow
	if err := s.db.WithContext(ctx).Order("created_at, id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list accounts: %w", err)
	}
	out := make([]shared.Account, len(rows))
	for i, r := range rows {
		out[i] = r.account()
	}
	return out, nil
}

// CountAdmins counts the admin accounts.
func (s *Store) CountAdmins(ctx context.Context) (int64, error) {
	var n int64
	if err := s.db.WithContext(ctx).Model(&accountRow{}).Where("role = ?", shared.RoleAdmin).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("count admins: %w", err)
	}
	return n, nil
}

// DeleteAccount deletes an account with its access tokens, sign-ins and push
// subscriptions, at once on every server of the database. The last admin stays, so that someone can still manage accounts.
func (s *Store) DeleteAccount(ctx context.Context, id string) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var row accountRow
		err := tx.Where("id = ?", id).Take(&row).Error
		switch {
		case errors.Is(err, gorm.ErrRecordNotFound):
			return errNoAccount
		case err != nil:
			return fmt.Errorf("read account: %w", err)
		}
		if row.Role == shared.RoleAdmin {
			var admins int64
			if err := tx.Model(&accountRow{}).Where("role = ?", shared.RoleAdmin).Count(&admins).Error; err != nil {
				return fmt.Errorf("count admins: %w", err)
			}
			if admins <= 1 {
				return errLastAdmin
			}
		}
		for _, del := range []struct {
			model any
			where string
		}{{&accessTokenRow{}, "account_id = ?"}, {&signInRow{}, "account_id = ?"}, {&taskEditorRow{}, "account_id = ?"}, {&pushSubscriptionRow{}, "account_id = ?"}, {&accountRow{}, "id = ?"}} {
			if err := tx.Where(del.where, id).Delete(del.model).Error; err != nil {
				return fmt.Errorf("delete account: %w", err)
			}
		}
		return nil
	})
}

// CreateInvitation stores an invitation by the hash of its code.
func (s *Store) CreateInvitation(ctx context.Context, hash, role string, expires time.Time) error {
	err := s.db.WithContext(ctx).Create(&invitationRow{Hash: hash, Role: role, ExpiresAt: expires.UnixNano()}).Error
	if err != nil {
		return fmt.Errorf("create invitation: %w", err)
	}
	return nil
}

// AcceptInvitation uses the invitation of hash, once: it makes the account in the same
// transaction, so two people with one link cannot both get in.
func (s *Store) AcceptInvitation(ctx context.Context, hash, login, passwordHash string) (shared.Account, error) {
	row := accountRow{ID: uuid.NewString(), Login: login, PasswordHash: passwordHash, CreatedAt: s.stamp()}
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var inv invitationRow
		err := tx.Where("hash = ? AND expires_at > ?", hash, s.stamp()).Take(&inv).Error
		switch {
		case errors.Is(err, gorm.ErrRecordNotFound):
			return errInvitation
		case err != nil:
			return fmt.Errorf("read invitation: %w", err)
		}
		if err := tx.Where("hash = ?", hash).Delete(&invitationRow{}).Error; err != nil {
			return fmt.Errorf("use invitation: %w", err)
		}
		row.Role = inv.Role
		return createAccount(tx, &row)
	})
	if err != nil {
		return shared.Account{}, err
	}
	return row.account(), nil
}

// InvitationValid reports whether an unexpired invitation has hash, and its role.
func (s *Store) InvitationValid(ctx context.Context, hash string) (string, error) {
	var inv invitationRow
	err := s.db.WithContext(ctx).Where("hash = ? AND expires_at > ?", hash, s.stamp()).Take(&inv).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return "", errInvitation
	case err != nil:
		return "", fmt.Errorf("read invitation: %w", err)
	}
	return inv.Role, nil
}

// CreateAccessToken stores a token of an account by the hash of its secret, working until
// expires (zero: until revoked).
func (s *Store) CreateAccessToken(ctx context.Context, accountID, name, hash string, expires time.Time) (shared.AccessToken, error) {
	row := accessTokenRow{ID: uuid.NewString(), AccountID: accountID, Name: name, Hash: hash, CreatedAt: s.stamp()}
	if !expires.IsZero() {
		row.ExpiresAt = expires.UnixNano()
	}
	if err := s.db.WithContext(ctx).Create(&row).Error; err != nil {
		return shared.AccessToken{}, fmt.Errorf("create token: %w", err)
	}
	return row.token(), nil
}

func (r accessTokenRow) token() shared.AccessToken {
	t := shared.AccessToken{ID: r.ID, Name: r.Name, CreatedAt: time.Unix(0, r.CreatedAt).UTC()}
	if r.LastUsedAt != 0 {
		used := time.Unix(0, r.LastUsedAt).UTC()
		t.LastUsedAt = &used
	}
	if r.ExpiresAt != 0 {
		end := time.Unix(0, r.ExpiresAt).UTC()
		t.ExpiresAt = &end
	}
	return t
}

// AccessTokens lists an account's tokens, oldest first; never their secrets.
func (s *Store) AccessTokens(ctx context.Context, accountID string) ([]shared.AccessToken, error) {
	var rows []accessTokenRow
	if err := s.db.WithContext(ctx).Where("account_id = ?", accountID).Order("created_at, id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	out := make([]shared.AccessToken, len(rows))
	for i, r := range rows {
		out[i] = r.token()
	}
	return out, nil
}

// DeleteAccessToken revokes one of an account's tokens; another account's is not found.
func (s *Store) DeleteAccessToken(ctx context.Context, accountID, id string) error {
	res := s.db.WithContext(ctx).Where("id = ? AND account_id = ?", id, accountID).Delete(&accessTokenRow{})
	if res.Error != nil {
		return fmt.Errorf("delete token: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return errNoToken
	}
	return nil
}

// AccountByToken is the account whose access token has hash, and the token's id; it
// records the token's use. A hash no token has, or one that has expired, is errNoToken.
func (s *Store) AccountByToken(ctx context.Context, hash string) (shared.Account, string, error) {
	var rows []struct {
		ID, Login, Role, OidcIssuer string
		CreatedAt                   int64
		TokenID                     string
		LastUsedAt                  int64
	}
	err := s.db.WithContext(ctx).Table("access_tokens AS t").
		Select("a.id, a.login, a.role, a.oidc_issuer, a.created_at, t.id AS token_id, t.last_used_at").Joins("JOIN accounts AS a ON a.id = t.account_id").
		Where("t.hash = ? AND (t.expires_at = 0 OR t.expires_at > ?)", hash, s.stamp()).Limit(1).Scan(&rows).Error
	switch {
	case err != nil:
		return shared.Account{}, "", fmt.Errorf("read token: %w", err)
	case len(rows) == 0:
		return shared.Account{}, "", errNoToken
	}
	// Its use is recorded once a minute at most: a request that finds it recent writes
	// nothing (on SQLite, even an update of no row takes the write lock).
	if now := s.stamp(); rows[0].LastUsedAt < now-int64(time.Minute) {
		err := s.db.WithContext(ctx).Model(&accessTokenRow{}).Where("id = ? AND last_used_at < ?", rows[0].TokenID, now-int64(time.Minute)).
			Update("last_used_at", now).Error
		if err != nil {
			return shared.Account{}, "", fmt.Errorf("record token use: %w", err)
		}
	}
	r := rows[0]
	return accountRow{ID: r.ID, Login: r.Login, Role: r.Role, OidcIssuer: r.OidcIssuer, CreatedAt: r.CreatedAt}.account(), r.TokenID, nil
}

// IsUnknownToken reports whether err is AccountByToken's "no token has this hash".
func IsUnknownToken(err error) bool { return errors.Is(err, errNoToken) }

type taskEditorRow struct {
	TaskID    string `gorm:"primaryKey"`
	AccountID string `gorm:"primaryKey"`
}

func (taskEditorRow) TableName() string { return "task_editors" }

// Edits reports whether the account made the task or was given it to edit (task.Service
// says who may edit what: admins every task, viewers none).
func (s *Store) Edits(ctx context.Context, accountID, taskID string) (bool, error) {
	var n int64
	err := s.db.WithContext(ctx).Model(&taskRow{}).Where("id = ? AND (owner_id = ? OR EXISTS (SELECT 1 FROM task_editors e WHERE e.task_id = tasks.id AND e.account_id = ?))",
		taskID, accountID, accountID).Count(&n).Error
	if err != nil {
		return false, fmt.Errorf("read task's editors: %w", err)
	}
	return n > 0, nil
}

// EditableTasks is the set of tasks a member may change (Edits, for every task at once):
// those it made and those shared with it.
func (s *Store) EditableTasks(ctx context.Context, accountID string) (map[string]bool, error) {
	var ids []string
	err := s.db.WithContext(ctx).Raw("SELECT id FROM tasks WHERE owner_id = ? UNION SELECT task_id FROM task_editors WHERE account_id = ?",
		accountID, accountID).Scan(&ids).Error
	if err != nil {
		return nil, fmt.Errorf("read editable tasks: %w", err)
	}
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out, nil
}

// ShareTask lets the account of login edit the task; sharing twice is no error.
func (s *Store) ShareTask(ctx context.Context, taskID, login string) (shared.Account, error) {
	acc, _, err := s.AccountByLogin(ctx, login)
	if IsNoSuchLogin(err) {
		return shared.Account{}, errNoAccount
	}
	if err != nil {
		return shared.Account{}, err
	}
	if _, err := s.GetTask(ctx, taskID); err != nil {
		return shared.Account{}, err
	}
	err = s.db.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&taskEditorRow{TaskID: taskID, AccountID: acc.ID}).Error
	if err != nil {
		return shared.Account{}, fmt.Errorf("share task: %w", err)
	}
	return acc, nil
}

// UnshareTask takes an editor's access back; one that had none is not found.
func (s *Store) UnshareTask(ctx context.Context, taskID, accountID string) error {
	res := s.db.WithContext(ctx).Where("task_id = ? AND account_id = ?", taskID, accountID).Delete(&taskEditorRow{})
	if res.Error != nil {
		return fmt.Errorf("unshare task: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return shared.Errorf(shared.CodeNotFound, "that account is not an editor of this task")
	}
	return nil
}

// TaskEditors lists the accounts a task is shared with, by login.
func (s *Store) TaskEditors(ctx context.Context, taskID string) ([]shared.Account, error) {
	var rows []accountRow
	err := s.db.WithContext(ctx).Joins("JOIN task_editors e ON e.account_id = accounts.id").
		Where("e.task_id = ?", taskID).Order("accounts.login").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("list task's editors: %w", err)
	}
	out := make([]shared.Account, len(rows))
	for i, r := range rows {
		out[i] = r.account()
	}
	return out, nil
}

type auditRow struct {
	ID        string `gorm:"primaryKey"`
	At        int64
	Login     string
	Action    string
	TaskID    string
	SessionID string
	MessageID string
	Detail    string
}

func (auditRow) TableName() string { return "audit" }

// Record adds what a person did to the audit. It outlives what it names: deleting a task
// keeps the record that someone deleted it.
func (s *Store) Record(ctx context.Context, e shared.AuditEvent) error {
	row := auditRow{ID: newID(), At: s.stamp(), Login: e.Login, Action: e.Action, TaskID: e.TaskID,
		SessionID: e.SessionID, MessageID: e.MessageID, Detail: e.Detail}
	if err := s.db.WithContext(ctx).Create(&row).Error; err != nil {
		return fmt.Errorf("record audit: %w", err)
	}
	return nil
}

// Audit calls yield with each event from from (inclusive) to to (exclusive), oldest first,
// reading a page at a time so that a long audit is never held whole.
func (s *Store) Audit(ctx context.Context, from, to time.Time, yield func(shared.AuditEvent) error) error {
	const page = 500
	at, id := from.UnixNano(), ""
	for {
		var rows []auditRow
		err := s.db.WithContext(ctx).Where("(at > ? OR at = ? AND id > ?) AND at < ?", at, at, id, to.UnixNano()).
			Order("at, id").Limit(page).Find(&rows).Error
		if err != nil {
			return fmt.Errorf("read audit: %w", err)
		}
		for _, r := range rows {
			if err := yield(shared.AuditEvent{At: time.Unix(0, r.At).UTC(), Login: r.Login, Action: r.Action,
				TaskID: r.TaskID, SessionID: r.SessionID, MessageID: r.MessageID, Detail: r.Detail}); err != nil {
				return err
			}
		}
		if len(rows) < page {
			return nil
		}
		at, id = rows[len(rows)-1].At, rows[len(rows)-1].ID
	}
}
