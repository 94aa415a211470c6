package e2e

import (
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/oauth2-proxy/mockoidc"
)

// People sign in through the company's identity provider (a real OpenID Connect
// provider on loopback, authorization code with PKCE): the first sign-in makes their
// account with the role their groups give, a later one follows a change of groups on the
// same account, and someone in no group that may use Conch is turned away.
func TestSingleSignOn(t *testing.T) {
	idp, err := mockoidc.Run()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = idp.Shutdown() })
	t.Setenv("CONCH_OIDC_CLIENT_SECRET", idp.ClientSecret)
	s := startServerAt(t, "127.0.0.1:0", filepath.Join(t.TempDir(), "conch.db"), "--token", e2eToken,
		"--oidc-issuer", idp.Issuer(), "--oidc-client-id", idp.ClientID, "--oidc-groups", "devs=member,leads=admin")

	signIn := func(groups ...string) *browser {
		t.Helper()
		idp.QueueUser(&mockoidc.MockUser{Subject: "sub-grace", PreferredUsername: "grace", Email: "grace@example.com", Groups: groups})
		b := newBrowser(t)
		b.do(t, chromedp.Navigate(s.URL+"/account"))
		b.waitFor(t, "the sign-in page", `location.pathname === "/login" && !!document.querySelector('a[href^="/login/oidc"]')`)
		b.do(t, chromedp.Click(chromedp.CSS(`a[href^="/login/oidc"]`)))
		return b
	}
	me := `(document.querySelector(".account-page main") || {textContent: ""}).textContent`

	b := signIn("devs")
	b.waitThrough(t, "the account page, signed in as a member", me+`.includes("grace · member")`)
	b.screenshot(t, "sso-member.png")

	b = signIn("devs", "leads")
	b.waitThrough(t, "the same account, now an admin", me+`.includes("grace · admin")`)
	accounts := eval[string](t, b, `[...document.querySelectorAll(".account-list .account-name")].map(e => e.textContent).join(",")`)
	if accounts != "grace" {
		t.Errorf("after two sign-ins the accounts are %q", accounts)
	}

	b = signIn("interns")
	b.waitThrough(t, "the refusal", `(document.querySelector("[role=alert]") || {textContent: ""}).textContent.includes("in none of the groups that may use Conch")`)
	b.screenshot(t, "sso-refused.png")
}
