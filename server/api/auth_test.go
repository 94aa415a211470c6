package api

import (
	"context"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"conch/server/task"
	"conch/shared"
)

const token = "s3cret-token"

func withToken(c *Config) { c.Token = token }

func TestAPIRequiresTheToken(t *testing.T) {
	e := newEnv(t, withToken)
	for name, header := range map[string][]string{
		"missing":      nil,
		"wrong bearer": {"Authorization", "Bearer nope"},
		"not bearer":   {"Authorization", "Basic " + token},
		"wrong cookie": {"Cookie", cookieName + "=nope"},
		"token cookie": {"Cookie", cookieName + "=" + token}, // the cookie holds a session, never the token
		"prefix only":  {"Authorization", "Bearer " + token[:5]},
	} {
		resp, body := e.do("GET", "/api/v1/tasks", "", header...)
		if resp.StatusCode != http.StatusUnauthorized || body != `{"error":"missing or wrong token","code":"unauthorized"}` {
			t.Errorf("%s: %d %s", name, resp.StatusCode, body)
		}
		if resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: no WWW-Authenticate", name)
		}
		e.clock.Advance(maxDelay) // past the throttle's wait
	}
	// A refused write stores nothing.
	e.expect(http.StatusUnauthorized, "POST", "/api/v1/tasks", `{"title":"x"}`, nil)
	for _, scheme := range []string{"Bearer ", "bearer ", "BEARER ", "bEaReR  "} {
		e.expect(http.StatusOK, "GET", "/api/v1/tasks", "", nil, "Authorization", scheme+token)
	}
	if got := e.expect(http.StatusOK, "GET", "/api/v1/tasks", "", nil, "Cookie", e.signIn()); got != `{"tasks":[]}` {
		t.Errorf("tasks %s", got)
	}
	// Open: health and static assets. Any Host is fine once a token guards the API.
	e.expect(http.StatusOK, "GET", "/healthz", "", nil, "Host", "conch.example")
	e.expect(http.StatusOK, "GET", "/web/icon.svg", "", nil)
	e.expect(http.StatusOK, "GET", "/app.js", "", nil)
}

