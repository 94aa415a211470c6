package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"conch/server/waittest"
	"conch/shared"

	"github.com/coder/websocket"
)

// A share link signs a browser in as a guest of one task: every route that names another
// task (or a session or message of one), or nothing of its task, answers 404 as if it did
// not exist, and so does every page; its own task reads, and refuses writes. Revoking the link ends the guest's
// sign-in at once.
func TestGuestSeesOnlyItsTask(t *testing.T) {
	e := newEnv(t, withToken)
	admin := []string{"Authorization", "Bearer " + token}
	own, other := e.session(), e.session()
	ownMsg, otherMsg := e.text(own.ID, "mine"), e.text(other.ID, "not mine")

	for _, bad := range []string{`{"days":0}`, `{"days":31}`, `{}`} {
		e.expect(http.StatusBadRequest, "POST", "/api/v1/tasks/"+own.TaskID+"/links", bad, nil, admin...)
	}
	var link shared.ShareLink
	e.expect(http.StatusCreated, "POST", "/api/v1/tasks/"+own.TaskID+"/links", `{"days":7}`, &link, admin...)
	if !strings.HasPrefix(link.URL, "/share/") || link.CreatedBy != "token" || link.ExpiresAt.Sub(link.CreatedAt).Round(time.Hour) != 7*24*time.Hour {
		t.Fatalf("link %+v", link)
	}
	if resp, _ := e.do("GET", "/share/wrong", ""); resp.StatusCode != http.StatusNotFound || len(resp.Cookies()) != 0 {
		t.Errorf("a wrong link: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	resp, page := e.do("GET", link.URL, "")
	if resp.StatusCode != http.StatusOK || len(resp.Cookies()) != 1 || !strings.Contains(page, `content="0; url=/"`) {
		t.Fatalf("opening the link: %d %s", resp.StatusCode, page)
	}
	guest := []string{"Cookie", cookieName + "=" + resp.Cookies()[0].Value}
	var me shared.Account
	e.expect(http.StatusOK, "GET", "/api/v1/me", "", &me, guest...)
	if me.Login != shared.GuestLogin || me.TaskID != own.TaskID || me.Role != shared.RoleViewer {
		t.Errorf("the guest is %+v", me)
	}
	var list struct{ Tasks []shared.Task }
	e.expect(http.StatusOK, "GET", "/api/v1/tasks", "", &list, guest...)
	if len(list.Tasks) != 1 || list.Tasks[0].ID != own.TaskID || list.Tasks[0].MayEdit {
		t.Errorf("the guest's task list: %+v", list.Tasks)
	}

	idsOf := func(sess shared.Session, msg shared.Message) *strings.Replacer {
		return strings.NewReplacer(":task_id", sess.TaskID, ":session_id", sess.ID, ":message_id", msg.ID,
			":account_id", "no-such-account", ":token_id", "no-such-token", ":link_id", link.ID)
	}
	mine, theirs := idsOf(own, ownMsg), idsOf(other, otherMsg)
	for _, r := range e.app.GetRoutes(true) {
		if !accountRoute(r) {
			continue
		}
		key, body := r.Method+" "+r.Path, ""
		if r.Method == "POST" {
			body = `{}`
		}
		open := key == "GET /api/v1/tasks" || key == "GET /api/v1/me"
		resp, raw := e.do(r.Method, theirs.Replace(r.Path), body, guest...)
		if hidden := resp.StatusCode == http.StatusNotFound; hidden == open {
			t.Errorf("%s of another task as a guest: %d %s", key, resp.StatusCode, raw)
		}
		named := strings.Contains(r.Path, ":task_id") || strings.Contains(r.Path, ":session_id") || strings.Contains(r.Path, ":message_id")
		if !named {
			continue // answered above: not found, or the guest's own
		}
		resp, raw = e.do(r.Method, mine.Replace(r.Path), body, guest...)
		switch refused := resp.StatusCode == http.StatusForbidden || raw == `{"error":"not found","code":"not_found"}`; {
		case routeNeeds[key] == shared.RoleViewer && refused:
			t.Errorf("%s of its own task as a guest: %d %s", key, resp.StatusCode, raw)
		case routeNeeds[key] != shared.RoleViewer && resp.StatusCode != http.StatusForbidden:
			t.Errorf("%s, a write to its own task as a guest: %d %s", key, resp.StatusCode, raw)
		}
	}
	// A message of another task under the guest's own session is not found either.
	e.expect(http.StatusNotFound, "GET", "/api/v1/task-sessions/"+own.ID+"/messages/"+otherMsg.ID+"/tool-content", "", nil, guest...)

	// A page carries what the API route of its data answers: another task's session page
	// is not found and carries none of it, however its path is written, and a key to
	// another page's data in the URL is the client's own, dropped.
	for _, p := range []string{"/sessions/" + other.ID, "/%73essions/" + other.ID, "/sessions/" + other.ID + "?" + shared.BootParam + "=forged"} {
		resp, page := e.do("GET", p, "", guest...)
		if resp.StatusCode != http.StatusNotFound || strings.Contains(page, "not mine") || strings.Contains(page, "forged") {
			t.Errorf("%s as a guest: %d %s", p, resp.StatusCode, page)
		}
	}
	if page := e.expect(http.StatusOK, "GET", "/sessions/"+own.ID, "", nil, guest...); !strings.Contains(page, `"mine"`) {
		t.Errorf("its own session's page: %s", page)
	}

	// Over the WebSocket: its session only, and the task list's updates of its task only
	// (TestGuestsTaskListIsLive).
	w, wresp, err := dial(t, e.listen(), http.Header{"Cookie": {guest[1]}})
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, wresp)
	}
	for _, c := range []struct {
		action  string
		payload any
		code    string
	}{
		{shared.ActionTasksSubscribe, struct{}{}, ""},
		{shared.ActionSubscribe, shared.SessionRef{SessionID: other.ID}, shared.CodeNotFound},
		{shared.ActionMessageList, shared.ListRequest{SessionID: other.ID}, shared.CodeNotFound},
		{shared.ActionMessageAdd, shared.AddRequest{SessionID: other.ID, Content: "ls"}, shared.CodeNotFound},
		{shared.ActionMessageAdd, shared.AddRequest{SessionID: own.ID, Content: "ls"}, shared.CodeForbidden},
		{shared.ActionSubscribe, shared.SessionRef{SessionID: own.ID}, ""},
	} {
		got := w.request(c.action, c.payload)
		if c.code == "" && got.Type != shared.EnvelopeResponse || c.code != "" && !strings.Contains(string(got.Payload), `"code":"`+c.code+`"`) {
			t.Errorf("%s %+v as a guest: %s %s, want %q", c.action, c.payload, got.Type, got.Payload, c.code)
		}
	}

	// Listed without its code; revoked, it signs the guest out at once.
	var links struct{ Links []shared.ShareLink }
	raw := e.expect(http.StatusOK, "GET", "/api/v1/tasks/"+own.TaskID+"/links", "", &links, admin...)
	if len(links.Links) != 1 || links.Links[0].ID != link.ID || strings.Contains(raw, link.URL) {
		t.Errorf("links %s", raw)
	}
	e.expect(http.StatusNoContent, "DELETE", "/api/v1/tasks/"+own.TaskID+"/links/"+link.ID, "", nil, admin...)
	e.expect(http.StatusUnauthorized, "GET", "/api/v1/me", "", nil, guest...)
	if resp, _ := e.do("GET", link.URL, ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a revoked link opens: %d", resp.StatusCode)
	}
}

