package api

import (
	"bytes"
	"context"
	"encoding/json"
	"html/template"
	"math"
	"net/http"
	"time"

	"conch/server/task"
	"conch/shared"

	"github.com/gofiber/fiber/v2"
)

// Who may do what is asked here, for REST and WebSocket alike, and decided by server/task:
// every route is registered with the least role it needs (as), every WebSocket action has
// one (wsAllowed), both from the route table (routes.go), and both ask task.Permits, then
// the task's rules.
// docs/API.md, "Accounts and roles".

// accountKey holds the request's account in Fiber's locals, which a WebSocket keeps
// (requireToken); handlers read it from their context (accountFrom).
const accountKey = "conch.account"

type accountCtx struct{}

// madeTaskKey holds, in Fiber's locals, the id of a task a request made, for its audit.
const madeTaskKey = "conch.made-task"

func withAccount(ctx context.Context, acc shared.Account) context.Context {
	return context.WithValue(ctx, accountCtx{}, acc)
}

// accountFrom is the account of the request whose context ctx is.
func accountFrom(ctx context.Context) shared.Account {
	acc, _ := ctx.Value(accountCtx{}).(shared.Account)
	return acc
}

var (
	// tokenAccount is who the server's --token is: the admin of scripts made before
	// accounts. It has no row, so no access tokens of its own.
	tokenAccount = shared.Account{Login: shared.TokenLogin, Role: shared.RoleAdmin}
	// localAccount is everyone on a server without a token, which serves loopback only.
	localAccount = shared.Account{Login: shared.LocalLogin, Role: shared.RoleAdmin}
)

var (
	errWrongPassword = shared.Errorf(shared.CodeUnauthorized, "That login and password do not match.")
	errNoOwnTokens   = shared.Errorf(shared.CodeInvalid, "the server's token has no access tokens of its own: sign in with an account")
)

// wsAllowed checks a WebSocket request as as checks a route; a write returns its audit
// event. The payload is read here only for its ids; the action decodes it strictly.
func (s *server) wsAllowed(ctx context.Context, req shared.Envelope) (*shared.AuditEvent, error) {
	need, known := wsNeeds[req.Action]
	acc := accountFrom(ctx)
	var ids struct {
		SessionID string `json:"session_id"`
		MessageID string `json:"message_id"`
	}
	_ = json.Unmarshal(req.Payload, &ids)
	event := shared.AuditEvent{Login: acc.Login, Action: req.Action, SessionID: ids.SessionID, MessageID: ids.MessageID}
	if err := s.tasks.InScope(ctx, acc, event); err != nil {
		return nil, err
	}
	if !known { // an action without a row in routes is no action
		return nil, unknownAction(req.Action)
	}
	if need == shared.RoleViewer {
		return nil, task.Permits(acc, need)
	}
	// A socket keeps the account it opened with; a write asks for its role now, so a
	// demotion (single sign-on's groups) reaches sockets opened before it.
	if acc.ID != "" && acc.TaskID == "" {
		now, err := s.store.Account(ctx, acc.ID)
		if err != nil {
			return nil, err
		}
		acc = now
	}
	if err := task.Permits(acc, need); err != nil {
		return nil, err
	}
	return &event, s.tasks.CheckEdit(ctx, acc, &event)
}

// as is the middleware of a route that needs role. A write to a task (a route that names
// one, or a session of one) also needs the account to be one of the task's editors; and
// every write that succeeds goes to the audit.
func (s *server) as(role string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		ctx, acc := c.UserContext(), accountFrom(c.UserContext())
		event := shared.AuditEvent{Login: acc.Login, Action: c.Method() + " " + c.Route().Path,
			TaskID: c.Params("task_id"), SessionID: c.Params("session_id"), MessageID: c.Params("message_id")}
		if err := s.tasks.InScope(ctx, acc, event); err != nil {
			return s.fail(c, err)
		}
		if err := task.Permits(acc, role); err != nil {
			return s.fail(c, err)
		}
		if role == shared.RoleMember {
			if err := s.tasks.CheckEdit(ctx, acc, &event); err != nil {
				return s.fail(c, err)
			}
		}
		if err := c.Next(); err != nil || c.Method() == fiber.MethodGet || c.Response().StatusCode() >= 400 {
			return err
		}
		if made, ok := c.Locals(madeTaskKey).(string); ok {
			event.TaskID = made
		}
		s.tasks.Audit(ctx, event)
		return nil
	}
}

func (s *server) handleMe(c *fiber.Ctx) error { return sendJSON(c, accountFrom(c.UserContext())) }

func (s *server) handleListAccounts(c *fiber.Ctx) error {
	accounts, err := s.store.Accounts(c.UserContext())
	if err != nil {
		return s.fail(c, err)
	}
	return sendJSON(c, struct {
		Accounts []shared.Account `json:"accounts"`
	}{accounts})
}

// handleCreateAccount makes an account at once when given a password, or else an
// invitation (201 either way).
func (s *server) handleCreateAccount(c *fiber.Ctx) error {
	var req shared.NewAccount
	if err := decodeBody(c.Body(), &req); err != nil {
		return s.fail(c, err)
	}
	made, err := s.tasks.CreateAccount(c.UserContext(), req)
	return s.answer(c, http.StatusCreated, made, err)
}

func (s *server) handleDeleteAccount(c *fiber.Ctx) error {
	if err := s.tasks.DeleteAccount(c.UserContext(), c.Params("account_id")); err != nil {
		return s.fail(c, err)
	}
	return c.SendStatus(http.StatusNoContent)
}