// signIn signs in through the form and returns the cookie as a Cookie header value.
func (e *env) signIn(header ...string) string {
	e.t.Helper()
	resp, _ := e.do("POST", "/login", "token="+url.QueryEscape(token), append([]string{"Content-Type", form}, header...)...)
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		e.t.Fatalf("sign-in: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	return cookieName + "=" + resp.Cookies()[0].Value
}

const form = "application/x-www-form-urlencoded"

func TestPagesRedirectToLoginAndAcceptHandOff(t *testing.T) {
	e := newEnv(t, withToken)

	resp, _ := e.do("GET", "/sessions/abc?x=1", "")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login?next="+url.QueryEscape("/sessions/abc?x=1") {
		t.Errorf("page without token: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	e.expect(http.StatusUnauthorized, "POST", "/sessions/abc", "", nil)

	// ?token= hand-off: the cookie is set and the token leaves the URL.
	resp, _ = e.do("GET", "/sessions/abc?x=1&token="+token, "")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/sessions/abc?x=1" {
		t.Errorf("hand-off: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	checkCookie(t, resp)
	resp, body := e.do("GET", "/?token=bad", "")
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "That token is not valid.") || resp.Header.Get("Set-Cookie") != "" {
		t.Errorf("bad hand-off: %d %q", resp.StatusCode, body)
	}
	e.clock.Advance(maxDelay)

	if body := e.expect(http.StatusOK, "GET", "/tasks/abc", "", nil, "Cookie", e.signIn()); body != "<!doctype html><title>Conch</title><main>page /tasks/abc</main>" {
		t.Errorf("page with cookie: %s", body)
	}
	if body := e.expect(http.StatusOK, "GET", "/", "", nil, "Authorization", "Bearer "+token); !strings.Contains(body, "page /") {
		t.Errorf("page with bearer: %s", body)
	}
}

func TestLoginForm(t *testing.T) {
	e := newEnv(t, withToken)

	body := e.expect(http.StatusOK, "GET", "/login?next=/sessions/x%22%3E", "", nil)
	if !strings.Contains(body, `<input type="hidden" name="next" value="/sessions/x%22%3E">`) {
		t.Errorf("login form does not carry next escaped:\n%s", body)
	}

	resp, _ := e.do("POST", "/login", "token="+url.QueryEscape(token)+"&next=%2Fsessions%2Fx", "Content-Type", form)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/sessions/x" {
		t.Errorf("login: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	checkCookie(t, resp)

	for _, next := range []string{"//evil.example/x", "https://evil.example", "/\\evil.example", "/\t/evil.example", "/\r\nSet-Cookie: x=1"} {
		resp, _ := e.do("POST", "/login", "token="+token+"&next="+url.QueryEscape(next), "Content-Type", form)
		if resp.Header.Get("Location") != "/" {
			t.Errorf("next %q redirected to %q", next, resp.Header.Get("Location"))
		}
	}

	resp, body = e.do("POST", "/login", "token=wrong&next=%2F", "Content-Type", form)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, `<p class="alert" role="alert">That token is not valid.</p>`) || resp.Header.Get("Set-Cookie") != "" {
		t.Errorf("wrong token: %d %s", resp.StatusCode, body)
	}
}

// TestSessionCookie: the cookie names a sign-in and carries a MAC of it, not the token; it
// works until it expires, only for the token that made it; a forged or altered one is
// refused.
func TestSessionCookie(t *testing.T) {
	e := newEnv(t, withToken)
	cookie := e.signIn()
	value := strings.TrimPrefix(cookie, cookieName+"=")
	if strings.Contains(value, token) {
		t.Fatalf("the cookie %q holds the token", value)
	}
	id, mac, _ := strings.Cut(value, ".")
	other := newEnv(t, func(c *Config) { c.Token = token + "-other"; c.Store = e.store })
	forged := (&server{sessionKey: sessionKeyOf(token)}).cookieValue("made-up-sign-in")
	for name, tc := range map[string]struct {
		e      *env
		cookie string
		want   int
	}{
		"signed in":          {e, cookie, http.StatusOK},
		"other token":        {other, cookie, http.StatusUnauthorized},
		"no MAC":             {e, cookieName + "=" + id, http.StatusUnauthorized},
		"MAC altered":        {e, cookieName + "=" + id + "." + strings.ToUpper(mac), http.StatusUnauthorized},
		"id altered":         {e, cookieName + "=" + strings.ToLower(id) + "." + mac, http.StatusUnauthorized},
		"no such sign-in":    {e, cookieName + "=" + forged, http.StatusUnauthorized},
		"the token, old way": {e, "conch_token=" + token, http.StatusUnauthorized},
	} {
		if resp, body := tc.e.do("GET", "/api/v1/tasks", "", "Cookie", tc.cookie); resp.StatusCode != tc.want {
			t.Errorf("%s: %d %s", name, resp.StatusCode, body)
		}
	}
	e.clock.Advance(sessionLifetime - time.Second)
	e.expect(http.StatusOK, "GET", "/api/v1/tasks", "", nil, "Cookie", cookie)
	e.clock.Advance(time.Second)
	e.expect(http.StatusUnauthorized, "GET", "/api/v1/tasks", "", nil, "Cookie", cookie)
	if resp, _ := e.do("GET", "/sessions/x", "", "Cookie", cookie); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("page with an expired cookie: %d", resp.StatusCode)
	}
}

// TestLogoutEndsTheSignIn: signing out ends that sign-in on the server, so a copy of its
// cookie replayed afterwards is refused, by this server and by another server of the same
// database; other sign-ins go on.
func TestLogoutEndsTheSignIn(t *testing.T) {
	e := newEnv(t, withToken)
	peer := newEnv(t, withToken, func(c *Config) { c.Store = e.store })
	leaving, staying := e.signIn(), e.signIn()
	peer.expect(http.StatusOK, "GET", "/api/v1/tasks", "", nil, "Cookie", leaving)
	if resp, _ := e.do("POST", "/logout", "", "Cookie", leaving, "Origin", "http://127.0.0.1:8080"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout: %d", resp.StatusCode)
	}
	for name, s := range map[string]*env{"this server": e, "another server": peer} {
		if resp, body := s.do("GET", "/api/v1/tasks", "", "Cookie", leaving); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: the signed-out cookie replayed: %d %s", name, resp.StatusCode, body)
		}
		if resp, _ := s.do("GET", "/sessions/x", "", "Cookie", leaving); resp.StatusCode != http.StatusSeeOther {
			t.Errorf("%s: a page with the signed-out cookie: %d", name, resp.StatusCode)
		}
		s.expect(http.StatusOK, "GET", "/api/v1/tasks", "", nil, "Cookie", staying)
	}
}

