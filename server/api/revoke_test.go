package api

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"conch/server/waittest"
	"conch/shared"

	"github.com/coder/websocket"
)

// A WebSocket ends, with 4401, the moment what let it in ends: a sign-out, its account's
// deletion, its access token's or share link's revocation. No event reaches it after
// that, while the other connections go on.
func TestRevokingClosesOpenWebSockets(t *testing.T) {
	e := newEnv(t, withToken)
	addr := e.listen()
	admin := []string{"Authorization", "Bearer " + token}
	sess := e.session()
	open := func(name, value string) *wsClient {
		t.Helper()
		w, resp, err := dial(t, addr, http.Header{name: {value}})
		if err != nil {
			t.Fatalf("dial with %s: %v (%v)", name, err, resp)
		}
		if r := w.request(shared.ActionSubscribe, shared.SessionRef{SessionID: sess.ID}); r.Type != shared.EnvelopeResponse {
			t.Fatalf("subscribe: %s", r.Payload)
		}
		return w
	}
	ada, bob := e.accountWithToken("ada", shared.RoleMember), e.accountWithToken("bob", shared.RoleMember)
	var link shared.ShareLink
	e.expect(http.StatusCreated, "POST", "/api/v1/tasks/"+sess.TaskID+"/links", `{"days":7}`, &link, admin...)
	resp, _ := e.do("GET", link.URL, "")
	guestCookie := cookieName + "=" + resp.Cookies()[0].Value
	tokenCookie, adaCookie, bobCookie := e.signIn(), e.signInAs("ada", "correct horse battery"), e.signInAs("bob", "correct horse battery")
	var bobTokens struct{ Tokens []shared.AccessToken }
	e.expect(http.StatusOK, "GET", "/api/v1/tokens", "", &bobTokens, bob...)
	adaAccount, _, err := e.store.AccountByLogin(context.Background(), "ada")
	if err != nil {
		t.Fatal(err)
	}

	socket := map[string]*wsClient{
		"the server's token": open(admin[0], admin[1]),
		"a token sign-in":    open("Cookie", tokenCookie),
		"ada's token":        open(ada[0], ada[1]),
		"ada's sign-in":      open("Cookie", adaCookie),
		"bob's token":        open(bob[0], bob[1]),
		"bob's sign-in":      open("Cookie", bobCookie),
		"the guest":          open("Cookie", guestCookie),
	}
	for _, step := range []struct {
		what   string
		revoke func()
		ends   []string
	}{
		{"a sign-out", func() {
			if resp, _ := e.do("POST", "/logout", "", "Cookie", tokenCookie); resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("logout: %d", resp.StatusCode)
			}
		}, []string{"a token sign-in"}},
		{"an access token's revocation", func() {
			e.expect(http.StatusNoContent, "DELETE", "/api/v1/tokens/"+bobTokens.Tokens[0].ID, "", nil, bob...)
		}, []string{"bob's token"}},
		{"a share link's revocation", func() {
			e.expect(http.StatusNoContent, "DELETE", "/api/v1/tasks/"+sess.TaskID+"/links/"+link.ID, "", nil, admin...)
		}, []string{"the guest"}},
		{"an account's deletion", func() {
			e.expect(http.StatusNoContent, "DELETE", "/api/v1/accounts/"+adaAccount.ID, "", nil, admin...)
		}, []string{"ada's token", "ada's sign-in"}},
	} {
		step.revoke()
		e.hub.MessageAdded(e.text(sess.ID, "after "+step.what))
		for name, w := range socket {
			if !slices.Contains(step.ends, name) {
				if n := w.next(); !strings.Contains(string(n.Payload), "after "+step.what) {
					t.Errorf("after %s, %s got %s %s", step.what, name, n.Action, n.Payload)
				}
				continue
			}
			expectSignedOut(t, w, step.what)
			delete(socket, name)
		}
	}
}

// expectSignedOut reads the close of a connection that what ended: 4401, and no event
// before it.
func expectSignedOut(t *testing.T, w *wsClient, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Limit(t))
	defer cancel()
	_, data, err := w.c.Read(ctx)
	if websocket.CloseStatus(err) != shared.CloseSignedOut {
		t.Errorf("after %s: read %s, %v; want a close with %d", what, data, err, shared.CloseSignedOut)
	}
}

// A sign-out between a WebSocket's upgrade (its cookie still good) and its registration in
// the hub publishes a revocation no client hears: the socket checks its credentials again
// once registered, and ends with 4401.
func TestRevokedWhileUpgrading(t *testing.T) {
	e := newEnv(t, withToken)
	addr := e.listen()
	e.accountWithToken("ada", shared.RoleMember)
	cookie := e.signInAs("ada", "correct horse battery")
	registering = func() {
		if resp, _ := e.do("POST", "/logout", "", "Cookie", cookie); resp.StatusCode != http.StatusSeeOther {
			t.Errorf("logout: %d", resp.StatusCode)
		}
	}
	t.Cleanup(func() { registering = func() {} })
	w, resp, err := dial(t, addr, http.Header{"Cookie": {cookie}})
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	expectSignedOut(t, w, "a sign-out during the upgrade")
}
