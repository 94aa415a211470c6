package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"conch/server/runner"
	"conch/server/task"
	"conch/shared"

	"github.com/gofiber/fiber/v2"
)

// routeNeeds is the least role of each API route ("GET /api/v1/me"), as the route table
// declares it: a route registered apart from the table, or whose handler checks another
// role than its row's, fails TestEveryRouteChecksItsRole.
var routeNeeds = func() map[string]string {
	needs := map[string]string{}
	for _, r := range routes {
		if r.path != "" {
			needs[r.method+" /api/v1"+r.path] = r.role
		}
	}
	return needs
}()

// accountWithToken makes an account of role and returns a bearer header of a personal
// access token of it, made through the API as the account itself.
func (e *env) accountWithToken(login, role string) []string {
	e.t.Helper()
	acc, err := e.store.CreateAccount(context.Background(), login, role, task.HashPassword("correct horse battery"))
	if err != nil {
		e.t.Fatal(err)
	}
	cookie := e.signInAs(login, "correct horse battery")
	var tok shared.AccessToken
	e.expect(http.StatusCreated, "POST", "/api/v1/tokens", `{"name":"tests"}`, &tok, "Cookie", cookie)
	if !strings.HasPrefix(tok.Token, task.AccessTokenPrefix) || tok.ID == "" || acc.ID == "" {
		e.t.Fatalf("token %+v of %+v", tok, acc)
	}
	return []string{"Authorization", "Bearer " + tok.Token}
}

// people are the bearer headers of the server's token, of the members ada and bob and of
// the viewer vic, with a task ada made.
func (e *env) people() (admin, ada, bob, vic []string, task shared.Task) {
	e.t.Helper()
	admin = []string{"Authorization", "Bearer " + token}
	ada, bob = e.accountWithToken("ada", shared.RoleMember), e.accountWithToken("bob", shared.RoleMember)
	vic = e.accountWithToken("vic", shared.RoleViewer)
	e.expect(http.StatusCreated, "POST", "/api/v1/tasks", `{"title":"ada's"}`, &task, ada...)
	return admin, ada, bob, vic, task
}

// signInAs signs in through the form with a login and password; it returns the cookie.
func (e *env) signInAs(login, password string) string {
	e.t.Helper()
	resp, body := e.do("POST", "/login", "login="+url.QueryEscape(login)+"&password="+url.QueryEscape(password), "Content-Type", form)
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		e.t.Fatalf("sign-in of %s: %d %s", login, resp.StatusCode, body)
	}
	return cookieName + "=" + resp.Cookies()[0].Value
}

// accountRoute reports whether r is an API route that accounts are let in to: every route
// of /api/v1 but HEAD (which runs GET's handlers) and a runner's connection, which only a
// runner token opens (TestRunnerConnect).
func accountRoute(r fiber.Route) bool {
	return strings.HasPrefix(r.Path, "/api/v1/") && r.Method != "HEAD" && r.Path != runner.ConnectPath
}

// Every API route asks for a role, and the one its row of the route table says: each route is called
// by each role, and answers 403 exactly when the role is below its need.
func TestEveryRouteChecksItsRole(t *testing.T) {
	e := newEnv(t, withToken)
	sess := e.session()
	msg := e.text(sess.ID, "hello")
	ids := strings.NewReplacer(":task_id", sess.TaskID, ":session_id", sess.ID, ":message_id", msg.ID,
		":account_id", "no-such-account", ":token_id", "no-such-token", ":link_id", "no-such-link", ":attachment_id", "no-such-attachment")
	headers := map[string][]string{}
	for _, role := range shared.Roles {
		headers[role] = e.accountWithToken("a-"+role, role)
	}
	seen := map[string]bool{}
	for _, r := range e.app.GetRoutes(true) {
		if !accountRoute(r) {
			continue
		}
		key := r.Method + " " + r.Path
		seen[key] = true
		need, ok := routeNeeds[key]
		if !ok {
			t.Errorf("%s has no role in routeNeeds", key)
			continue
		}
		for _, role := range shared.Roles {
			// A body that fails decoding still answers after the role check; what matters
			// is only whether the check refused.
			body := ""
			if r.Method == "POST" {
				body = `{}`
			}
			resp, raw := e.do(r.Method, ids.Replace(r.Path), body, headers[role]...)
			refused := resp.StatusCode == http.StatusForbidden && strings.Contains(raw, "needs the "+need+" role")
			if want := shared.RoleRank(role) < shared.RoleRank(need); refused != want {
				t.Errorf("%s as %s: %d %s; refused %v, want %v", key, role, resp.StatusCode, raw, refused, want)
			}
		}
	}
	for key := range routeNeeds {
		if !seen[key] {
			t.Errorf("routeNeeds names %s, which is not a route", key)
		}
	}
}

