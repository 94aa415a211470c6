//go:build !js

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"conch/server/push/pushtest"
	"conch/shared"
)

// A person turns notifications on in the Account page, the real server sends the next
// permission request through Web Push, and the page's service worker shows it and opens
// the session on a click. Chromium here reaches no push service, so what
// pushManager.subscribe does is logged, and the page gets a subscription to a push
// service on 127.0.0.1 instead (the same object the browser would give); the push itself
// is the server's real, encrypted request, decrypted here with the subscription's keys.
// The worker gets the payload as a push event dispatched in it
// (TestNotificationClickOpensSession clicks it).
// Screenshots: artifacts/push-off-*.png.
func TestPushOptInAndNotification(t *testing.T) {
	t.Parallel()
	s, _ := startAgentsServer(t, "--push-allow-private") // the push service is on 127.0.0.1
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	bodies := make(chan []byte, 4)
	service := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusCreated)
		bodies <- body
	}))
	defer service.Close()
	browserKeys, err := pushtest.NewBrowser(service.URL + "/push/e2e")
	if err != nil {
		t.Fatal(err)
	}
	subJSON, err := json.Marshal(browserKeys.Subscription(false))
	if err != nil {
		t.Fatal(err)
	}
	key, err := s.API.PushKey(ctx)
	if err != nil {
		t.Fatal(err)
	}

	b := ownBrowser(t) // subscribing needs the push service, which a browser context lacks
	for _, name := range []string{"notifications", "push"} {
		send(t, b, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{Origin: s.URL, Setting: cdpbrowser.PermissionSettingGranted,
			Permission: &cdpbrowser.PermissionDescriptor{Name: name, UserVisibleOnly: true}, BrowserContextID: b.contextID()})
	}
	b.do(t, chromedp.Navigate(s.URL+"/account"))
	b.waitFor(t, "the notifications card, off", `!document.getElementById("app-wasm-loader") && `+pushCard("Off", "Turn on notifications"))
	b.screenshots(t, "push-off", ".push-card")
	b.do(t, chromedp.EmulateViewport(1280, 900))

	// Chromium's own pushManager.subscribe, offline, never settles: the page gives up
	// after conchPushWaitMs and says why, and nothing is stored.
	b.do(t, chromedp.Evaluate[chromedp.Void](`conchPushWaitMs = 1000`))
	b.do(t, chromedp.Click(chromedp.CSS("#push-toggle")))
	b.waitFor(t, "the push service's silence explained", `(document.querySelector(".push-card .alert") || {textContent: ""}).textContent.includes("did not answer within 1 s")`)
	if status := b.text(t, "#push-status"); !strings.HasPrefix(status, "Off") {
		t.Errorf("status after a failed subscription: %q", status)
	}

	b.do(t, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
		const json = %s;
		let current = null;
		const sub = {endpoint: json.endpoint, toJSON: () => json, unsubscribe: async () => { current = null; return true; }};
		PushManager.prototype.subscribe = async function (options) { window.conchKeyUsed = options.applicationServerKey; current = sub; return sub; };
		PushManager.prototype.getSubscription = async function () { return current; };
	})()`, subJSON)))
	b.do(t, chromedp.Click(chromedp.CSS("#push-toggle")))
	b.waitFor(t, "the notifications card, on, with a way to turn them off", pushCard("On", "Turn off notifications"))
	sess := s.sessionOf(t, "Push me", askingAgent)
	if _, err := s.API.SendMessage(ctx, sess.ID, "echo pushed", ""); err != nil {
		t.Fatal(err)
	}
	var body []byte
	select {
	case body = <-bodies:
	case <-ctx.Done():
		t.Fatal("the server sent no push for the permission request")
	}
	if used := eval[string](t, b, `window.conchKeyUsed`); used != key {
		t.Errorf("subscribed with key %q, want the server's %q", used, key)
	}
	payload, err := browserKeys.Decrypt(body)
	if err != nil {
		t.Fatal(err)
	}
	var n shared.PushNotification
	if err := json.Unmarshal(payload, &n); err != nil {
		t.Fatal(err)
	}
	if n.Title != "Push me" || n.Path != "/sessions/"+sess.ID || !strings.HasPrefix(n.Body, "Asks permission: ") {
		t.Errorf("payload %+v", n)
	}

	// In the worker: a push of another path shows nothing; the server's payload shows
	// its notification.
	worker := workerContext(t, b, s.URL)
	shown := evalIn[string](t, worker, fmt.Sprintf(`(async () => {
		self.dispatchEvent(new PushEvent("push", {data: JSON.stringify({title: "x", body: "y", path: "https://evil.example/", tag: "t"})}));
		self.dispatchEvent(new PushEvent("push", {data: %q}));
		for (let i = 0; i < 100; i++) {
			const ns = await self.registration.getNotifications();
			if (ns.length > 0) {
				return JSON.stringify(ns.map((n) => ({Title: n.title, Body: n.body, Tag: n.tag, Path: n.data.goapp.path})));
			}
			await new Promise((r) => setTimeout(r, 50));
		}
		return "none";
	})()`, payload))
	want, _ := json.Marshal([]struct{ Title, Body, Tag, Path string }{{n.Title, n.Body, n.Tag, n.Path}})
	if shown != string(want) {
		t.Fatalf("the worker shows %s, want %s", shown, want)
	}

	// Off again: the browser's subscription ends and the server forgets it.
	b.do(t, chromedp.Click(chromedp.CSS("#push-toggle")))
	b.waitFor(t, "the notifications card, off again", pushCard("Off", "Turn on notifications"))
	if err := s.API.UnsubscribePush(ctx, browserKeys.Endpoint); shared.ErrorCode(err) != shared.CodeNotFound {
		t.Errorf("the server still had the subscription after turning off: %v", err)
	}
}

// pushCard is true when the notifications card's status starts with status and its
// button, enabled, says button.
func pushCard(status, button string) string {
	return fmt.Sprintf(`(() => {
		const s = document.querySelector("#push-status"), b = document.querySelector("#push-toggle");
		return !!s && !!b && s.textContent.startsWith(%q) && b.textContent === %q && !b.disabled;
	})()`, status, button)
}

// workerContext is a context of origin's service worker.
func workerContext(t *testing.T, b *browser, origin string) context.Context {
	t.Helper()
	targets, err := chromedp.Targets(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range targets {
		if info.Type == "service_worker" && strings.HasPrefix(info.URL, origin+"/") { // the browser is shared with other tests' servers
			ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithTargetID(info.TargetID))
			t.Cleanup(cancel)
			// Attach now: chromedp ties a target to the context of its first Run, and
			// evalIn's ends with each evaluation.
			if err := chromedp.Do(ctx); err != nil {
				t.Fatal(err)
			}
			return ctx
		}
	}
	t.Fatal("no service worker")
	return nil
}

// evalIn evaluates js in ctx's target; a promise is awaited.
func evalIn[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

// A click on a notification opens its session: in a window of the app that shows
// another page, by go-app's in-app navigation (the page really moves); a window already
// showing the session is focused; with no window of the app, one is opened at the deep
// link; a path that leaves the origin opens nothing. Headless Chromium cannot click a
// notification (no DevTools command does), so the worker is given a notificationclick on
// the real notification it showed; Chromium then refuses focus() and openWindow() to a
// click the person did not make, so those two are recorded as they are called.
func TestNotificationClickOpensSession(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	sess := s.sessionOf(t, "Click me", "shell")
	b := newBrowser(t)
	send(t, b, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{Origin: s.URL, Setting: cdpbrowser.PermissionSettingGranted,
		Permission: &cdpbrowser.PermissionDescriptor{Name: "notifications"}, BrowserContextID: b.contextID()})
	b.do(t, chromedp.Navigate(s.URL+"/account"))
	b.waitFor(t, "the app, under its service worker", `!document.getElementById("app-wasm-loader") && !!navigator.serviceWorker.controller`)
	worker := workerContext(t, b, s.URL)
	deepLink := "/sessions/" + sess.ID
	pushed := fmt.Sprintf(`{title: "Click me", body: "The agent's turn ended.", path: %q, tag: "conch-%s"}`, deepLink, sess.ID)

	if got, want := clickNotification(t, worker, pushed), `["focus /account","closed"]`; got != want {
		t.Errorf("a click with the app on another page: %s, want %s", got, want)
	}
	b.waitFor(t, "the session page, navigated to in the app", fmt.Sprintf(`location.pathname === %q && !!document.querySelector(".live")`, deepLink))

	// A window that loaded the session (a client's URL is the one it loaded with).
	b.open(t, s.URL+deepLink)
	if got, want := clickNotification(t, worker, pushed), `["focus `+deepLink+`","closed"]`; got != want {
		t.Errorf("a click with the session showing: %s, want %s", got, want)
	}

	// go-app's own notifications carry their path the same way; "//host/" is a path too.
	leaving := `{title: "x", body: "y", path: "/sessions/x", tag: "t", data: {goapp: {path: "//evil.example/sessions/x"}}}`
	if got, want := clickNotification(t, worker, leaving), `["closed"]`; got != want {
		t.Errorf("a click on a path to another origin: %s, want %s", got, want)
	}

	b.do(t, chromedp.Navigate("about:blank"))
	if got, want := clickNotification(t, worker, pushed), `["open `+s.URL+deepLink+`","closed"]`; got != want {
		t.Errorf("a click with no window of the app: %s, want %s", got, want)
	}
}

// clickNotification has the worker show notification (a push payload: it goes through
// the worker's push handler, unless it carries its own data), click it, and wait for
// the click's work. It answers, in JSON, the focus() and openWindow() calls the click
// made and "closed" when the notification is gone.
func clickNotification(t *testing.T, worker context.Context, notification string) string {
	t.Helper()
	return evalIn[string](t, worker, fmt.Sprintf(`(async () => {
		const n = %s;
		// A script's event may not wait (waitUntil throws): take what the handler gives it.
		const dispatch = async (event) => {
			let work = Promise.resolve();
			event.waitUntil = (p) => { work = p; };
			self.dispatchEvent(event);
			await work.catch(() => {}); // the browser refuses focus and openWindow here
		};
		if (n.data) {
			await self.registration.showNotification(n.title, {body: n.body, tag: n.tag, data: n.data});
		} else {
			await dispatch(new PushEvent("push", {data: JSON.stringify(n)}));
		}
		const [shown] = await self.registration.getNotifications({tag: n.tag});
		if (!shown) {
			return "not shown";
		}
		const calls = [];
		const focus = WindowClient.prototype.focus, open = clients.openWindow;
		WindowClient.prototype.focus = function () { calls.push("focus " + new URL(this.url).pathname); return focus.call(this); };
		clients.openWindow = (url) => { calls.push("open " + url); return open.call(clients, url); };
		try {
			await dispatch(new NotificationEvent("notificationclick", {notification: shown}));
		} finally {
			WindowClient.prototype.focus = focus;
			clients.openWindow = open;
		}
		if ((await self.registration.getNotifications({tag: n.tag})).length === 0) {
			calls.push("closed");
		}
		return JSON.stringify(calls);
	})()`, notification))
}

// When the push service renews a browser's subscription (pushsubscriptionchange), the
// worker tells the server, which drops the old one: with the browser's new subscription,
// or, where the browser gave none, one the worker makes with the server's key. The worker
// gets the event dispatched in it (Chromium does not fire it).
func TestPushSubscriptionRenewed(t *testing.T) {
	t.Parallel()
	s := startServerAt(t, "127.0.0.1:0", filepath.Join(t.TempDir(), "conch.db"), "--push-allow-private") // endpoints on 127.0.0.1
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	subs := make([]string, 3) // the subscriptions' JSON, one push endpoint each
	for i := range subs {
		keys, err := pushtest.NewBrowser(fmt.Sprintf("http://127.0.0.1:9/push/%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if _, err := s.API.SubscribePush(ctx, keys.Subscription(false)); err != nil {
				t.Fatal(err)
			}
		}
		b, err := json.Marshal(keys.Subscription(false))
		if err != nil {
			t.Fatal(err)
		}
		subs[i] = string(b)
	}
	key, err := s.API.PushKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t)
	b.do(t, chromedp.Navigate(s.URL+"/account"))
	b.waitFor(t, "the app, under its service worker", `!document.getElementById("app-wasm-loader") && !!navigator.serviceWorker.controller`)
	worker := workerContext(t, b, s.URL)
	renew := func(old, given, made string) string {
		return evalIn[string](t, worker, fmt.Sprintf(`(async () => {
			const old = %s, given = %s, made = %s;
			const asSub = (json) => json && {endpoint: json.endpoint, toJSON: () => json};
			let used = "none";
			self.registration.pushManager.subscribe = async (options) => { used = options.applicationServerKey; return asSub(made); };
			const event = new Event("pushsubscriptionchange");
			let work = Promise.resolve();
			event.waitUntil = (p) => { work = p; }; // a script's event may not wait
			event.oldSubscription = asSub(old);
			event.newSubscription = asSub(given);
			self.dispatchEvent(event);
			await work;
			return used;
		})()`, old, given, made))
	}
	endpoint := func(i int) string { return fmt.Sprintf("http://127.0.0.1:9/push/%d", i) }

	if used := renew(subs[0], subs[1], "null"); used != "none" {
		t.Errorf("the worker subscribed (key %q) though the browser gave the new subscription", used)
	}
	if used := renew(subs[1], "null", subs[2]); used != key {
		t.Errorf("the worker subscribed with key %q, want the server's %q", used, key)
	}
	for i, want := range []string{shared.CodeNotFound, shared.CodeNotFound, ""} {
		if err := s.API.UnsubscribePush(ctx, endpoint(i)); shared.ErrorCode(err) != want {
			t.Errorf("unsubscribe %s: %v, want code %q (only the last renewal kept)", endpoint(i), err, want)
		}
	}
}
