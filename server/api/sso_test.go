package api

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"conch/shared"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// fakeIdP is an OpenID provider on loopback that signs in whoever the test says, in the
// groups the test says: discovery, its key set and a token endpoint that answers any code
// with an ID token for the nonce of the last sign-in the test started.
type fakeIdP struct {
	t      *testing.T
	srv    *httptest.Server
	key    *rsa.PrivateKey
	now    func() time.Time
	mu     sync.Mutex
	nonce  string
	claims map[string]any
}

func newFakeIdP(t *testing.T, now func() time.Time) *fakeIdP {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeIdP{t: t, key: key, now: now}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": f.srv.URL, "authorization_endpoint": f.srv.URL + "/authorize",
			"token_endpoint": f.srv.URL + "/token", "jwks_uri": f.srv.URL + "/keys", "id_token_signing_alg_values_supported": []string{"RS256"}})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k", Algorithm: "RS256", Use: "sig"}}})
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		claims := map[string]any{"iss": f.srv.URL, "aud": "conch", "nonce": f.nonce,
			"iat": f.now().Unix(), "exp": f.now().Add(time.Hour).Unix()}
		for k, v := range f.claims {
			claims[k] = v
		}
		f.mu.Unlock()
		signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithHeader("kid", "k"))
		if err != nil {
			t.Error(err)
			return
		}
		raw, err := jwt.Signed(signer).Claims(claims).Serialize()
		if err != nil {
			t.Error(err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": "at", "token_type": "Bearer", "expires_in": 3600, "id_token": raw})
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

// signIn goes through Conch's sign-in with the provider as subject in groups and returns
// the answer to the callback: Conch's sign-in cookie on success.
func (f *fakeIdP) signIn(e *env, subject string, groups ...string) (*http.Response, string) {
	f.t.Helper()
	resp, _ := e.do("GET", "/login/oidc?next=/", "")
	to, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusSeeOther || err != nil || len(resp.Cookies()) != 1 {
		f.t.Fatalf("start of a sign-in: %d %q %v", resp.StatusCode, resp.Header.Get("Location"), err)
	}
	f.mu.Lock()
	f.nonce = to.Query().Get("nonce")
	f.claims = map[string]any{"sub": subject, "preferred_username": subject, "groups": groups}
	f.mu.Unlock()
	pending := resp.Cookies()[0]
	return e.do("GET", "/login/oidc/callback?code=c&state="+url.QueryEscape(to.Query().Get("state")), "", "Cookie", pending.Name+"="+pending.Value)
}

func ssoEnv(t *testing.T) (*env, *fakeIdP) {
	var idp *fakeIdP
	e := newEnv(t, withToken, func(c *Config) {
		idp = newFakeIdP(t, c.Now)
		c.OIDC = &OIDC{Issuer: idp.srv.URL, ClientID: "conch", Groups: map[string]string{"devs": shared.RoleMember, "auditors": shared.RoleViewer}}
	})
	return e, idp
}

// signedIn signs subject in through the provider and returns Conch's sign-in cookie.
func (f *fakeIdP) signedIn(e *env, subject string, groups ...string) string {
	f.t.Helper()
	resp, body := f.signIn(e, subject, groups...)
	for _, c := range resp.Cookies() {
		if c.Name == cookieName && c.Value != "" {
			if c.MaxAge != int(ssoSignInLifetime/time.Second) {
				f.t.Errorf("a sign-in through the provider lasts %d s, want %v", c.MaxAge, ssoSignInLifetime)
			}
			return c.Name + "=" + c.Value
		}
	}
	f.t.Fatalf("no sign-in: %d %s", resp.StatusCode, body)
	return ""
}

// A role the provider lowers reaches a WebSocket opened before: its next write is
// refused, its reads go on.
func TestDemotionReachesOpenWebSockets(t *testing.T) {
	e, idp := ssoEnv(t)
	addr := e.listen()
	cookie := idp.signedIn(e, "grace", "devs")
	var task shared.Task
	var sess shared.Session
	e.expect(http.StatusCreated, "POST", "/api/v1/tasks", `{"title":"grace's"}`, &task, "Cookie", cookie)
	e.expect(http.StatusCreated, "POST", "/api/v1/tasks/"+task.ID+"/sessions", `{"agent":"shell","cwd":"/tmp"}`, &sess, "Cookie", cookie)
	w, resp, err := dial(t, addr, http.Header{"Cookie": {cookie}})
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	add := shared.AddRequest{SessionID: sess.ID, Content: "first"}
	if r := w.request(shared.ActionMessageAdd, add); r.Type != shared.EnvelopeResponse {
		t.Fatalf("a member's prompt: %s", r.Payload)
	}
	idp.signedIn(e, "grace", "auditors") // another browser: the provider now says viewer
	add.Content = "after the demotion"
	if r := w.request(shared.ActionMessageAdd, add); r.Type != shared.EnvelopeError || !strings.Contains(string(r.Payload), `"code":"forbidden"`) {
		t.Fatalf("a viewer's prompt on a socket opened as a member: %s %s", r.Type, r.Payload)
	}
	if prompts, _ := e.rt.recorded(); len(prompts) != 1 {
		t.Errorf("prompts that reached the agent: %q", prompts)
	}
	if r := w.request(shared.ActionSubscribe, shared.SessionRef{SessionID: sess.ID}); r.Type != shared.EnvelopeResponse {
		t.Errorf("a viewer's subscription: %s", r.Payload)
	}
}

// When the provider puts a person in no group that may use Conch, their next sign-in
// ends their other sign-ins, their access tokens and their open sockets; tokens of such
// an account last at most SSOTokenDays anyway.
func TestLeavingEveryGroupEndsAccess(t *testing.T) {
	e, idp := ssoEnv(t)
	addr := e.listen()
	cookie := idp.signedIn(e, "grace", "devs")
	var tok shared.AccessToken
	e.expect(http.StatusCreated, "POST", "/api/v1/tokens", `{"name":"ci"}`, &tok, "Cookie", cookie)
	if want := e.clock.Now().Add(shared.SSOTokenDays * 24 * time.Hour); tok.ExpiresAt == nil || !tok.ExpiresAt.Equal(want) {
		t.Errorf("a single sign-on account's token ends %v, want %v", tok.ExpiresAt, want)
	}
	e.expect(http.StatusBadRequest, "POST", "/api/v1/tokens", `{"name":"long","expires_in_days":31}`, nil, "Cookie", cookie)
	bearer := []string{"Authorization", "Bearer " + tok.Token}
	e.expect(http.StatusCreated, "POST", "/api/v1/tasks", `{"title":"before"}`, nil, bearer...)
	w, resp, err := dial(t, addr, http.Header{"Cookie": {cookie}})
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}

	resp, body := idp.signIn(e, "grace")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "none of the groups") {
		t.Fatalf("a sign-in in no group: %d %s", resp.StatusCode, body)
	}
	expectSignedOut(t, w, "leaving every group")
	for name, header := range map[string][]string{"the token": bearer, "the sign-in": {"Cookie", cookie}} {
		if resp, body := e.do("POST", "/api/v1/tasks", `{"title":"after"}`, header...); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s after leaving every group: %d %s", name, resp.StatusCode, body)
		}
	}
}