// A WebSocket action needs the role of its row in the route table (its REST twin's): a
// viewer may subscribe and list, not prompt.
func TestWebSocketActionsCheckRoles(t *testing.T) {
	e := newEnv(t, withToken)
	sess := e.session()
	viewer := e.accountWithToken("viewer1", shared.RoleViewer)
	addr := e.listen()
	w, resp, err := dial(t, addr, http.Header{viewer[0]: {viewer[1]}})
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	for action, need := range wsNeeds {
		got := w.request(action, shared.SessionRef{SessionID: sess.ID})
		refused := got.Type == shared.EnvelopeError && strings.Contains(string(got.Payload), "needs the "+need+" role")
		if want := need != shared.RoleViewer; refused != want {
			t.Errorf("viewer's %s: %+v; refused %v, want %v", action, got, refused, want)
		}
	}
	if got := w.request("session.unheard_of", shared.SessionRef{SessionID: sess.ID}); !strings.Contains(string(got.Payload), shared.CodeUnknownAction) {
		t.Errorf("an action without a row: %+v", got)
	}
	if got := w.request(shared.ActionSubscribe, shared.SessionRef{SessionID: sess.ID}); got.Type != shared.EnvelopeResponse {
		t.Errorf("viewer's subscribe: %+v", got)
	}
	got := w.request(shared.ActionMessageAdd, shared.AddRequest{SessionID: sess.ID, Content: "rm -rf /"})
	if got.Type != shared.EnvelopeError || !strings.Contains(string(got.Payload), `"code":"forbidden"`) {
		t.Errorf("viewer's message.add: %+v", got)
	}
	if page, err := e.store.ListMessages(context.Background(), shared.ListRequest{SessionID: sess.ID}); err != nil || len(page.Messages) != 0 {
		t.Errorf("after a refused prompt the session holds %+v, %v", page, err)
	}
}

