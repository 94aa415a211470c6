package e2e

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"conch/server/servetest"
	"conch/server/waittest"
	"conch/shared"
)

// fillAndSubmit types values into a form's inputs by id and submits it, waiting for the
// page the server answers.
func (b *browser) fillAndSubmit(t *testing.T, values map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, deadline)
	defer cancel()
	var steps []chromedp.Action[chromedp.Void]
	for id, v := range values {
		steps = append(steps, chromedp.SendKeys(chromedp.CSS("#"+id), v))
	}
	steps = append(steps, chromedp.Submit(chromedp.CSS("form")))
	if _, err := chromedp.RunResponse(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

// People get in through invitation links and sign in as themselves: an admin invited by
// the token makes an access token and a viewer's invitation on the Account page, and the
// viewer can read tasks but not create one. Screenshots: artifacts/account-*.png.
func TestAccountsInTheBrowser(t *testing.T) {
	t.Parallel()
	s := startServerWithToken(t)
	ctx := context.Background()
	inv, err := s.API.Invite(ctx, shared.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}

	// A runner joins, for the Account page's list of runners.
	runnerToken, err := s.API.CreateRunnerToken(ctx, "pool")
	if err != nil {
		t.Fatal(err)
	}
	runner := exec.Command(servetest.Bin(t), "runner", "--server", s.URL, "--name", "gpu-box", "--labels", "gpu,os=linux",
		"--capacity", "2", "--dir", t.TempDir())
	runner.Env = append(os.Environ(), "CONCH_RUNNER_TOKEN="+runnerToken.Token)
	if err := runner.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = runner.Process.Kill(); _ = runner.Wait() })

	admin := newBrowser(t)
	admin.do(t, chromedp.Navigate(s.URL+inv.URL))
	if got := admin.text(t, "form"); !strings.Contains(got, "You are invited as admin.") {
		t.Fatalf("invitation page: %q", got)
	}
	admin.fillAndSubmit(t, map[string]string{"login": "ada", "password": "ada's long password"})
	admin.waitFor(t, "the task list, signed in", `location.pathname === "/" && !document.getElementById("app-wasm-loader") && !!document.querySelector(".bar-actions")`)
	admin.do(t, chromedp.Click(chromedp.CSS(`a[href="/account"]`)))
	admin.waitFor(t, "the account page", `(document.querySelector(".account-page main") || {textContent: ""}).textContent.includes("ada · admin")`)
	waittest.Until(t, func() bool {
		l, err := s.API.Runners(ctx)
		return err == nil && slices.ContainsFunc(l, func(r shared.Runner) bool { return r.Connected })
	})
	admin.do(t, chromedp.Reload())
	admin.waitFor(t, "the runner listed", `(document.querySelector('section[aria-label="Runners"]') || {textContent: ""}).textContent.includes("gpu-boxconnected · 0 of 2 sessions · gpu, os=linux")`)
	admin.screenshots(t, "account-runners", `section[aria-label="Runners"]`)
	admin.do(t, chromedp.EmulateViewport(1280, 900))

	admin.do(t, chromedp.SendKeys(chromedp.CSS("#token-name"), "laptop"), chromedp.Click(chromedp.CSS(".account-card form.inline-form button")))
	admin.waitFor(t, "the new token's secret", `!!document.querySelector(".secret-value")`)
	secret := admin.text(t, ".secret-value")
	if !strings.HasPrefix(secret, "conch_") {
		t.Fatalf("secret %q", secret)
	}
	// The bar of an admin's Account page downloads the audit, which holds that write.
	audit := eval[string](t, admin, `fetch(document.querySelector('.bar a[download][href="/api/v1/audit"]').href).then(r => r.text())`)
	if !strings.Contains(audit, `"login":"ada","action":"POST /api/v1/tokens"`) {
		t.Errorf("the audit the Account page links to: %q", audit)
	}
	admin.screenshots(t, "account-bar", ".bar")
	admin.do(t, chromedp.EmulateViewport(1280, 900))
	if me, err := s.API.WithToken(secret).Me(ctx); err != nil || me.Login != "ada" {
		t.Errorf("the token made in the page is %+v, %v", me, err)
	}
	tokens, err := s.API.WithToken(secret).AccessTokens(ctx)
	if err != nil || len(tokens) != 1 || tokens[0].ExpiresAt == nil || tokens[0].ExpiresAt.Sub(tokens[0].CreatedAt).Round(time.Hour) != 30*24*time.Hour {
		t.Errorf("the token made in the page with the form's default life: %+v, %v", tokens, err)
	}
	admin.waitFor(t, "the token in the list", `document.querySelector(".account-list").textContent.includes("laptop") && document.querySelector(".account-list").textContent.includes("ends")`)
	if name := eval[string](t, admin, `document.querySelector("#token-name").value`); name != "" {
		t.Errorf("after the token was made its name field holds %q", name)
	}
	if life := eval[string](t, admin, `document.querySelector("#token-days").selectedOptions[0].textContent`); life != "30 days" {
		t.Errorf("after the token was made its life shows %q, the one it was made with is 30 days", life)
	}

	admin.do(t, chromedp.Evaluate[chromedp.Void](`const r = document.querySelector("#invite-role"); r.value = "viewer"; r.dispatchEvent(new Event("change"))`),
		chromedp.Click(chromedp.CSS(`#invite-role ~ button, form.inline-form:has(#invite-role) button`)))
	admin.waitFor(t, "the invitation link", `[...document.querySelectorAll(".secret-value")].some(e => e.textContent.includes("/invite/"))`)
	link := eval[string](t, admin, `[...document.querySelectorAll(".secret-value")].map(e => e.textContent).find(t => t.includes("/invite/"))`)
	admin.screenshots(t, "account", "")

	viewer := newBrowser(t)
	viewer.do(t, chromedp.Navigate(link))
	if got := viewer.text(t, "form"); !strings.Contains(got, "You are invited as viewer.") {
		t.Fatalf("the viewer's invitation page: %q", got)
	}
	viewer.fillAndSubmit(t, map[string]string{"login": "vic", "password": "vic's long password"})
	viewer.waitFor(t, "the task list for the viewer", `location.pathname === "/" && !document.getElementById("app-wasm-loader") && !!document.querySelector(".bar-actions")`)
	viewer.do(t, chromedp.SendKeys(chromedp.CSS("#task-title"), "not allowed"), chromedp.Click(chromedp.CSS("form.new-task button[type=submit]")))
	viewer.waitFor(t, "the refusal", `(document.querySelector(".alert") || {textContent: ""}).textContent.includes("needs the member role")`)
	if tasks, err := s.API.ListTasks(ctx); err != nil || len(tasks) != 0 {
		t.Errorf("after the viewer's refused task: %d tasks, %v", len(tasks), err)
	}

	// A second use of the link gets nowhere.
	again := newBrowser(t)
	again.do(t, chromedp.Navigate(link))
	if got := again.text(t, "main"); !strings.Contains(got, "this invitation is not valid") {
		t.Errorf("a used link: %q", got)
	}
}

