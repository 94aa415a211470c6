package api

import (
	"net/http"
	"strings"
	"testing"
)

// TestSecurityHeadersOnEveryAnswer: pages, the sign-in page, API answers and refusals,
// files, health, and requests Fiber refuses before any route runs all carry the CSP,
// frame refusal, nosniff and no-referrer.
func TestSecurityHeadersOnEveryAnswer(t *testing.T) {
	open, guarded := newEnv(t), newEnv(t, withToken)
	for _, tc := range []struct {
		name                 string
		e                    *env
		method, target, body string
		status               int
		header               []string
	}{
		{"page", open, "GET", "/tasks", "", http.StatusOK, nil},
		{"no session", open, "GET", "/sessions/x", "", http.StatusNotFound, nil},
		{"api", open, "GET", "/api/v1/tasks", "", http.StatusOK, nil},
		{"created", open, "POST", "/api/v1/tasks", `{"title":"t"}`, http.StatusCreated, nil},
		{"bad json", open, "POST", "/api/v1/tasks", `{`, http.StatusBadRequest, nil},
		{"no route", open, "GET", "/api/v1/nope", "", http.StatusNotFound, nil},
		{"foreign host", open, "GET", "/", "", http.StatusForbidden, []string{"Host", "evil.example"}},
		{"file", open, "GET", "/web/icon.svg", "", http.StatusOK, nil},
		{"no file", open, "GET", "/web/nope.css", "", http.StatusNotFound, nil},
		{"health", open, "GET", "/healthz", "", http.StatusOK, nil},
		{"sign-in page", guarded, "GET", "/login", "", http.StatusOK, nil},
		{"sign-in redirect", guarded, "GET", "/", "", http.StatusSeeOther, nil},
		{"unauthorized", guarded, "GET", "/api/v1/tasks", "", http.StatusUnauthorized, nil},
	} {
		resp, body := tc.e.do(tc.method, tc.target, tc.body, tc.header...)
		if resp.StatusCode != tc.status {
			t.Errorf("%s: %d %.200s, want %d", tc.name, resp.StatusCode, body, tc.status)
		}
		checkSecurityHeaders(t, tc.name, resp.Header)
	}

	// fasthttp refuses an oversized body before any route runs (a real listener: Fiber's
	// in-memory transport reports it as a transport error).
	small := newEnv(t, func(c *Config) { c.BodyLimit = 4096 })
	resp, err := http.Post("http://"+small.listen()+"/api/v1/tasks", "application/json", strings.NewReader(strings.Repeat("x", 5000)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("too large: %d", resp.StatusCode)
	}
	checkSecurityHeaders(t, "too large", resp.Header)
}

func checkSecurityHeaders(t *testing.T, name string, h http.Header) {
	t.Helper()
	for header, want := range map[string]string{
		"Content-Security-Policy": contentSecurityPolicy,
		"X-Frame-Options":         "DENY",
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "no-referrer",
	} {
		got := h.Values(header)
		if header == "Referrer-Policy" && len(got) == 1 && got[0] == "same-origin" {
			continue // the pages whose forms post their Origin (sameOriginForm): no other site gets a URL either
		}
		if len(got) != 1 || got[0] != want {
			t.Errorf("%s: %s %q, want %q", name, header, got, want)
		}
	}
}
