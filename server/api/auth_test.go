package api

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
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
		"prefix only":  {"Authorization", "Bearer " + token[:5]},
	} {
		resp, body := e.do("GET", "/api/v1/tasks", "", header...)
		if resp.StatusCode != http.StatusUnauthorized || body != `{"error":"missing or wrong token","code":"unauthorized"}` {
			t.Errorf("%s: %d %s", name, resp.StatusCode, body)
		}
		if resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: no WWW-Authenticate", name)
		}
	}
	// A refused write stores nothing.
	e.expect(http.StatusUnauthorized, "POST", "/api/v1/tasks", `{"title":"x"}`, nil)
	e.expect(http.StatusOK, "GET", "/api/v1/tasks", "", nil, "Authorization", "Bearer "+token)
	if got := e.expect(http.StatusOK, "GET", "/api/v1/tasks", "", nil, "Cookie", cookieName+"="+token); got != `{"tasks":[]}` {
		t.Errorf("tasks %s", got)
	}
	// Open: health and static assets. Any Host is fine once a token guards the API.
	e.expect(http.StatusOK, "GET", "/healthz", "", nil, "Host", "conch.example")
	e.expect(http.StatusOK, "GET", "/web/icon.svg", "", nil)
	e.expect(http.StatusOK, "GET", "/app.js", "", nil)
}

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

	if body := e.expect(http.StatusOK, "GET", "/sessions/abc", "", nil, "Cookie", cookieName+"="+token); body != "<!doctype html><title>Conch</title><main>page /sessions/abc</main>" {
		t.Errorf("page with cookie: %s", body)
	}
	if body := e.expect(http.StatusOK, "GET", "/", "", nil, "Authorization", "Bearer "+token); !strings.Contains(body, "page /") {
		t.Errorf("page with bearer: %s", body)
	}
}

func TestLoginForm(t *testing.T) {
	e := newEnv(t, withToken)
	form := "application/x-www-form-urlencoded"

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
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "That token is not valid.") || resp.Header.Get("Set-Cookie") != "" {
		t.Errorf("wrong token: %d %s", resp.StatusCode, body)
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
	if c.Name != cookieName || c.Value != token || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.MaxAge <= 0 {
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
