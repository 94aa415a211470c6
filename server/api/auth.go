package api

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"html/template"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"conch/server/hub"
	"conch/server/store"
	"conch/server/task"
	"conch/shared"

	"github.com/gofiber/contrib/websocket"
	"github.com/gofiber/fiber/v2"
)

// cookieName is the sign-in cookie of the PWA, which cannot set an Authorization header on
// page loads and WebSocket upgrades. It names a sign-in (cookieValue), never the token.
const cookieName = "conch_session"

// sessionLifetime is how long a sign-in lasts.
const sessionLifetime = 30 * 24 * time.Hour

// ssoSignInLifetime is how long a sign-in through the identity provider lasts: the
// groups are read again at its end, so that a person the provider drops or demotes loses
// their role within a day even without signing in.
const ssoSignInLifetime = 24 * time.Hour

// validToken compares in constant time; hashing first makes the time independent of length.
func (s *server) validToken(candidate string) bool {
	want, got := sha256.Sum256([]byte(s.token)), sha256.Sum256([]byte(candidate))
	return subtle.ConstantTimeCompare(want[:], got[:]) == 1
}

// A cookie is "<sign-in id>.<MAC of the id>". The sign-in is a row of the store, which
// every server of the database reads, so signing out ends it everywhere and for good; the
// MAC is keyed by a key derived from the token, so a new token ends every sign-in. The
// cookie tells nothing of the token.
func (s *server) cookieValue(signIn string) string {
	return signIn + "." + s.sessionMAC(signIn)
}

func (s *server) sessionMAC(signIn string) string {
	mac := hmac.New(sha256.New, s.sessionKey)
	mac.Write([]byte(signIn))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// signInOf is the sign-in a cookie value of this token names.
func (s *server) signInOf(v string) (string, bool) {
	id, mac, ok := strings.Cut(v, ".")
	return id, ok && id != "" && hmac.Equal([]byte(mac), []byte(s.sessionMAC(id)))
}

// pass is what let a request in, which its WebSocket keeps: what revoking ends it
// (hub.Who's keys, task.RevokeKey; a guest's task) and when its sign-in expires (zero for a
// token, which lasts until it is revoked).
type pass struct {
	who   hub.Who
	until time.Time
}

// passKey holds the request's pass in Fiber's locals (requireToken).
const passKey = "conch.pass"

// signedIn is the account whose sign-in the request's cookie names, when it has neither
// expired nor been signed out, and its pass.
func (s *server) signedIn(ctx context.Context, cookie string) (shared.Account, pass, bool, error) {
	id, ok := s.signInOf(cookie)
	if !ok {
		return shared.Account{}, pass{}, false, nil
	}
	who, ok, err := s.store.SignedIn(ctx, id, s.now())
	p := pass{who: hub.Who{Keys: []string{task.RevokeKey("sign-in", id)}}, until: who.ExpiresAt}
	switch {
	case ok && who.LinkID != "":
		acc, ok, err := s.guest(ctx, who.LinkID)
		p.who.Keys, p.who.Task = append(p.who.Keys, task.RevokeKey("link", who.LinkID)), acc.TaskID
		return acc, p, ok, err
	case !ok || err != nil || who.AccountID == "":
		return tokenAccount, p, ok, err
	}
	acc, err := s.store.Account(ctx, who.AccountID)
	if shared.ErrorCode(err) == shared.CodeNotFound { // deleted since
		return shared.Account{}, pass{}, false, nil
	}
	p.who.Keys = append(p.who.Keys, task.RevokeKey("account", acc.ID))
	return acc, p, err == nil, err
}

// sessionKeyOf derives the key of cookie MACs from the token.
func sessionKeyOf(token string) []byte {
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write([]byte("conch sign-in cookie v2"))
	return mac.Sum(nil)
}

// bearerToken reads an Authorization header of the Bearer scheme, in any letter case.
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	return strings.TrimSpace(token), true
}

// authenticate is the account of a request: a valid sign-in cookie's, the token's (as a
// bearer token) or a personal access token's. On a server without a token everyone is
// the local admin. A wrong bearer token counts as a guess (checkToken).
func (s *server) authenticate(c *fiber.Ctx) (shared.Account, pass, error) {
	if s.token == "" {
		return localAccount, pass{}, nil
	}
	acc, p, guess, err := s.letIn(c.UserContext(), credentialsOf(c))
	if guess != "" {
		return tokenAccount, pass{}, s.checkToken(c, guess, "bearer")
	}
	return acc, p, err
}

// credentials are what a request shows to be let in: its sign-in cookie and its bearer
// token. A WebSocket keeps them to be let in again once it is registered (handleWS).
type credentials struct {
	cookie, authorization string
}

// credentialsKey holds a WebSocket upgrade's credentials in Fiber's locals (checkUpgrade).
const credentialsKey = "conch.credentials"