// Only the task's owner or an admin makes, lists and revokes its links.
func TestOnlyOwnersShareByLink(t *testing.T) {
	e := newEnv(t, withToken)
	admin, ada, bob, vic, task := e.people()
	path := "/api/v1/tasks/" + task.ID + "/links"
	e.expect(http.StatusCreated, "POST", path, `{"days":1}`, nil, ada...)
	e.expect(http.StatusOK, "POST", "/api/v1/tasks/"+task.ID+"/editors", `{"login":"bob"}`, nil, ada...)
	for who, h := range map[string][]string{"bob": bob, "vic": vic} {
		for _, m := range []string{"GET", "POST"} {
			if resp, raw := e.do(m, path, `{"days":1}`, h...); resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s %s links as %s: %d %s", m, path, who, resp.StatusCode, raw)
			}
		}
	}
	// The task list says so, for the page's Share button.
	for who, h := range map[string][]string{"admin": admin, "ada": ada, "bob": bob, "vic": vic} {
		want := who == "admin" || who == "ada"
		var list struct{ Tasks []shared.Task }
		e.expect(http.StatusOK, "GET", "/api/v1/tasks", "", &list, h...)
		if len(list.Tasks) != 1 || list.Tasks[0].MayShare != want {
			t.Errorf("%s's task list: %+v, want may_share %v", who, list.Tasks, want)
		}
	}
}