// A page whose sign-in ends while it is open (here the account is deleted, which closes
// its WebSocket with 4401) goes to the sign-in page, which would bring it back, instead
// of retrying for ever with only errors to show.
func TestSignedOutPageGoesToSignIn(t *testing.T) {
	t.Parallel()
	s := startServerWithToken(t)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if _, err := s.API.CreateAccount(ctx, "ada", shared.RoleAdmin, "ada's long password"); err != nil { // the sign-in page asks for logins once there is an admin
		t.Fatal(err)
	}
	mia, err := s.API.CreateAccount(ctx, "mia", shared.RoleMember, "mia's long password")
	if err != nil {
		t.Fatal(err)
	}
	sess := s.session(t, "read by mia")

	b := newBrowser(t)
	b.do(t, chromedp.Navigate(s.URL+"/login?next="+url.QueryEscape("/sessions/"+sess.ID)),
		chromedp.SendKeys(chromedp.CSS("#login"), "mia"), chromedp.SendKeys(chromedp.CSS("#password"), "mia's long password"),
		chromedp.Click(chromedp.CSS(`button[type=submit]`)))
	b.waitThrough(t, "the session page", fmt.Sprintf(`location.pathname === %q && !document.getElementById("app-wasm-loader")`, "/sessions/"+sess.ID))
	b.waitLive(t, "Live")
	if err := s.API.DeleteAccount(ctx, mia.ID); err != nil {
		t.Fatal(err)
	}
	want := "/login?next=" + url.QueryEscape("/sessions/"+sess.ID)
	b.waitThrough(t, "the sign-in page", fmt.Sprintf(`location.pathname + location.search === %q && !!document.querySelector("#login")`, want))
}