// Accounts sign in with their password, an invitation makes one account once, tokens are
// shown once and stop working when revoked or when their account goes.
func TestAccountsAndTokens(t *testing.T) {
	e := newEnv(t, withToken)
	admin := []string{"Authorization", "Bearer " + token}
	var acc shared.Account
	e.expect(http.StatusCreated, "POST", "/api/v1/accounts", `{"login":"ada","role":"member","password":"a long password"}`, &acc, admin...)
	if acc.Login != "ada" || acc.Role != shared.RoleMember {
		t.Fatalf("account %+v", acc)
	}
	e.expect(http.StatusConflict, "POST", "/api/v1/accounts", `{"login":"ada","role":"viewer","password":"another password"}`, nil, admin...)
	for _, bad := range []string{`{"login":"ada2","role":"owner","password":"a long password"}`, `{"login":"ada 2","role":"member","password":"a long password"}`,
		`{"login":"ada2","role":"member","password":"short"}`} {
		e.expect(http.StatusBadRequest, "POST", "/api/v1/accounts", bad, nil, admin...)
	}

	// The password signs in; a wrong one says so and counts as a guess.
	resp, body := e.do("POST", "/login", "login=ada&password=wrong+password", "Content-Type", form)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "That login and password do not match.") {
		t.Errorf("wrong password: %d %s", resp.StatusCode, body)
	}
	e.clock.Advance(maxDelay)
	cookie := e.signInAs("ada", "a long password")
	var me shared.Account
	e.expect(http.StatusOK, "GET", "/api/v1/me", "", &me, "Cookie", cookie)
	if me.ID != acc.ID || me.Role != shared.RoleMember {
		t.Errorf("me %+v", me)
	}

	// A token's secret is in its creation's answer only.
	var tok shared.AccessToken
	e.expect(http.StatusCreated, "POST", "/api/v1/tokens", `{"name":"laptop"}`, &tok, "Cookie", cookie)
	bearer := []string{"Authorization", "Bearer " + tok.Token}
	e.expect(http.StatusOK, "GET", "/api/v1/me", "", &me, bearer...)
	var list struct{ Tokens []shared.AccessToken }
	raw := e.expect(http.StatusOK, "GET", "/api/v1/tokens", "", &list, bearer...)
	if len(list.Tokens) != 1 || list.Tokens[0].Token != "" || strings.Contains(raw, tok.Token) || list.Tokens[0].LastUsedAt == nil {
		t.Errorf("tokens %s", raw)
	}
	e.expect(http.StatusNoContent, "DELETE", "/api/v1/tokens/"+tok.ID, "", nil, "Cookie", cookie)
	e.expect(http.StatusUnauthorized, "GET", "/api/v1/me", "", nil, bearer...)
	e.clock.Advance(maxDelay)
	e.expect(http.StatusBadRequest, "POST", "/api/v1/tokens", `{"name":"x"}`, nil, admin...) // the server's token has none

	// An invitation makes one account, once.
	var inv shared.Invitation
	e.expect(http.StatusCreated, "POST", "/api/v1/accounts", `{"role":"viewer"}`, &inv, admin...)
	if !strings.HasPrefix(inv.URL, "/invite/") || inv.Role != shared.RoleViewer {
		t.Fatalf("invitation %+v", inv)
	}
	if _, page := e.do("GET", inv.URL, ""); !strings.Contains(page, "You are invited as viewer.") {
		t.Errorf("invitation page %s", page)
	}
	resp, _ = e.do("POST", inv.URL, "login=bob&password=bobs+long+password", "Content-Type", form)
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Fatalf("accept invitation: %d", resp.StatusCode)
	}
	e.expect(http.StatusOK, "GET", "/api/v1/me", "", &me, "Cookie", cookieName+"="+resp.Cookies()[0].Value)
	if me.Login != "bob" || me.Role != shared.RoleViewer {
		t.Errorf("invited %+v", me)
	}
	if resp, _ := e.do("POST", inv.URL, "login=eve&password=eves+long+password", "Content-Type", form); resp.StatusCode != http.StatusNotFound {
		t.Errorf("second use of an invitation: %d", resp.StatusCode)
	}
	if _, _, err := e.store.AccountByLogin(context.Background(), "eve"); err == nil {
		t.Error("a used invitation made a second account")
	}

	// Deleting an account ends its sign-ins at once; the last admin stays.
	e.expect(http.StatusNoContent, "DELETE", "/api/v1/accounts/"+acc.ID, "", nil, admin...)
	e.expect(http.StatusUnauthorized, "GET", "/api/v1/me", "", nil, "Cookie", cookie)
	e.clock.Advance(maxDelay)
	boss, err := e.store.CreateAccount(context.Background(), "boss", shared.RoleAdmin, task.HashPassword("the boss password"))
	if err != nil {
		t.Fatal(err)
	}
	e.expect(http.StatusConflict, "DELETE", "/api/v1/accounts/"+boss.ID, "", nil, admin...)
}