func credentialsOf(c *fiber.Ctx) credentials {
	return credentials{cookie: strings.Clone(c.Cookies(cookieName)), authorization: strings.Clone(c.Get(fiber.HeaderAuthorization))}
}

// letIn is the account and pass of credentials on a server with a token. A bearer token
// that is no personal access token comes back as guess, for the caller to compare with the
// server's token (checkToken) and to count if it is wrong.
func (s *server) letIn(ctx context.Context, cr credentials) (acc shared.Account, p pass, guess string, err error) {
	if acc, p, in, err := s.signedIn(ctx, cr.cookie); in || err != nil {
		return acc, p, "", err
	}
	bearer, ok := bearerToken(cr.authorization)
	if !ok {
		return shared.Account{}, pass{}, "", errUnauthorized
	}
	if strings.HasPrefix(bearer, task.AccessTokenPrefix) {
		acc, id, err := s.store.AccountByToken(ctx, task.HashSecret(bearer))
		if !store.IsUnknownToken(err) {
			return acc, pass{who: hub.Who{Keys: []string{task.RevokeKey("token", id), task.RevokeKey("account", acc.ID)}}}, "", err
		}
	}
	return tokenAccount, pass{}, bearer, nil
}

// stillLetIn checks a WebSocket's credentials again once its client is registered in the
// hub: a revocation published between the upgrade's check and the registration reached no
// client, and the store now says it. nil on a server without a token.
func (s *server) stillLetIn(ctx context.Context, cr credentials) error {
	if s.token == "" {
		return nil
	}
	_, _, guess, err := s.letIn(ctx, cr)
	switch {
	case shared.ErrorCode(err) == shared.CodeUnauthorized, guess != "" && !s.validToken(guess):
		return hub.ErrRevoked
	}
	return err
}

// checkToken is where every token guess goes (bearer, sign-in form, ?token= link). The
// right token always passes, so one guesser cannot lock out the scripts behind its NAT,
// and forgives nothing, so those scripts cannot reset the guesser's wait. A wrong token
// adds to its address's wait and is logged, without the token; while the address waits,
// it is refused with 429 and counts for nothing. The throttle slows and records guessing;
// what makes guessing hopeless is the token's size (16 bytes or more on an open address).
func (s *server) checkToken(c *fiber.Ctx, candidate, via string) error {
	if s.validToken(candidate) {
		return nil
	}
	return s.wrongToken(c, via)
}

// wrongToken counts a wrong token of any kind against its address and answers it: 401,
// or 429 while the address waits.
func (s *server) wrongToken(c *fiber.Ctx, via string) error {
	addr := s.clientAddr(c)
	if wait := s.throttle.wait(addr); wait > 0 {
		return s.tooManyGuesses(c, wait)
	}
	failures, wait := s.throttle.failed(addr)
	s.log.Warn("wrong token", "client", addr.String(), "via", via, "failures", failures, "wait", wait)
	return errUnauthorized
}

func (s *server) tooManyGuesses(c *fiber.Ctx, wait time.Duration) error {
	secs := int((wait + time.Second - 1) / time.Second)
	c.Set(fiber.HeaderRetryAfter, strconv.Itoa(secs))
	return shared.Errorf(shared.CodeTooManyRequests, "Too many wrong tokens from your address: try again in %d s.", secs)
}

// clientAddr is the address a request comes from: its peer, or, when the peer is a
// trusted proxy, the nearest address of X-Forwarded-For that is not a trusted proxy.
func (s *server) clientAddr(c *fiber.Ctx) netip.Addr {
	addr, _ := netip.AddrFromSlice(c.Context().RemoteIP())
	addr = addr.Unmap()
	if !s.trustedProxy(addr) {
		return addr
	}
	hops := strings.Split(c.Get(fiber.HeaderXForwardedFor), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return addr
		}
		if addr = hop.Unmap(); !s.trustedProxy(addr) {
			return addr
		}
	}
	return addr
}