// A token asked to end does, and the days are bounded.
func TestAccessTokensExpire(t *testing.T) {
	e := newEnv(t, withToken)
	ada := e.accountWithToken("ada", shared.RoleMember)
	for _, bad := range []string{`-1`, `367`, `"7"`} {
		e.expect(http.StatusBadRequest, "POST", "/api/v1/tokens", `{"name":"x","expires_in_days":`+bad+`}`, nil, ada...)
	}
	var short shared.AccessToken
	e.expect(http.StatusCreated, "POST", "/api/v1/tokens", `{"name":"a day","expires_in_days":1}`, &short, ada...)
	if want := e.clock.Now().Add(24 * time.Hour); short.ExpiresAt == nil || !short.ExpiresAt.Equal(want) {
		t.Fatalf("ends %v, want %v", short.ExpiresAt, want)
	}
	bearer := []string{"Authorization", "Bearer " + short.Token}
	e.expect(http.StatusOK, "GET", "/api/v1/tasks", "", nil, bearer...)
	e.stored.Advance(24*time.Hour + time.Minute)
	e.expect(http.StatusUnauthorized, "GET", "/api/v1/tasks", "", nil, bearer...)
	e.expect(http.StatusOK, "GET", "/api/v1/tasks", "", nil, ada...) // no end: still works
}

// The logins of who is not an account (the server's token, a server without one, a
// share link's guests) are no account's, in any case: the audit tells them apart.
func TestReservedLogins(t *testing.T) {
	e, idp := ssoEnv(t)
	admin := []string{"Authorization", "Bearer " + token}
	for _, login := range []string{"token", "Local", "GUEST"} {
		e.expect(http.StatusConflict, "POST", "/api/v1/accounts", `{"login":"`+login+`","role":"member","password":"a long password"}`, nil, admin...)
	}
	cookie := idp.signedIn(e, "token", "devs")
	var me shared.Account
	e.expect(http.StatusOK, "GET", "/api/v1/me", "", &me, "Cookie", cookie)
	if me.Login != "token-2" || me.Provider != idp.srv.URL {
		t.Errorf("a person the provider calls token signs in as %+v", me)
	}
}
