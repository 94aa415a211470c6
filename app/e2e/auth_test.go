//go:build !js

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// e2eToken is the --token of the servers that require one.
const e2eToken = "e2e-token-0123456789abcdef"

// signInCookie is the one cookie Conch sets.
const signInCookie = "conch_session"

func startServerWithToken(t *testing.T, flags ...string) *server {
	t.Helper()
	s := startServerAt(t, "127.0.0.1:0", filepath.Join(t.TempDir(), "conch.db"), append([]string{"--token", e2eToken}, flags...)...)
	s.API = s.API.WithToken(e2eToken)
	return s
}

// requestLog records the URL of every request a browser sends, redirects included.
type requestLog struct {
	mu   sync.Mutex
	urls []string
}

func (l *requestLog) observe(ev any) {
	if e, ok := ev.(*network.EventRequestWillBeSent); ok {
		l.mu.Lock()
		l.urls = append(l.urls, e.Request.URL)
		l.mu.Unlock()
	}
}

func (l *requestLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	urls := l.urls
	l.urls = nil
	return urls
}

// TestSignInRedirectsStayOnThisSite signs in through the form with hostile next values
// and hands hostile URLs a valid ?token=: the browser never leaves the server's origin and
// holds no cookie but the sign-in one.
func TestSignInRedirectsStayOnThisSite(t *testing.T) {
	t.Parallel()
	s := startServerWithToken(t)
	b := newBrowser(t)
	var log requestLog
	if err := chromedp.Listen(b.ctx, log.observe); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, next, handoff string // one of next (the form's) and handoff (a request target) is set
	}{
		{name: "header splitting", next: "/\r\nSet-Cookie: injected=1; Path=/"},
		{name: "escaped header splitting", next: "/%0D%0ASet-Cookie:%20injected=1;%20Path=/"},
		{name: "tab then host", next: "/\t/evil.invalid/x"},
		{name: "escaped tab then host", next: "/%09/evil.invalid/x"},
		{name: "scheme-relative", next: "//evil.invalid/x"},
		{name: "backslash", next: "/\\evil.invalid/x"},
		{name: "absolute", next: "http://evil.invalid/x"},
		{name: "hand-off scheme-relative", handoff: "//evil.invalid/x?token=" + e2eToken},
		{name: "hand-off tab", handoff: "/%09/evil.invalid/x?token=" + e2eToken},
		{name: "hand-off header splitting", handoff: "/x%0D%0ASet-Cookie:%20injected=1?token=" + e2eToken},
		{name: "hand-off escaped path", handoff: "/sessions/a%2520b?token=" + e2eToken},
	}
	for _, tc := range cases {
		b.do(t, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, network.ClearBrowserCookies, cdp.Empty{})
			return err
		}))
		log.take()
		// A page that does not load (a foreign host) is an error here: the checks below say which.
		ctx, cancel := context.WithTimeout(b.ctx, deadline)
		if tc.handoff != "" {
			_, _ = chromedp.RunResponse(ctx, chromedp.Navigate(s.URL+tc.handoff))
		} else {
			b.do(t, chromedp.Navigate(s.URL+"/login"))
			_, _ = chromedp.RunResponse(ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`
				document.querySelector("input[name=next]").value = %q;
				document.querySelector("#token").value = %q;
				document.querySelector("form").submit();`, tc.next, e2eToken)))
		}
		cancel()
		if origin := eval[string](t, b, `location.origin`); origin != s.URL {
			t.Errorf("%s: the browser is at %s, not on %s", tc.name, eval[string](t, b, `location.href`), s.URL)
		}
		for _, u := range log.take() {
			// data: URLs are the pictures of Chromium's own error page.
			if !strings.HasPrefix(u, s.URL+"/") && !strings.HasPrefix(u, "data:") {
				t.Errorf("%s: the browser requested %s", tc.name, u)
			}
		}
		got := browserCookies(t, b, s.URL, "http://evil.invalid/")
		if len(got) != 1 || got[0] != signInCookie {
			t.Errorf("%s: cookies %v, want only %s", tc.name, got, signInCookie)
		}
	}
}

// browserCookies names the cookies the browser holds for urls.
func browserCookies(t *testing.T, b *browser, urls ...string) []string {
	t.Helper()
	var names []string
	b.do(t, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		res, err := cdp.Call(ctx, tg, network.GetCookies, network.GetCookiesParams{URLs: urls})
		for _, c := range res.Cookies {
			names = append(names, c.Name)
		}
		return err
	}))
	return names
}