// A share link opened by someone signed in with an account asks before it swaps their
// sign-in for a guest's; opened from another site, whose navigation carries no Strict
// cookie, it first comes back from this origin to see who is signed in.
func TestShareLinkAsksFirst(t *testing.T) {
	e := newEnv(t, withToken)
	e.accountWithToken("ada", shared.RoleMember)
	sess := e.session()
	var link shared.ShareLink
	e.expect(http.StatusCreated, "POST", "/api/v1/tasks/"+sess.TaskID+"/links", `{"days":7}`, &link, "Authorization", "Bearer "+token)
	ada := e.signInAs("ada", "correct horse battery")
	signedInAs := func(cookie, want string) {
		t.Helper()
		var me shared.Account
		e.expect(http.StatusOK, "GET", "/api/v1/me", "", &me, "Cookie", cookie)
		if me.Login != want {
			t.Errorf("signed in as %q, want %q", me.Login, want)
		}
	}

	resp, body := e.do("GET", link.URL, "", "Sec-Fetch-Site", "cross-site")
	if resp.StatusCode != http.StatusOK || len(resp.Cookies()) != 0 || !strings.Contains(body, `<meta http-equiv="refresh" content="0">`) {
		t.Errorf("a link opened from another site: %d %v %s", resp.StatusCode, resp.Cookies(), body)
	}
	resp, body = e.do("GET", link.URL, "", "Cookie", ada, "Sec-Fetch-Site", "same-origin")
	if resp.StatusCode != http.StatusOK || len(resp.Cookies()) != 0 || !strings.Contains(body, "You are signed in as <strong>ada</strong>") || strings.Contains(body, "refresh") {
		t.Errorf("a link opened signed in as ada: %d %v %s", resp.StatusCode, resp.Cookies(), body)
	}
	signedInAs(ada, "ada")
	if resp, _ := e.do("POST", link.URL, "", "Cookie", ada, "Origin", "http://evil.example"); resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
		t.Errorf("the guest sign-in posted from another site: %d %v", resp.StatusCode, resp.Cookies())
	}
	resp, _ = e.do("POST", link.URL, "", "Cookie", ada, "Origin", "http://127.0.0.1:8080")
	if resp.StatusCode != http.StatusOK || len(resp.Cookies()) != 1 || resp.Header.Get("Referrer-Policy") != "same-origin" {
		t.Fatalf("open as a guest: %d %v", resp.StatusCode, resp.Cookies())
	}
	signedInAs(cookieName+"="+resp.Cookies()[0].Value, shared.GuestLogin)
	if resp, _ := e.do("GET", link.URL, ""); len(resp.Cookies()) != 1 { // signed in with nothing: at once
		t.Errorf("a link opened signed out: %d %v", resp.StatusCode, resp.Cookies())
	}
}

