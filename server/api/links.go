package api

import (
	"context"
	"html/template"
	"net/http"

	"conch/server/store"
	"conch/server/task"
	"conch/shared"

	"github.com/gofiber/fiber/v2"
)

// Read-only links to a task (shared.ShareLink): its owner or an admin makes one that
// works for 1 to 30 days, lists and revokes them; opening one signs the browser in as a
// guest of that one task (guest; what a guest may reach is decided in task.Service.InScope).

// guest is the account of a sign-in made by the link id: a viewer of the link's task, or
// not signed in once the link was revoked or expired.
func (s *server) guest(ctx context.Context, linkID string) (shared.Account, bool, error) {
	link, err := s.store.ShareLink(ctx, linkID)
	if shared.ErrorCode(err) == shared.CodeNotFound {
		return shared.Account{}, false, nil
	}
	if err != nil {
		return shared.Account{}, false, err
	}
	return shared.Account{Login: shared.GuestLogin, Role: shared.RoleViewer, TaskID: link.TaskID, CreatedAt: link.CreatedAt}, true, nil
}

func (s *server) handleCreateLink(c *fiber.Ctx) error {
	var req shared.NewShareLink
	if err := decodeBody(c.Body(), &req); err != nil {
		return s.fail(c, err)
	}
	ctx := c.UserContext()
	link, err := s.tasks.CreateLink(ctx, accountFrom(ctx), c.Params("task_id"), req.Days)
	return s.answer(c, http.StatusCreated, link, err)
}

func (s *server) handleListLinks(c *fiber.Ctx) error {
	ctx := c.UserContext()
	links, err := s.tasks.Links(ctx, accountFrom(ctx), c.Params("task_id"))
	return s.answer(c, http.StatusOK, struct {
		Links []shared.ShareLink `json:"links"`
	}{links}, err)
}

func (s *server) handleDeleteLink(c *fiber.Ctx) error {
	ctx := c.UserContext()
	if err := s.tasks.DeleteLink(ctx, accountFrom(ctx), c.Params("task_id"), c.Params("link_id")); err != nil {
		return s.fail(c, err)
	}
	return c.SendStatus(http.StatusNoContent)
}

// The page a share link opens. The sign-in cookie is SameSite=Strict, which a browser
// does not send on a navigation that began on another site (the mail or chat the link
// was in): so such a visit first comes back from this origin (Hop) to see who is signed
// in; someone signed in with an account is asked before their sign-in is swapped for a
// guest's (Login); a guest's page goes on to the task by itself.
var sharePage = template.Must(template.New("share").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="theme-color" content="#111827">
{{if .Hop}}<meta http-equiv="refresh" content="0">{{else if .Until}}{{if not .Login}}<meta http-equiv="refresh" content="0; url=/">{{end}}{{end}}
<title>Shared task · Conch</title>
<link rel="icon" href="/web/icon.svg"><link rel="stylesheet" href="/web/app.css">
</head><body><div class="page login-page">
<header class="bar"><h1>Conch</h1></header>
<main><div class="new-task">
{{if .Error}}<p class="alert" role="alert">{{.Error}}</p>
{{else if .Hop}}<p>Opening the shared task…</p>
{{else if .Login}}<h2>Open a shared task?</h2>
<p>This link shows one task, read only, until {{.Until}}. You are signed in as <strong>{{.Login}}</strong>: opening it as a guest signs this browser out of {{.Login}}.</p>
<form method="post" class="inline-form choice"><button type="submit">Open as a guest</button> <a href="/">Stay signed in as {{.Login}}</a></form>
{{else}}<p>You may read this task until {{.Until}}. <a href="/">Open it</a></p>{{end}}
</div></main></div></body></html>
`))

type sharePageData struct {
	Error, Until, Login string
	Hop                 bool
}

// handleShare signs the browser in as a guest of the link's task, until the link
// expires; a GET from a browser signed in with an account asks first (sharePage), and its
// form posts here.
func (s *server) handleShare(c *fiber.Ctx) error {
	link, err := s.store.ShareLinkByHash(c.UserContext(), task.HashSecret(c.Params("code")))
	var page sharePageData
	if err == nil {
		page.Until = link.ExpiresAt.Format("Jan 2, 2006 15:04 UTC")
		if c.Method() == fiber.MethodGet {
			if c.Get("Sec-Fetch-Site") == "cross-site" {
				page = sharePageData{Hop: true}
			} else if acc, _, in, _ := s.signedIn(c.UserContext(), c.Cookies(cookieName)); in && acc.TaskID == "" {
				page.Login = acc.Login
			}
		}
		if !page.Hop && page.Login == "" {
			err = s.signInUntil(c, store.SignIn{LinkID: link.ID}, link.ExpiresAt)
		}
	}
	if problem := s.formPage(c, err); problem != "" {
		page = sharePageData{Error: problem}
	}
	return sharePage.Execute(c, page)
}