// TestSignInPage: the sign-in page wears the app's stylesheet in light and dark and fits
// a 393 px phone; the right token opens the page asked for and leaves a cookie that is not
// the token; a wrong one says so on the page, and a second try right after it is told to
// wait. Screenshots: artifacts/signin-{light,dark,mobile,wrong}.png.
func TestSignInPage(t *testing.T) {
	t.Parallel()
	s := startServerWithToken(t)
	b := newBrowser(t)
	console := listenConsole(t, b)
	b.do(t, chromedp.Navigate(s.URL+"/"))
	if path := eval[string](t, b, `location.pathname + location.search`); path != "/login?next=%2F" {
		t.Fatalf("a page without sign-in went to %s", path)
	}
	background := `getComputedStyle(document.body).backgroundColor`
	card := `getComputedStyle(document.querySelector("form.new-task")).borderRadius`
	if bg, radius := eval[string](t, b, background), eval[string](t, b, card); bg != "rgb(249, 250, 251)" || radius != "12px" {
		t.Errorf("light: background %s, card radius %s: the app's stylesheet is not applied", bg, radius)
	}
	b.screenshot(t, "signin-light.png")
	b.scheme(t, "dark")
	if bg := eval[string](t, b, background); bg != "rgb(17, 24, 39)" {
		t.Errorf("dark: background %s", bg)
	}
	b.screenshot(t, "signin-dark.png")
	b.scheme(t, "")
	b.do(t, chromedp.EmulateViewport(393, 851, chromedp.EmulateScale(2.75), chromedp.EmulateMobile))
	b.waitFor(t, "the 393 px layout", `window.innerWidth === 393`)
	if w := eval[int](t, b, `document.documentElement.scrollWidth`); w > 393 {
		t.Errorf("at 393 px the sign-in page is %d px wide", w)
	}
	b.screenshot(t, "signin-mobile.png")

	signIn := func(tok string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(b.ctx, deadline)
		defer cancel()
		if _, err := chromedp.RunResponse(ctx, chromedp.SendKeys(chromedp.CSS("#token"), tok), chromedp.Submit(chromedp.CSS("form"))); err != nil {
			t.Fatal(err)
		}
	}
	signIn(e2eToken)
	b.waitFor(t, "the task list run by the WASM app", `location.pathname === "/" && !document.getElementById("app-wasm-loader") && !!document.querySelector(".tasks-page")`)
	if got := browserCookies(t, b, s.URL); len(got) != 1 || got[0] != signInCookie {
		t.Fatalf("cookies after sign-in: %v", got)
	}
	b.do(t, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		res, err := cdp.Call(ctx, tg, network.GetCookies, network.GetCookiesParams{URLs: []string{s.URL}})
		if err == nil && strings.Contains(res.Cookies[0].Value, e2eToken) {
			t.Errorf("the cookie %q holds the token", res.Cookies[0].Value)
		}
		return err
	}))

	if complaints := console.matching(cspComplaints...); len(complaints) > 0 {
		t.Errorf("the console reports what the policy blocked:\n%s", strings.Join(complaints, "\n"))
	}

	wrong := newBrowser(t)
	wrong.do(t, chromedp.Navigate(s.URL+"/login"))
	b = wrong
	signIn("not-the-token")
	alert := `(document.querySelector("[role=alert]") || {textContent: ""}).textContent`
	if got := eval[string](t, b, alert); got != "That token is not valid." {
		t.Errorf("after a wrong token the page says %q", got)
	}
	b.screenshot(t, "signin-wrong.png")
	// Another wrong one during the address's wait is refused unchecked. The wait doubles
	// with each failure (1 s, 2 s, 4 s, …), so on a busy machine, where one try may take
	// longer than the first wait, a later try falls within its wait.
	throttled := "Too many wrong tokens from your address: try again in"
	var said []string
	for range 5 {
		signIn("still-not-the-token")
		said = append(said, eval[string](t, b, alert))
		if strings.HasPrefix(said[len(said)-1], throttled) {
			break
		}
	}
	if !strings.HasPrefix(said[len(said)-1], throttled) {
		t.Errorf("wrong tokens in a row: the page said %q, never %q", said, throttled)
	}
	if got := browserCookies(t, b, s.URL); len(got) != 0 {
		t.Errorf("cookies after failed sign-ins: %v", got)
	}
}

// A person signed in can sign out from the task list: the cookie goes, and the pages ask
// for the token again. A server without a token offers no such button.
func TestSignOut(t *testing.T) {
	t.Parallel()
	s := startServerWithToken(t)
	b := newBrowser(t)
	b.do(t, chromedp.Navigate(s.URL+"/?token="+e2eToken))
	b.waitFor(t, "the task list run by the WASM app", `location.pathname === "/" && !document.getElementById("app-wasm-loader") && !!document.querySelector(".tasks-page")`)
	if got := browserCookies(t, b, s.URL); len(got) != 1 {
		t.Fatalf("cookies after sign-in: %v", got)
	}
	signOut := `[...document.querySelectorAll(".bar button")].find(e => e.textContent === "Sign out")`
	b.waitFor(t, "the sign-out button", "!!"+signOut)
	b.screenshots(t, "signed-in", ".bar")
	b.do(t, chromedp.Evaluate[chromedp.Void](signOut+".click()"))
	b.waitThrough(t, "the sign-in page", `location.pathname === "/login" && !!document.querySelector("#token")`)
	if got := browserCookies(t, b, s.URL); len(got) != 0 {
		t.Errorf("cookies after signing out: %v", got)
	}
	b.do(t, chromedp.Navigate(s.URL+"/"))
	if path := eval[string](t, b, `location.pathname`); path != "/login" {
		t.Errorf("after signing out, / went to %s", path)
	}

	open := startServer(t)
	o := newBrowser(t)
	o.do(t, chromedp.Navigate(open.URL+"/"))
	o.waitFor(t, "the task list run by the WASM app", `!document.getElementById("app-wasm-loader") && !!document.querySelector(".tasks-page .new-task button:not([disabled])")`)
	// No sign-out, but the Account page (this browser's notifications, the audit).
	if got := eval[[]string](t, o, `[...document.querySelectorAll(".bar button, .bar a")].map(e => e.textContent).filter(t => ["Sign out", "Account"].includes(t))`); fmt.Sprint(got) != "[Account]" {
		t.Errorf("a server without a token shows %q in the bar, want only Account", got)
	}
}