// A sign-in form posted from another site is refused (login CSRF: it would sign the
// browser in to the other site's account); the page's own form sends its Origin.
func TestLoginFromAnotherSiteRefused(t *testing.T) {
	e := newEnv(t, withToken)
	if _, err := e.store.CreateAccount(context.Background(), "mallory", shared.RoleMember, task.HashPassword("correct horse battery")); err != nil {
		t.Fatal(err)
	}
	form := []string{"Content-Type", form}
	body := "login=mallory&password=correct+horse+battery"
	if resp, raw := e.do("POST", "/login", body, append(form, "Origin", "http://evil.example")...); resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
		t.Errorf("a sign-in posted from another site: %d %s %v", resp.StatusCode, raw, resp.Cookies())
	}
	if resp, _ := e.do("POST", "/login", body, append(form, "Origin", "null")...); resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
		t.Errorf("a sign-in posted from an opaque origin: %d %v", resp.StatusCode, resp.Cookies())
	}
	if resp, _ := e.do("GET", "/login", ""); resp.Header.Get("Referrer-Policy") != "same-origin" {
		t.Errorf("the sign-in page's Referrer-Policy %q: its form would post Origin: null", resp.Header.Get("Referrer-Policy"))
	}
	if resp, _ := e.do("POST", "/login", body, append(form, "Origin", "http://127.0.0.1:8080")...); resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Errorf("a sign-in from the page: %d %v", resp.StatusCode, resp.Cookies())
	}
}

func TestLogoutClearsTheCookie(t *testing.T) {
	e := newEnv(t, withToken)
	cookie := e.signIn()
	if resp, body := e.do("POST", "/logout", "", "Cookie", cookie, "Origin", "http://evil.example"); resp.StatusCode != http.StatusForbidden || resp.Header.Get("Set-Cookie") != "" {
		t.Errorf("cross-site logout: %d %s %q", resp.StatusCode, body, resp.Header.Get("Set-Cookie"))
	}
	resp, _ := e.do("POST", "/logout", "", "Cookie", cookie, "Origin", "http://127.0.0.1:8080")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login" {
		t.Fatalf("logout: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if got := resp.Header.Get("Clear-Site-Data"); got != `"cache", "storage"` {
		t.Errorf("logout leaves the kept pages and outputs: Clear-Site-Data %q", got)
	}
	cleared := resp.Cookies()
	if len(cleared) != 1 || cleared[0].Name != cookieName || cleared[0].Value != "" || !cleared[0].Expires.Before(e.clock.Now()) ||
		cleared[0].Path != "/" || !cleared[0].HttpOnly {
		t.Errorf("logout cookie %+v", cleared)
	}
}

// TestWrongTokensAreThrottled: each wrong token from one address doubles the time before
// its next wrong token counts (1, 2, 4 s ... on the fake clock); meanwhile a wrong token is
// refused with 429 and Retry-After, but the right token always passes, by bearer and by
// the sign-in form (scripts behind one NAT with an attacker); a right token forgives
// nothing (it would reset the attacker's wait); the log names the address, never the token.
func TestWrongTokensAreThrottled(t *testing.T) {
	e := newEnv(t, withToken, func(c *Config) { c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("0.0.0.0/32")} })
	from := func(client string) []string { return []string{"X-Forwarded-For", client} }
	try := func(client, guess string, want int) *http.Response {
		t.Helper()
		resp, body := e.do("GET", "/api/v1/tasks", "", append(from(client), "Authorization", "Bearer "+guess)...)
		if resp.StatusCode != want {
			t.Fatalf("%s with %q: %d %s, want %d", client, guess, resp.StatusCode, body, want)
		}
		return resp
	}
	const guess = "guess-Zq8"
	for _, wait := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second} {
		try("192.0.2.1", guess, http.StatusUnauthorized)
		resp := try("192.0.2.1", guess, http.StatusTooManyRequests)
		if got := resp.Header.Get("Retry-After"); got != strconv.Itoa(int(wait/time.Second)) {
			t.Errorf("Retry-After %q, want %v", got, wait)
		}
		try("192.0.2.1", token, http.StatusOK) // the same address, with the right token
		try("192.0.2.2", guess, http.StatusUnauthorized)
		e.clock.Advance(wait - time.Millisecond)
		try("192.0.2.1", guess, http.StatusTooManyRequests)
		e.clock.Advance(time.Millisecond)
	}
	e.do("POST", "/login", "token=x", append(from("192.0.2.1"), "Content-Type", form)...)
	_, body := e.do("POST", "/login", "token=y", append(from("192.0.2.1"), "Content-Type", form)...)
	if !strings.Contains(body, "Too many wrong tokens from your address: try again in 16 s.") {
		t.Errorf("the sign-in page does not say why:\n%s", body)
	}
	if resp, _ := e.do("POST", "/login", "token="+token, append(from("192.0.2.1"), "Content-Type", form)...); resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Errorf("the right token at the sign-in form while the address waits: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	e.clock.Advance(16 * time.Second)
	try("192.0.2.1", guess, http.StatusUnauthorized) // the 6th in a row: right tokens between forgave nothing
	if got := try("192.0.2.1", guess, http.StatusTooManyRequests).Header.Get("Retry-After"); got != "32" {
		t.Errorf("Retry-After %q after the right token, want 32", got)
	}

	// IPv6 addresses count by their /64.
	try("2001:db8::1", guess, http.StatusUnauthorized)
	try("2001:db8::2", guess, http.StatusTooManyRequests)
	try("2001:db8:0:1::1", guess, http.StatusUnauthorized)

	logs := e.logs.String()
	if strings.Contains(logs, guess) || strings.Contains(logs, token) || strings.Contains(logs, "token=x") {
		t.Errorf("the log holds a token:\n%s", logs)
	}
	if !strings.Contains(logs, `msg="wrong token" client=192.0.2.1 via=bearer failures=1 wait=1s`) ||
		!strings.Contains(logs, `client=192.0.2.1 via=form failures=5 wait=16s`) {
		t.Errorf("the log does not record the failures:\n%s", logs)
	}
}