// An expired link opens nothing, as an unknown one, and its guest's sign-in and WebSocket
// end with it; the store's clock and the server's both move past the expiry.
func TestExpiredLinkIsRefused(t *testing.T) {
	e := newEnv(t, withToken)
	admin := []string{"Authorization", "Bearer " + token}
	sess := e.session()
	var link shared.ShareLink
	e.expect(http.StatusCreated, "POST", "/api/v1/tasks/"+sess.TaskID+"/links", `{"days":1}`, &link, admin...)
	resp, _ := e.do("GET", link.URL, "")
	if resp.StatusCode != http.StatusOK || len(resp.Cookies()) != 1 {
		t.Fatalf("opening the link: %d", resp.StatusCode)
	}
	guest := []string{"Cookie", cookieName + "=" + resp.Cookies()[0].Value}
	w, wresp, err := dial(t, e.listen(), http.Header{"Cookie": {guest[1]}})
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, wresp)
	}
	w.request(shared.ActionSubscribe, shared.SessionRef{SessionID: sess.ID})

	e.clock.Advance(24*time.Hour - time.Minute)
	e.stored.Advance(24*time.Hour - time.Minute)
	e.expect(http.StatusOK, "GET", "/api/v1/me", "", nil, guest...)
	e.hub.MessageAdded(e.text(sess.ID, "before the expiry"))
	if n := w.next(); !strings.Contains(string(n.Payload), "before the expiry") {
		t.Errorf("before the expiry the guest got %s %s", n.Action, n.Payload)
	}

	e.clock.Advance(2 * time.Minute)
	e.stored.Advance(2 * time.Minute)
	unknownResp, unknown := e.do("GET", "/share/wrong", "")
	expiredResp, expired := e.do("GET", link.URL, "")
	if expiredResp.StatusCode != http.StatusNotFound || expired != unknown || len(expiredResp.Cookies()) != 0 {
		t.Errorf("an expired link: %d %v %s; an unknown one: %d %s", expiredResp.StatusCode, expiredResp.Cookies(), expired, unknownResp.StatusCode, unknown)
	}
	e.expect(http.StatusUnauthorized, "GET", "/api/v1/me", "", nil, guest...)
	var links struct{ Links []shared.ShareLink }
	e.expect(http.StatusOK, "GET", "/api/v1/tasks/"+sess.TaskID+"/links", "", &links, admin...)
	if len(links.Links) != 0 {
		t.Errorf("an expired link is listed: %+v", links.Links)
	}
	e.hub.MessageAdded(e.text(sess.ID, "after the expiry"))
	expectSignedOut(t, w, "the link's expiry")
}

// A guest's task list is live for its one task: its changes come, another task's never,
// and its task's deletion ends the guest's connection (its link went with the task).
func TestGuestsTaskListIsLive(t *testing.T) {
	e := newEnv(t, withToken)
	admin := []string{"Authorization", "Bearer " + token}
	own, other := e.session(), e.session()
	var link shared.ShareLink
	e.expect(http.StatusCreated, "POST", "/api/v1/tasks/"+own.TaskID+"/links", `{"days":7}`, &link, admin...)
	resp, _ := e.do("GET", link.URL, "")
	addr := e.listen()
	guest, wresp, err := dial(t, addr, http.Header{"Cookie": {cookieName + "=" + resp.Cookies()[0].Value}})
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, wresp)
	}
	watcher, wresp, err := dial(t, addr, http.Header{"Authorization": {"Bearer " + token}})
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, wresp)
	}
	for _, w := range []*wsClient{guest, watcher} {
		if r := w.request(shared.ActionTasksSubscribe, struct{}{}); r.Type != shared.EnvelopeResponse {
			t.Fatalf("tasks.subscribe: %s", r.Payload)
		}
	}
	// Each change is awaited on the admin's list first, so the guest's next frame, if any,
	// is in flight already.
	change := func(taskID string) {
		t.Helper()
		e.hub.TaskChanged(taskID)
		for {
			var task shared.Task
			if n := watcher.next(); n.Action == shared.ActionTaskUpdated && n.Decode(&task) == nil && task.ID == taskID {
				return
			}
		}
	}
	change(other.TaskID)
	change(own.TaskID)
	var task shared.Task
	if n := guest.next(); n.Action != shared.ActionTaskUpdated || n.Decode(&task) != nil || task.ID != own.TaskID {
		t.Errorf("the guest's first live update: %s %s", n.Action, n.Payload)
	}
	e.expect(http.StatusNoContent, "DELETE", "/api/v1/tasks/"+other.TaskID, "", nil, admin...)
	e.expect(http.StatusNoContent, "DELETE", "/api/v1/tasks/"+own.TaskID, "", nil, admin...)
	// The guest may hear of its own task's deletion before the close (the two race), and
	// of nothing else.
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Limit(t))
	defer cancel()
	for {
		_, data, err := guest.c.Read(ctx)
		if err != nil {
			if websocket.CloseStatus(err) != shared.CloseSignedOut {
				t.Errorf("after its task's deletion: %v; want a close with %d", err, shared.CloseSignedOut)
			}
			return
		}
		var n shared.Envelope
		var gone struct {
			TaskID string `json:"task_id"`
		}
		if json.Unmarshal(data, &n) != nil || n.Action != shared.ActionTaskDeleted || n.Decode(&gone) != nil || gone.TaskID != own.TaskID {
			t.Fatalf("before the close the guest read %s", data)
		}
	}
}
