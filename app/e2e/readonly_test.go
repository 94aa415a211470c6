//go:build !js

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"conch/app/client"
	"conch/shared"
)

// signedIn makes an account of role, signs a browser in as it through the sign-in form,
// and returns the browser with an API client of a personal access token the browser made.
func signedIn(t *testing.T, s *server, login, role string) (*browser, *client.Client) {
	t.Helper()
	if _, err := s.API.CreateAccount(context.Background(), login, role, login+"'s long password"); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t)
	b.do(t, chromedp.Navigate(s.URL+"/login"))
	b.fillAndSubmit(t, map[string]string{"login": login, "password": login + "'s long password"})
	b.waitFor(t, "the task list, signed in", `location.pathname === "/" && !document.getElementById("app-wasm-loader") && !!document.querySelector(".bar-actions")`)
	secret := eval[string](t, b, `fetch("/api/v1/tokens", {method: "POST", body: JSON.stringify({name: "e2e"})}).then(r => r.json()).then(j => j.token)`)
	if !strings.HasPrefix(secret, "conch_") {
		t.Fatalf("%s's token: %q", login, secret)
	}
	return b, s.API.WithToken(secret)
}

// A viewer, and a member on a task not shared with them, see the session without a prompt
// box or permission buttons, a line that says why, and no Delete in the task list; the
// API refuses their prompt and their answer (403). The owner's approval then shows who
// gave it. Screenshots: artifacts/readonly-*.png.
func TestReadOnlyInTheBrowser(t *testing.T) {
	t.Parallel()
	s, _ := startAgentsServer(t, "--token", e2eToken)
	s.API = s.API.WithToken(e2eToken)
	ctx := context.Background()
	if _, err := s.API.CreateAccount(ctx, "root", shared.RoleAdmin, "root's long password"); err != nil {
		t.Fatal(err) // once there is an admin, the sign-in page asks for a login and password
	}
	adaPage, ada := signedIn(t, s, "ada", shared.RoleMember)
	task, err := ada.CreateTask(ctx, "ada's task", "")
	if err != nil {
		t.Fatal(err)
	}
	sess, err := ada.StartSession(ctx, task.ID, askingAgent, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ada.SendMessage(ctx, sess.ID, "echo hello", ""); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct{ login, role, why string }{
		{"vic", shared.RoleViewer, "Read only: you are a viewer."},
		{"bob", shared.RoleMember, "ada's task: ask ada or an admin to share it."},
	} {
		b, api := signedIn(t, s, c.login, c.role)
		b.waitFor(t, "the task list", `!!document.querySelector(".task")`)
		if n := eval[int](t, b, `document.querySelectorAll(".task .danger, .task .agent-pick").length`); n != 0 {
			t.Errorf("%s's task list offers %d of Delete and a new session on ada's task", c.login, n)
		}
		b.open(t, s.URL+"/sessions/"+sess.ID)
		b.waitFor(t, "the read-only line", fmt.Sprintf(`(document.querySelector(".prompt.read-only p") || {textContent: ""}).textContent === %q`, c.why))
		b.waitFor(t, "the permission request", `!!document.querySelector(".perm-pending")`)
		if n := eval[int](t, b, `document.querySelectorAll("#prompt-input, .perm button, .resume, .mode select").length`); n != 0 {
			t.Errorf("%s sees %d controls that change the session", c.login, n)
		}

		ask := pendingAsk(t, api, sess.ID)
		if _, err := api.SendMessage(ctx, sess.ID, "rm -rf /", ""); shared.ErrorCode(err) != shared.CodeForbidden {
			t.Errorf("%s's prompt: %v, want forbidden", c.login, err)
		}
		if _, err := api.AnswerPermission(ctx, sess.ID, ask.ID, "allow"); shared.ErrorCode(err) != shared.CodeForbidden {
			t.Errorf("%s's answer: %v, want forbidden", c.login, err)
		}
		if c.role == shared.RoleMember {
			if _, err := ada.AnswerPermission(ctx, sess.ID, ask.ID, "allow"); err != nil {
				t.Fatal(err)
			}
			b.waitFor(t, "who allowed it", fmt.Sprintf(`(document.querySelector(%q) || {textContent: ""}).textContent === "Allowed by ada: Allow"`, row(ask.ID)+" .perm-label"))
		}
		b.screenshots(t, "readonly-"+c.role, "")
	}

	// ada shares the task by a link; whoever opens it reads that task alone.
	adaPage.do(t, chromedp.Navigate(s.URL+"/"))
	adaPage.waitFor(t, "ada's task list", `!document.getElementById("app-wasm-loader") && !!document.querySelector(".share-links")`)
	adaPage.do(t, chromedp.Click(chromedp.CSS(".share-links > button")))
	adaPage.do(t, chromedp.Click(chromedp.CSS(".share-panel button[type=submit]")))
	adaPage.waitFor(t, "the new link", `!!document.querySelector(".share-panel .secret-value") && document.querySelectorAll(".share-panel li").length === 1`)
	link := adaPage.text(t, ".share-panel .secret-value")
	adaPage.screenshots(t, "sharelink", ".share-panel")
	adaPage.do(t, chromedp.Navigate(link)) // ada, signed in, is asked before her sign-in goes
	adaPage.waitFor(t, "the question before a guest sign-in", `document.body.textContent.includes("You are signed in as ada") && !!document.querySelector("form[method=post] button")`)
	adaPage.screenshots(t, "share-ask", "")
	other, err := s.API.CreateTask(ctx, "not shared", "")
	if err != nil {
		t.Fatal(err)
	}
	guest := newBrowser(t)
	guest.do(t, chromedp.Navigate(link))
	guest.waitThrough(t, "the guest's task list", `location.pathname === "/" && document.querySelectorAll(".task").length === 1`)
	if got := guest.text(t, ".task h3"); got != "ada's task" || strings.Contains(guest.text(t, "main"), other.Title) {
		t.Errorf("the guest's list shows %q", guest.text(t, "main"))
	}
	guest.open(t, s.URL+"/sessions/"+sess.ID)
	guest.waitFor(t, "the guest's read-only line", `(document.querySelector(".prompt.read-only p") || {textContent: ""}).textContent === "Read only: this task was shared with you by a link."`)
	guest.screenshots(t, "guest", "")
}

// pendingAsk is the session's pending permission request.
func pendingAsk(t *testing.T, api *client.Client, sid string) shared.Message {
	t.Helper()
	page, err := api.ListMessages(context.Background(), shared.ListRequest{SessionID: sid})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range page.Messages {
		if m.Type == shared.TypePermissionRequest && m.Metadata.Status == shared.StatusPending {
			return m
		}
	}
	t.Fatalf("no pending request in %+v", page.Messages)
	return shared.Message{}
}
