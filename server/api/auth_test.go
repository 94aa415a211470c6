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
	if !strings.Contains(body, `<input type="hidden" name="next" value="/sessions/x&#34;&gt;">`) {
		t.Errorf("login form does not carry next escaped:\n%s", body)
	}

	resp, _ := e.do("POST", "/login", "token="+url.QueryEscape(token)+"&next=%2Fsessions%2Fx", "Content-Type", form)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/sessions/x" {
		t.Errorf("login: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	checkCookie(t, resp)

	for _, next := range []string{"//evil.example/x", "https://evil.example", "/\\evil.example"} {
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