func (s *server) handleListTokens(c *fiber.Ctx) error {
	ctx := c.UserContext()
	tokens, err := s.tasks.AccessTokens(ctx, accountFrom(ctx))
	return s.answer(c, http.StatusOK, struct {
		Tokens []shared.AccessToken `json:"tokens"`
	}{tokens}, err)
}

// handleCreateToken makes a token of the signed-in account; its secret is in this answer
// only.
func (s *server) handleCreateToken(c *fiber.Ctx) error {
	ctx := c.UserContext()
	if err := task.HasOwnTokens(accountFrom(ctx)); err != nil {
		return s.fail(c, err)
	}
	var req shared.NewAccessToken
	if err := decodeBody(c.Body(), &req); err != nil {
		return s.fail(c, err)
	}
	tok, err := s.tasks.CreateToken(ctx, accountFrom(ctx), req)
	return s.answer(c, http.StatusCreated, tok, err)
}

func (s *server) handleDeleteToken(c *fiber.Ctx) error {
	ctx := c.UserContext()
	if err := s.tasks.DeleteToken(ctx, accountFrom(ctx), c.Params("token_id")); err != nil {
		return s.fail(c, err)
	}
	return c.SendStatus(http.StatusNoContent)
}

// The invitation page sets a login and password for a new account, then signs it in.
var inviteTemplate = template.Must(template.New("invite").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="theme-color" content="#111827">
<title>Create your account · Conch</title>
<link rel="icon" href="/web/icon.svg"><link rel="stylesheet" href="/web/app.css">
</head><body><div class="page login-page">
<header class="bar"><h1>Conch</h1></header>
<main><form class="new-task" method="post">
<h2>Create your account</h2>
{{if .Error}}<p class="alert" role="alert">{{.Error}}</p>{{end}}
{{if .Role}}<p class="empty">You are invited as {{.Role}}.</p>
<div class="field"><label for="login">Login</label>
<input id="login" name="login" autocomplete="username" required autofocus></div>
<div class="field"><label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="new-password" minlength="10" required></div>
<button type="submit">Create account</button>{{end}}
</form></main></div></body></html>
`))

func (s *server) invitePage(c *fiber.Ctx, err error, role string) error {
	problem := s.formPage(c, err)
	return inviteTemplate.Execute(c, struct{ Error, Role string }{problem, role})
}

func (s *server) handleInviteForm(c *fiber.Ctx) error {
	role, err := s.store.InvitationValid(c.UserContext(), task.HashSecret(c.Params("code")))
	return s.invitePage(c, err, role)
}

func (s *server) handleInvite(c *fiber.Ctx) error {
	role, err := s.store.InvitationValid(c.UserContext(), task.HashSecret(c.Params("code")))
	if err != nil {
		return s.invitePage(c, err, "")
	}
	acc, err := s.tasks.AcceptInvitation(c.UserContext(), c.Params("code"), c.FormValue("login"), c.FormValue("password"))
	if err == nil {
		err = s.startSignIn(c, acc.ID)
	}
	if err != nil {
		return s.invitePage(c, err, role)
	}
	return c.Redirect("/", http.StatusSeeOther)
}

func (s *server) handleListEditors(c *fiber.Ctx) error {
	editors, err := s.store.TaskEditors(c.UserContext(), c.Params("task_id"))
	if err != nil {
		return s.fail(c, err)
	}
	return sendJSON(c, struct {
		Editors []shared.Account `json:"editors"`
	}{editors})
}

func (s *server) handleAddEditor(c *fiber.Ctx) error {
	var req struct {
		Login string `json:"login"`
	}
	if err := decodeBody(c.Body(), &req); err != nil {
		return s.fail(c, err)
	}
	ctx := c.UserContext()
	acc, err := s.tasks.AddEditor(ctx, accountFrom(ctx), c.Params("task_id"), req.Login)
	return s.answer(c, http.StatusOK, acc, err)
}

func (s *server) handleRemoveEditor(c *fiber.Ctx) error {
	ctx := c.UserContext()
	if err := s.tasks.RemoveEditor(ctx, accountFrom(ctx), c.Params("task_id"), c.Params("account_id")); err != nil {
		return s.fail(c, err)
	}
	return c.SendStatus(http.StatusNoContent)
}

// handleAudit answers the audit from ?from= to ?to= (RFC 3339; by default from a day ago,
// to the end) as JSON lines, oldest first.
func (s *server) handleAudit(c *fiber.Ctx) error {
	to, from := time.Unix(0, math.MaxInt64), s.now().Add(-24*time.Hour)
	for _, q := range []struct {
		name string
		t    *time.Time
	}{{"from", &from}, {"to", &to}} {
		if v := c.Query(q.name); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				return s.fail(c, shared.Errorf(shared.CodeInvalid, "%s must be an RFC 3339 time, like 2026-12-04T09:00:00Z", q.name))
			}
			*q.t = t
		}
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	err := s.store.Audit(c.UserContext(), from, to, func(e shared.AuditEvent) error {
		if out.Len() > maxAuditBytes {
			return errAuditTooLong
		}
		return enc.Encode(e)
	})
	if err != nil {
		return s.fail(c, err)
	}
	c.Set(fiber.HeaderContentType, "application/jsonl")
	return c.Send(out.Bytes())
}

// maxAuditBytes bounds one answer of the audit: a longer span is asked in parts.
const maxAuditBytes = 32 << 20

var errAuditTooLong = shared.Errorf(shared.CodeTooLarge, "the audit of this span is over 32 MiB: ask for a shorter one (from, to)")