// TestForwardedHeadersOnlyFromTrustedProxies: X-Forwarded-For, -Proto and -Host change
// nothing from a peer that is not a trusted proxy: not the address the throttle counts,
// not the cookie's Secure flag, not the same-origin check.
func TestForwardedHeadersOnlyFromTrustedProxies(t *testing.T) {
	for _, trusted := range []bool{false, true} {
		e := newEnv(t, withToken, func(c *Config) {
			if trusted {
				c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("0.0.0.0/32")}
			}
		})
		resp, _ := e.do("POST", "/login", "token="+token, "Content-Type", form, "X-Forwarded-Proto", "https")
		if secure := resp.Cookies()[0].Secure; secure != trusted {
			t.Errorf("trusted %v: Secure %v", trusted, secure)
		}
		e.do("GET", "/api/v1/tasks", "", "Authorization", "Bearer nope", "X-Forwarded-For", "192.0.2.1")
		resp, _ = e.do("GET", "/api/v1/tasks", "", "Authorization", "Bearer nope", "X-Forwarded-For", "192.0.2.2")
		if want := map[bool]int{false: http.StatusTooManyRequests, true: http.StatusUnauthorized}[trusted]; resp.StatusCode != want {
			t.Errorf("trusted %v: another forwarded address got %d, want %d", trusted, resp.StatusCode, want)
		}
		e.clock.Advance(maxDelay)
		resp, _ = e.do("POST", "/api/v1/tasks", `{"title":"x"}`, "Cookie", e.signIn(), "Origin", "https://conch.example", "X-Forwarded-Host", "conch.example")
		if want := map[bool]int{false: http.StatusForbidden, true: http.StatusCreated}[trusted]; resp.StatusCode != want {
			t.Errorf("trusted %v: forwarded host's origin got %d, want %d", trusted, resp.StatusCode, want)
		}
	}
}

