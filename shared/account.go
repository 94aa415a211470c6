package shared

import (
	"strings"
	"time"
)

// The roles of an account, from most to least allowed (docs/API.md, "Accounts and roles"):
// an admin may do everything, accounts included; a member may use tasks and sessions; a
// viewer may only read.
const (
	RoleAdmin  = "admin"
	RoleMember = "member"
	RoleViewer = "viewer"
)

// Roles lists the roles, most allowed first.
var Roles = []string{RoleAdmin, RoleMember, RoleViewer}

// RoleRank orders roles: a higher rank may do all a lower one may. An unknown role ranks 0.
func RoleRank(role string) int {
	switch role {
	case RoleAdmin:
		return 3
	case RoleMember:
		return 2
	case RoleViewer:
		return 1
	}
	return 0
}

// Account is a person who signs in. The server's --token acts as the account "token", an
// admin with no row, so scripts made before accounts keep working.
type Account struct {
	ID        string    `json:"id"`
	Login     string    `json:"login"`
	Role      string    `json:"role"`
	CreatedAt time.Time `json:"created_at"`
	// TaskID is set for a guest, signed in through a share link: a viewer of this one
	// task, to whom everything else does not exist.
	TaskID string `json:"task_id,omitempty"`
	// Provider is the issuer of the identity provider the account signs in with (single
	// sign-on); "" for an account with a password.
	Provider string `json:"provider,omitempty"`
}

// NewAccount asks for an account (POST /api/v1/accounts). With a password the account is
// made at once; without one the answer is an invitation whose link sets it.
type NewAccount struct {
	Login    string `json:"login,omitempty"`
	Role     string `json:"role"`
	Password string `json:"password,omitempty"`
}

// Invitation is a one-time link that makes an account of its role.
type Invitation struct {
	Role      string    `json:"role"`
	URL       string    `json:"url"` // a path on this server, with the one-time code
	ExpiresAt time.Time `json:"expires_at"`
}

// AccessToken is a personal access token of an account, for the CLI and scripts. Only its
// hash is stored; Token, the secret itself, is in the one answer that creates it.
type AccessToken struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
	ExpiresAt  *time.Time `json:"expires_at,omitempty"` // nil: until revoked
	Token      string     `json:"token,omitempty"`
}

// NewAccessToken asks for a token (POST /api/v1/tokens).
type NewAccessToken struct {
	Name string `json:"name"`
	// ExpiresInDays ends the token that many days after it is made (1 to
	// MaxTokenDays); 0 keeps it until revoked, except for an account of single sign-on,
	// whose tokens last at most SSOTokenDays (their default too), so that a person the
	// identity provider drops loses them without signing in again.
	ExpiresInDays int `json:"expires_in_days,omitempty"`
}

// The bounds of an access token's life, in days (NewAccessToken).
const (
	MaxTokenDays = 366
	SSOTokenDays = 30
)

// AuditEvent is one thing a person did (GET /api/v1/audit, one JSON object a line):
// Action is the route ("POST /api/v1/tasks/:task_id/…") or WebSocket action, and the ids
// name what it was done to.
type AuditEvent struct {
	At        time.Time `json:"at"`
	Login     string    `json:"login"`
	Action    string    `json:"action"`
	TaskID    string    `json:"task_id,omitempty"`
	SessionID string    `json:"session_id,omitempty"`
	MessageID string    `json:"message_id,omitempty"`
	Detail    string    `json:"detail,omitempty"`
}

// ShareLink is a read-only link to one task that works until it expires: whoever opens
// it is signed in as a guest who may read that task and nothing else (docs/API.md,
// "Accounts and roles"). URL, the secret, is in the answer that makes it only.
type ShareLink struct {
	ID        string    `json:"id"`
	TaskID    string    `json:"task_id"`
	CreatedBy string    `json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	URL       string    `json:"url,omitempty"` // a path on this server, with the link's code
}

// NewShareLink asks for a link (POST /api/v1/tasks/{id}/links) that works for Days days,
// 1 to 30.
type NewShareLink struct {
	Days int `json:"days"`
}

// The logins of who is not an account: the server's --token, everyone on a server
// without a token, and everyone signed in through a share link. No account may take one,
// in any case, so that the audit tells them apart from people.
const (
	TokenLogin = "token"
	LocalLogin = "local"
	GuestLogin = "guest"
)

// ReservedLogin reports whether login is one of the logins of who is not an account.
func ReservedLogin(login string) bool {
	for _, r := range []string{TokenLogin, LocalLogin, GuestLogin} {
		if strings.EqualFold(login, r) {
			return true
		}
	}
	return false
}
