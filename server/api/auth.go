package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"html/template"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"conch/shared"

	"github.com/gofiber/contrib/websocket"
	"github.com/gofiber/fiber/v2"
)

// cookieName carries the token for the PWA, which cannot set an Authorization header on
// page loads and WebSocket upgrades.
const cookieName = "conch_token"

const cookieMaxAge = 90 * 24 * time.Hour

// validToken compares in constant time; hashing first makes the time independent of length.
func (s *server) validToken(candidate string) bool {
	want, got := sha256.Sum256([]byte(s.token)), sha256.Sum256([]byte(candidate))
	return subtle.ConstantTimeCompare(want[:], got[:]) == 1
}

// authorized reports whether the request carries the token (header or cookie).
func (s *server) authorized(c *fiber.Ctx) bool {
	if s.token == "" {
		return true
	}
	if bearer, ok := strings.CutPrefix(c.Get(fiber.HeaderAuthorization), "Bearer "); ok && s.validToken(bearer) {
		return true
	}
	return s.validToken(c.Cookies(cookieName))
}

// requireToken guards the API and the WebSocket.
func (s *server) requireToken(c *fiber.Ctx) error {
	if s.authorized(c) {
		return c.Next()
	}
	c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="conch"`)
	return s.fail(c, errUnauthorized)
}

// guardHost refuses non-loopback Host names when no token is set: the server then runs on
// loopback only, and any other name reaching it is a DNS-rebinding page.
func (s *server) guardHost(c *fiber.Ctx) error {
	if s.token != "" || isLoopbackHost(string(c.Request().Host())) {
		return c.Next()
	}
	return s.fail(c, errForeignHost)
}

func isLoopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// sameOrigin reports whether a browser's Origin header names this server. Requests
// without one (scripts, curl) are not cross-site requests.
func sameOrigin(c *fiber.Ctx) bool {
	origin := c.Get(fiber.HeaderOrigin)
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, string(c.Request().Host()))
}

// sameOriginWrites refuses cross-site writes: without a token, a page on another site
// could otherwise post prompts that run shell commands.
func (s *server) sameOriginWrites(c *fiber.Ctx) error {
	if c.Method() == fiber.MethodGet || c.Method() == fiber.MethodHead || sameOrigin(c) {
		return c.Next()
	}
	return s.fail(c, errCrossOrigin)
}

// checkUpgrade admits only same-origin WebSocket upgrades.
func (s *server) checkUpgrade(c *fiber.Ctx) error {
	if !websocket.IsWebSocketUpgrade(c) {
		return s.fail(c, shared.Errorf(shared.CodeInvalid, "websocket upgrade required"))
	}
	if !sameOrigin(c) {
		return s.fail(c, errCrossOrigin)
	}
	return c.Next()
}

// requirePageToken guards the UI catch-all. A ?token= hand-off sets the cookie and
// redirects to the same URL without it; pages without the token go to /login. Paths with
// a file extension are the PWA's static files (scripts, worker, manifest): browsers
// fetch some of them without cookies, and they hold nothing private.
func (s *server) requirePageToken(c *fiber.Ctx) error {
	if s.token == "" || path.Ext(c.Path()) != "" {
		return c.Next()
	}
	if handoff := c.Query("token"); handoff != "" {
		if !s.validToken(handoff) {
			return s.loginPage(c, http.StatusUnauthorized, "That token is not valid.", localPath(string(c.Request().Header.RequestURI()), "token"))
		}
		s.setCookie(c)
		return c.Redirect(localPath(string(c.Request().Header.RequestURI()), "token"), http.StatusSeeOther)
	}
	if s.authorized(c) {
		return c.Next()
	}
	if c.Method() != fiber.MethodGet && c.Method() != fiber.MethodHead {
		return s.fail(c, errUnauthorized)
	}
	return c.Redirect("/login?next="+url.QueryEscape(string(c.Request().Header.RequestURI())), http.StatusSeeOther)
}

func (s *server) setCookie(c *fiber.Ctx) {
	c.Cookie(&fiber.Cookie{Name: cookieName, Value: s.token, Path: "/", HTTPOnly: true,
		SameSite: fiber.CookieSameSiteStrictMode, Secure: c.Protocol() == "https",
		MaxAge: int(cookieMaxAge / time.Second)})
}

// localPath turns a redirect target from the request into a path on this server. It is
// parsed and rebuilt, never passed through: anything naming a scheme or a host, holding
// control characters or backslashes (which browsers drop or read as "/" on the way to
// "//host"), or not starting with "/" becomes "/"; repeated slashes collapse, so the
// result never starts with "//"; the path keeps its escapes, encoded once; the query is
// re-encoded without the keys in drop; a fragment is dropped.
func localPath(target string, drop ...string) string {
	u, err := url.Parse(target)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" ||
		!strings.HasPrefix(u.Path, "/") || strings.ContainsFunc(u.Path, unsafeInPath) {
		return "/"
	}
	out := url.URL{Path: path.Clean(u.Path)}
	if strings.HasSuffix(u.Path, "/") && out.Path != "/" {
		out.Path += "/"
	}
	if out.Path == u.Path {
		out.RawPath = u.RawPath // kept only while it still encodes Path (url.URL checks)
	}
	if q, err := url.ParseQuery(u.RawQuery); err == nil {
		for _, k := range drop {
			q.Del(k)
		}
		out.RawQuery = q.Encode()
	}
	return out.String()
}

func unsafeInPath(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }

func (s *server) handleLoginForm(c *fiber.Ctx) error {
	return s.loginPage(c, http.StatusOK, "", c.Query("next"))
}

func (s *server) handleLogin(c *fiber.Ctx) error {
	next := localPath(c.FormValue("next"))
	if !s.validToken(c.FormValue("token")) {
		return s.loginPage(c, http.StatusUnauthorized, "That token is not valid.", next)
	}
	s.setCookie(c)
	return c.Redirect(next, http.StatusSeeOther)
}

var loginTemplate = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Conch · sign in</title>
<style>body{font:16px system-ui,sans-serif;max-width:24rem;margin:4rem auto;padding:0 1rem}
input,button{font:inherit;padding:.5rem;width:100%;box-sizing:border-box;margin:.25rem 0}.error{color:#b00020}</style>
</head><body><h1>Conch</h1>
{{if .Error}}<p class="error" role="alert">{{.Error}}</p>{{end}}
<form method="post" action="/login">
<label for="token">Access token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
<input type="hidden" name="next" value="{{.Next}}">
<button type="submit">Sign in</button>
</form></body></html>
`))

func (s *server) loginPage(c *fiber.Ctx, status int, problem, next string) error {
	c.Status(status).Type("html", "utf-8")
	c.Set(fiber.HeaderCacheControl, "no-store")
	return loginTemplate.Execute(c, struct{ Error, Next string }{problem, localPath(next)})
}