// TestRedirectsStayOnThisSite: a sign-in's next and the ?token= hand-off are parsed and
// rebuilt into a same-origin path, whatever they were given.
func TestRedirectsStayOnThisSite(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/sessions/x?a=1", "/sessions/x?a=1"},
		{"/sessions/a%20b", "/sessions/a%20b"}, // escaped once, not twice
		{"/sessions/a%2Fb", "/sessions/a%2Fb"}, // an escaped slash stays escaped
		{"/sessions/%25zz", "/sessions/%25zz"}, // an escaped percent stays escaped
		{"/tasks/?b=2&a=1", "/tasks/?a=1&b=2"}, // the query is rebuilt
		{"/x?token=T&a=1", "/x?a=1"},           // dropped key
		{"/x?token=T", "/x"},
		{"/x#frag", "/x"},
		{"/a/../b", "/b"},
		{"//evil.example/x", "/"},
		{"///evil.example/x", "/evil.example/x"}, // a path, collapsed: never "//" again
		{"/%2F/evil.example", "/evil.example"},
		{"/%2f%2fevil.example", "/evil.example"},
		{"https://evil.example", "/"},
		{"javascript:alert(1)", "/"},
		{"/\\evil.example", "/"},
		{"/%5Cevil.example", "/"},
		{"/%09/evil.example/x", "/"}, // tab, dropped by browsers: "//evil.example/x"
		{"/\t/evil.example/x", "/"},
		{"/%0D%0ASet-Cookie:%20x=1", "/"}, // header splitting
		{"/\r\nSet-Cookie: x=1", "/"},
		{"/%250D%250ASet-Cookie:x=1", "/%250D%250ASet-Cookie:x=1"}, // doubly encoded: stays text
		{"/ok?q=%0D%0Ax", "/ok?q=%0D%0Ax"},                         // the query is encoded, never raw
		{"sessions/x", "/"},
		{"", "/"},
		{"http:/evil.example", "/"},
		{"/x\x00", "/"},
	} {
		if got := localPath(tc.in, "token"); got != tc.want {
			t.Errorf("localPath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestHandOffRedirectsStayOnThisSite sends hostile request targets with a valid ?token=.
func TestHandOffRedirectsStayOnThisSite(t *testing.T) {
	e := newEnv(t, withToken)
	for target, want := range map[string]string{
		"//evil.example/x?token=" + token:                "/",
		"/sessions/a%20b?token=" + token:                 "/sessions/a%20b",
		"/sessions/a%2Fb?x=%2F&token=" + token:           "/sessions/a%2Fb?x=%2F",
		"/%09/evil.example/x?token=" + token:             "/",
		"/x?next=%0D%0ASet-Cookie:%20y=1&token=" + token: "/x?next=%0D%0ASet-Cookie%3A+y%3D1",
	} {
		resp, _ := e.do("GET", target, "")
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != want {
			t.Errorf("%s: %d to %q, want %q", target, resp.StatusCode, resp.Header.Get("Location"), want)
		}
	}
}

func checkCookie(t *testing.T, resp *http.Response) {
	t.Helper()
	cookies := resp.Cookies()
	if len(cookies) != 1 {
		t.Fatalf("cookies %v", cookies)
	}
	c := cookies[0]
	if c.Name != cookieName || c.Value == "" || strings.Contains(c.Value, token) || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode ||
		c.Path != "/" || c.MaxAge != int(sessionLifetime/time.Second) || c.Secure {
		t.Errorf("cookie %+v", c)
	}
}

func TestWithoutTokenOnlyLoopbackHostsAndSameOriginWrites(t *testing.T) {
	e := newEnv(t)
	for _, host := range []string{"127.0.0.1:8080", "localhost:8080", "[::1]:9", "app.localhost", "127.0.0.2"} {
		e.expect(http.StatusOK, "GET", "/api/v1/tasks", "", nil, "Host", host)
	}
	for _, host := range []string{"evil.example", "evil.example:8080", "10.0.0.1:8080", "127.0.0.1.evil.example"} {
		if body := e.expect(http.StatusForbidden, "GET", "/api/v1/tasks", "", nil, "Host", host); body != `{"error":"host not allowed without a token","code":"forbidden"}` {
			t.Errorf("host %s: %s", host, body)
		}
	}

	e.expect(http.StatusCreated, "POST", "/api/v1/tasks", `{"title":"same origin"}`, nil, "Origin", "http://127.0.0.1:8080")
	e.expect(http.StatusCreated, "POST", "/api/v1/tasks", `{"title":"script"}`, nil)
	for _, origin := range []string{"http://evil.example", "http://127.0.0.1:9999", "null"} {
		if body := e.expect(http.StatusForbidden, "POST", "/api/v1/tasks", `{"title":"csrf"}`, nil, "Origin", origin); body != `{"error":"cross-origin request refused","code":"forbidden"}` {
			t.Errorf("origin %s: %s", origin, body)
		}
	}
	// Reads stay open to any origin header (the browser's CORS rules keep the answer from other sites).
	if got := e.expect(http.StatusOK, "GET", "/api/v1/tasks", "", nil, "Origin", "http://evil.example"); strings.Count(got, `"title"`) != 2 {
		t.Errorf("tasks %s", got)
	}
}