// A member changes the tasks it made and those shared with it, reads the others, and
// cannot hand on what was shared with it; the audit records each write that went
// through, with who did it, and none that was refused.
func TestTaskOwnersEditorsAndAudit(t *testing.T) {
	e := newEnv(t, withToken)
	admin, ada, bob, vic, task := e.people()
	if task.Owner != "ada" {
		t.Fatalf("owner %q", task.Owner)
	}
	var sess shared.Session
	e.expect(http.StatusCreated, "POST", "/api/v1/tasks/"+task.ID+"/sessions", `{"agent":"shell","cwd":"/tmp"}`, &sess, ada...)
	e.expect(http.StatusOK, "GET", "/api/v1/tasks/"+task.ID, "", nil, bob...) // reading is open to every role
	prompt := "/api/v1/task-sessions/" + sess.ID + "/messages"
	if _, body := e.do("POST", prompt, `{"content":"ls"}`, bob...); !strings.Contains(body, "bob may not change this task: it is ada's") {
		t.Errorf("bob's prompt on ada's task: %s", body)
	}
	e.expect(http.StatusForbidden, "DELETE", "/api/v1/tasks/"+task.ID, "", nil, bob...)
	e.expect(http.StatusForbidden, "POST", "/api/v1/tasks/"+task.ID+"/editors", `{"login":"bob"}`, nil, vic...)

	// Shared with bob: he may prompt, signed with his login, but not share it on.
	var got shared.Account
	e.expect(http.StatusOK, "POST", "/api/v1/tasks/"+task.ID+"/editors", `{"login":"bob"}`, &got, ada...)
	var msg shared.Message
	e.expect(http.StatusAccepted, "POST", prompt, `{"content":"ls"}`, &msg, bob...)
	if msg.Metadata == nil || msg.Metadata.Author != "bob" {
		t.Errorf("bob's prompt: %+v", msg.Metadata)
	}
	if _, body := e.do("POST", "/api/v1/tasks/"+task.ID+"/editors", `{"login":"vic"}`, bob...); !strings.Contains(body, "only ada or an admin may share this task") {
		t.Errorf("bob shares on: %s", body)
	}
	var editors struct{ Editors []shared.Account }
	e.expect(http.StatusOK, "GET", "/api/v1/tasks/"+task.ID+"/editors", "", &editors, vic...)
	if len(editors.Editors) != 1 || editors.Editors[0].Login != "bob" {
		t.Errorf("editors %+v", editors)
	}
	e.expect(http.StatusNoContent, "DELETE", "/api/v1/tasks/"+task.ID+"/editors/"+got.ID, "", nil, ada...)
	e.expect(http.StatusForbidden, "POST", prompt, `{"content":"pwd"}`, nil, bob...)
	e.expect(http.StatusNoContent, "DELETE", "/api/v1/tasks/"+task.ID, "", nil, admin...) // admins change any task

	e.expect(http.StatusForbidden, "GET", "/api/v1/audit", "", nil, ada...)
	_, lines := e.do("GET", "/api/v1/audit", "", admin...)
	var events []string
	for line := range strings.Lines(lines) {
		var ev shared.AuditEvent
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		if ev.Action == "POST /api/v1/tokens" {
			continue // the tokens accountWithToken made
		}
		events = append(events, ev.Login+" "+ev.Action+" "+ev.TaskID)
	}
	want := []string{
		"ada POST /api/v1/tasks " + task.ID, // the new task's id, from the answer
		"ada POST /api/v1/tasks/:task_id/sessions " + task.ID,
		"ada POST /api/v1/tasks/:task_id/editors " + task.ID,
		"bob POST /api/v1/task-sessions/:session_id/messages " + task.ID,
		"ada DELETE /api/v1/tasks/:task_id/editors/:account_id " + task.ID,
		"token DELETE /api/v1/tasks/:task_id " + task.ID,
	}
	if !slices.Equal(events, want) {
		t.Errorf("audit:\n%s\nwant:\n%s", strings.Join(events, "\n"), strings.Join(want, "\n"))
	}
}