func (s *server) trustedProxy(addr netip.Addr) bool {
	for _, p := range s.proxies {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// requireToken guards the API and the WebSocket, and keeps the request's account for the
// role checks (authz.go).
func (s *server) requireToken(c *fiber.Ctx) error {
	acc, p, err := s.authenticate(c)
	if err == nil {
		c.Locals(accountKey, acc)
		c.Locals(passKey, p)
		c.SetUserContext(withAccount(c.UserContext(), acc))
		return c.Next()
	}
	if shared.ErrorCode(err) == shared.CodeUnauthorized {
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="conch"`)
	}
	return s.fail(c, err)
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
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, c.Hostname()) // X-Forwarded-Host only from a trusted proxy
}

// sameOriginWrites refuses cross-site writes: without a token, a page on another site
// could otherwise post prompts that run shell commands; and, without a token, writes
// from the agents' own processes (agentPeer).
func (s *server) sameOriginWrites(c *fiber.Ctx) error {
	switch {
	case c.Method() == fiber.MethodGet || c.Method() == fiber.MethodHead:
		return c.Next()
	case !sameOrigin(c):
		return s.fail(c, errCrossOrigin)
	case s.agentPeer(c):
		return s.fail(c, errFromAgent)
	}
	c.Locals(credentialsKey, credentialsOf(c))
	return c.Next()
}

// checkUpgrade admits only same-origin WebSocket upgrades, and none from an agent.
func (s *server) checkUpgrade(c *fiber.Ctx) error {
	switch {
	case !websocket.IsWebSocketUpgrade(c):
		return s.fail(c, shared.Errorf(shared.CodeInvalid, "websocket upgrade required"))
	case !sameOrigin(c):
		return s.fail(c, errCrossOrigin)
	case s.agentPeer(c):
		return s.fail(c, errFromAgent)
	}
	c.Locals(credentialsKey, credentialsOf(c))
	return c.Next()
}

// agentPeer reports whether, on a server without a token, the request comes from one of
// its agents or their commands: on loopback they could otherwise answer their own
// permission requests. With a token they would need the token, which they cannot read
// (docs/SECURITY.md).
func (s *server) agentPeer(c *fiber.Ctx) bool {
	if s.token != "" || s.agent == nil {
		return false
	}
	client, ok1 := c.Context().RemoteAddr().(*net.TCPAddr)
	local, ok2 := c.Context().LocalAddr().(*net.TCPAddr)
	return !ok1 || !ok2 || s.agent(client.AddrPort(), local.AddrPort())
}

// requirePageToken guards the UI catch-all, and gives a page request its account, for
// the data the page shows (pages). A ?token= hand-off sets the cookie and redirects to
// the same URL without it; pages without the token go to /login. Paths with a file
// extension are the PWA's static files (scripts, worker, manifest): browsers fetch some
// of them without cookies, and they hold nothing private (no account: no data).
func (s *server) requirePageToken(c *fiber.Ctx) error {
	if path.Ext(c.Path()) != "" {
		return c.Next()
	}
	if handoff := c.Query("token"); handoff != "" && s.token != "" {
		target := localPath(string(c.Request().Header.RequestURI()), "token")
		if err := s.signIn(c, handoff, "link"); err != nil {
			return s.loginPage(c, err, target)
		}
		return c.Redirect(target, http.StatusSeeOther)
	}
	acc, _, err := s.authenticate(c)
	if err == nil {
		c.SetUserContext(withAccount(c.UserContext(), acc))
		return c.Next()
	}
	if c.Method() != fiber.MethodGet && c.Method() != fiber.MethodHead || shared.ErrorCode(err) == shared.CodeInternal {
		return s.fail(c, err)
	}
	return c.Redirect("/login?next="+url.QueryEscape(string(c.Request().Header.RequestURI())), http.StatusSeeOther)
}

// signIn signs the browser in when candidate is the token: a new sign-in and its cookie.
// Secure follows the request's scheme, which comes from X-Forwarded-Proto only through a
// trusted proxy.
func (s *server) signIn(c *fiber.Ctx, candidate, via string) error {
	if err := s.checkToken(c, candidate, via); err != nil {
		return err
	}
	return s.startSignIn(c, "")
}

// startSignIn signs the browser in as an account ("" for the token): a new sign-in and
// its cookie.
func (s *server) startSignIn(c *fiber.Ctx, accountID string) error {
	return s.signInUntil(c, store.SignIn{AccountID: accountID}, s.now().Add(sessionLifetime))
}

// signInUntil makes a sign-in of who that lasts until expires, and its cookie.
func (s *server) signInUntil(c *fiber.Ctx, who store.SignIn, expires time.Time) error {
	id, err := s.store.CreateSignIn(c.UserContext(), who, expires)
	if err != nil {
		return err
	}
	c.Cookie(&fiber.Cookie{Name: cookieName, Value: s.cookieValue(id), Path: "/", HTTPOnly: true,
		SameSite: fiber.CookieSameSiteStrictMode, Secure: c.Protocol() == "https",
		MaxAge: int(expires.Sub(s.now()) / time.Second)})
	return nil
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
	return s.loginPage(c, nil, c.Query("next"))
}

// handleLogin signs in with a login and password, or with the token.
func (s *server) handleLogin(c *fiber.Ctx) error {
	next := localPath(c.FormValue("next"))
	var err error
	if login := c.FormValue("login"); login != "" {
		err = s.passwordSignIn(c, login, c.FormValue("password"))
	} else {
		err = s.signIn(c, c.FormValue("token"), "form")
	}
	if err != nil {
		return s.loginPage(c, err, next)
	}
	return c.Redirect(next, http.StatusSeeOther)
}

// passwordSignIn signs an account in. A wrong login or password is a guess like a wrong
// token (the same throttle), and takes as long either way (task.DummyHash).
func (s *server) passwordSignIn(c *fiber.Ctx, login, password string) error {
	addr := s.clientAddr(c)
	if wait := s.throttle.wait(addr); wait > 0 {
		return s.tooManyGuesses(c, wait)
	}
	acc, hash, err := s.store.AccountByLogin(c.UserContext(), login)
	switch {
	case store.IsNoSuchLogin(err):
		task.PasswordMatches(task.DummyHash(), password)
	case err != nil:
		return err
	case task.PasswordMatches(hash, password):
		return s.startSignIn(c, acc.ID)
	}
	failures, wait := s.throttle.failed(addr)
	s.log.Warn("wrong password", "client", addr.String(), "failures", failures, "wait", wait)
	return errWrongPassword
}

// sameOriginForm refuses a form posted from another site.
func (s *server) sameOriginForm(c *fiber.Ctx) error {
	if !sameOrigin(c) {
		return s.fail(c, errCrossOrigin)
	}
	return c.Next()
}

// handleLogout signs the browser out: its sign-in ends, so a copy of the cookie is
// worth nothing, and the cookie is replaced by an expired empty one. Only a same-origin
// form may do it (sameOriginForm).
func (s *server) handleLogout(c *fiber.Ctx) error {
	if id, ok := s.signInOf(c.Cookies(cookieName)); ok {
		if err := s.tasks.SignOut(c.UserContext(), id); err != nil {
			return s.fail(c, err)
		}
	}
	c.Cookie(&fiber.Cookie{Name: cookieName, Path: "/", HTTPOnly: true,
		SameSite: fiber.CookieSameSiteStrictMode, Secure: c.Protocol() == "https", Expires: time.Unix(0, 0)})
	// The browser forgets every copy kept of this origin: the service worker's pages and
	// outputs (Cache Storage), the worker itself and the HTTP cache, so the next person on
	// the device sees nothing of this one's sessions, online or not.
	c.Set(fiber.HeaderClearSiteData, `"cache", "storage"`)
	return c.Redirect("/login", http.StatusSeeOther)
}

// The sign-in page uses the app's stylesheet and its classes (the new-task card), so it
// follows light and dark like the app; it has no inline style or script (CSP).
var loginTemplate = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="theme-color" content="#111827">
<title>Sign in · Conch</title>
<link rel="icon" href="/web/icon.svg"><link rel="stylesheet" href="/web/app.css">
</head><body><div class="page login-page">
<header class="bar"><h1>Conch</h1></header>
<main><form class="new-task" method="post" action="/login">
<h2>Sign in</h2>
{{if .Error}}<p class="alert" role="alert">{{.Error}}</p>{{end}}
{{if .SSO}}<p><a class="button" href="/login/oidc?next={{.Next}}">Sign in with single sign-on</a></p>{{end}}
{{if .Accounts}}<div class="field"><label for="login">Login</label>
<input id="login" name="login" autocomplete="username" required autofocus></div>
<div class="field"><label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required></div>
{{else}}<div class="field"><label for="token">Access token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus></div>
<p class="empty">The token this server was started with.</p>{{end}}
<input type="hidden" name="next" value="{{.Next}}">
<button type="submit">Sign in</button>
</form></main></div></body></html>
`))

// formPage starts the answer of a sign-in form page, never cached, with the status of
// err; it returns what to tell the person of err ("" for none).
func (s *server) formPage(c *fiber.Ctx, err error) string {
	status, problem := http.StatusOK, ""
	if err != nil {
		e := s.report(err)
		status, problem = statusOf[e.Code], e.Message
	}
	c.Status(status).Type("html", "utf-8")
	c.Set(fiber.HeaderCacheControl, "no-store")
	// These pages hold forms, whose posts carry their Origin for sameOriginForm; under
	// "no-referrer" a browser sends it as "null". No other site gets their URLs (an
	// invitation's or a share link's code) either way.
	c.Set(fiber.HeaderReferrerPolicy, "same-origin")
	return problem
}

// loginPage shows the form; err, when set, is why the last attempt failed.
func (s *server) loginPage(c *fiber.Ctx, err error, next string) error {
	problem := s.formPage(c, err)
	if errors.Is(err, errUnauthorized) {
		problem = "That token is not valid."
	}
	// Once accounts exist people sign in with their own; the token still signs in the
	// API's scripts, and a browser through a ?token= link.
	admins, err := s.store.CountAdmins(c.UserContext())
	if err != nil {
		return s.fail(c, err)
	}
	return loginTemplate.Execute(c, struct {
		Error, Next   string
		Accounts, SSO bool
	}{problem, localPath(next), admins > 0, s.oidc != nil})
}