func TestSingleSignOnRules(t *testing.T) {
	f := &oidcFlow{cfg: OIDC{Groups: map[string]string{"devs": shared.RoleMember, "leads": shared.RoleAdmin, "auditors": shared.RoleViewer}}}
	for _, c := range []struct {
		groups []string
		want   string
	}{{nil, ""}, {[]string{"interns"}, ""}, {[]string{"auditors", "devs"}, shared.RoleMember}, {[]string{"leads", "auditors"}, shared.RoleAdmin}} {
		if got := f.roleOf(c.groups); got != c.want {
			t.Errorf("roleOf(%v) = %q, want %q", c.groups, got, c.want)
		}
	}
	f.cfg.DefaultRole = shared.RoleViewer
	if got := f.roleOf([]string{"interns"}); got != shared.RoleViewer {
		t.Errorf("with a default role: %q", got)
	}
	for _, c := range []struct {
		claims oidcClaims
		want   string
	}{
		{oidcClaims{Subject: "s", PreferredUsername: "Grace Hopper", Email: "g@x"}, "GraceHopper"},
		{oidcClaims{Subject: "s", Email: "grace.h@example.com"}, "grace.h"},
		{oidcClaims{Subject: "00u1-abc"}, "00u1-abc"},
		{oidcClaims{Subject: "\u202e..", PreferredUsername: "\u202e"}, "user"},
		{oidcClaims{PreferredUsername: "-._x" + strings.Repeat("y", 100)}, "x" + strings.Repeat("y", 55)},
	} {
		got := loginFrom(c.claims)
		if got != c.want || !task.LoginPattern.MatchString(got) {
			t.Errorf("loginFrom(%+v) = %q, want %q", c.claims, got, c.want)
		}
	}
	for _, bad := range []OIDC{{ClientID: "c"}, {Issuer: "http://i"}, {Issuer: "http://i", ClientID: "c", Groups: map[string]string{"g": "owner"}},
		{Issuer: "http://i", ClientID: "c", DefaultRole: "root"}} {
		if bad.Check() == nil {
			t.Errorf("%+v passed", bad)
		}
	}
}

// A callback that did not start here (no state cookie, or another state) is refused with
// its own reason on the sign-in page, never taken for a wrong token.
func TestSingleSignOnCallbackWithoutItsStart(t *testing.T) {
	e := newEnv(t, withToken, func(c *Config) { c.OIDC = &OIDC{Issuer: "http://127.0.0.1:1", ClientID: "conch"} })
	resp, body := e.do("GET", "/login/oidc/callback?state=forged&code=x", "")
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "That sign-in did not start here or took too long") ||
		strings.Contains(body, "token is not valid") {
		t.Errorf("forged callback: %d %s", resp.StatusCode, body)
	}
	if !strings.Contains(body, `href="/login/oidc?next=%2f"`) {
		t.Errorf("the page offers no new single sign-on: %s", body)
	}
}

// may_edit tells each account, in the list and on the task, whether it may change the
// task: by the rule the writes are checked with.
func TestMayEditFollowsTheRule(t *testing.T) {
	e := newEnv(t, withToken)
	admin, ada, bob, vic, task := e.people()
	if !task.MayEdit {
		t.Error("the maker's answer says it may not edit its task")
	}
	check := func(when string, want map[string]bool) {
		t.Helper()
		for who, h := range map[string][]string{"ada": ada, "bob": bob, "vic": vic, "token": admin} {
			var one shared.Task
			var list struct{ Tasks []shared.Task }
			e.expect(http.StatusOK, "GET", "/api/v1/tasks/"+task.ID, "", &one, h...)
			e.expect(http.StatusOK, "GET", "/api/v1/tasks", "", &list, h...)
			if one.MayEdit != want[who] || len(list.Tasks) != 1 || list.Tasks[0].MayEdit != want[who] {
				t.Errorf("%s, %s: may_edit %v on the task, %+v in the list; want %v", when, who, one.MayEdit, list.Tasks, want[who])
			}
		}
	}
	check("unshared", map[string]bool{"ada": true, "token": true})
	e.expect(http.StatusOK, "POST", "/api/v1/tasks/"+task.ID+"/editors", `{"login":"bob"}`, nil, ada...)
	check("shared with bob", map[string]bool{"ada": true, "bob": true, "token": true})
}
