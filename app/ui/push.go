package ui

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/shared"
)

// Web Push (docs/API.md, "Notifications"): the Account page turns notifications on for
// this browser (pushToggle): the browser subscribes through the page's service worker with
// the server's VAPID key, and the server stores the subscription. The worker then shows
// what the server sends, also with no tab open, and a click opens the session.

// The states of this browser's notifications.
const (
	pushUnknown     = ""
	pushOn          = "on"
	pushOff         = "off"
	pushBlocked     = "blocked"     // the person refused notifications to this site
	pushUnsupported = "unsupported" // no service worker, Push API or notifications here
)

// pushToggle is the Account page's card that turns this browser's notifications on and
// off.
type pushToggle struct {
	app.Compo
	state string
	every bool // told of every task, not only one's own and those shared with one
	busy  bool
	err   string
	// ctx is the card's own context, which lives as long as the card: the answer to a
	// click is dispatched through it, not through the click's, because go-app drops a
	// Dispatch whose element is gone, and the clicked button may be (clearing the last
	// error re-renders the card's controls).
	ctx app.Context
}

func (p *pushToggle) OnMount(ctx app.Context) {
	p.ctx = ctx
	ctx.Async(func() {
		v, err := awaitJS("conchPushState")
		ctx.Dispatch(func(app.Context) {
			switch {
			case err != nil:
				p.err = whyNot("Could not read this browser's notifications", err)
			case v == pushUnsupported || v == pushBlocked:
				p.state = v
			case v != "":
				p.state = pushOn
			default:
				p.state = pushOff
			}
		})
	})
}

// turnOn asks for the permission (in the click, as browsers require), subscribes the
// browser, and gives the subscription to the server.
func (p *pushToggle) turnOn(app.Context, app.Event) {
	every := p.every
	p.run(pushOn, "Notifications could not be turned on", func() error {
		key, err := api.PushKey(context.Background())
		if err != nil {
			return err
		}
		raw, err := awaitJS("conchPushSubscribe", key)
		if err != nil {
			return err
		}
		var sub shared.PushSubscription
		if err := json.Unmarshal([]byte(raw), &sub); err != nil {
			return err
		}
		sub.EveryTask = every
		_, err = api.SubscribePush(context.Background(), sub)
		return err
	})
}

func (p *pushToggle) turnOff(app.Context, app.Event) {
	p.run(pushOff, "Notifications could not be turned off", func() error {
		endpoint, err := awaitJS("conchPushUnsubscribe")
		if err == nil && endpoint != "" {
			err = api.UnsubscribePush(context.Background(), endpoint)
		}
		return err
	})
}

// run does work off the UI goroutine, then shows the card in state, or why not.
func (p *pushToggle) run(state, what string, work func() error) {
	p.busy, p.err = true, ""
	p.ctx.Async(func() {
		err := work()
		p.ctx.Dispatch(func(app.Context) { p.done(err, state, what) })
	})
}

func (p *pushToggle) done(err error, state, what string) {
	p.busy = false
	if err != nil {
		p.err = whyNot(what, err)
		if strings.Contains(err.Error(), "blocked") {
			p.state = pushBlocked
		}
		return
	}
	p.state = state
}

func (p *pushToggle) Render() app.UI {
	status := map[string]string{
		pushUnknown:     "Reading this browser's notifications…",
		pushOn:          "On: this browser is told when a task needs you, also with no Conch tab open.",
		pushOff:         "Off on this browser.",
		pushBlocked:     "Blocked: this site may not show notifications. Allow them in the browser's site settings, then turn them on here.",
		pushUnsupported: "This browser cannot receive notifications from Conch (it needs a service worker and the Push API; on an iPhone, add Conch to the Home Screen first).",
	}[p.state]
	return app.Section().Class("new-task", "account-card", "push-card").Body(
		app.H2().Text("Notifications"),
		app.P().Class("empty").Text("A permission request or a finished turn of a task you own or edit, with a link to its session. "+
			"It lasts while this browser stays signed in."),
		app.P().ID("push-status").Role("status").Text(status),
		app.If(p.err != "", func() app.UI { return app.P().Class("alert").Role("alert").Text(p.err) }),
		app.If(p.state == pushOff || p.state == pushBlocked, func() app.UI {
			return app.Div().Class("inline-form").Body(
				app.Label().Class("check").Body(
					app.Input().Type("checkbox").ID("push-every").Checked(p.every).OnChange(func(ctx app.Context, e app.Event) {
						p.every = ctx.JSSrc().Get("checked").Bool()
					}),
					app.Text(" Every task I can read, not only mine"),
				),
				app.Button().Type("button").ID("push-toggle").Disabled(p.busy).OnClick(p.turnOn).Text("Turn on notifications"),
			)
		}),
		app.If(p.state == pushOn, func() app.UI {
			return app.Button().Type("button").ID("push-toggle").Class("secondary").Disabled(p.busy).OnClick(p.turnOff).Text("Turn off notifications")
		}),
	)
}

// awaitJS calls one of conch.js's push functions, which resolve to {value, error} and
// never reject, and waits for it (from an Async goroutine, never the UI's).
func awaitJS(fn string, args ...any) (string, error) {
	type result struct{ value, err string }
	ch := make(chan result, 1)
	app.Window().Call(fn, args...).Then(func(v app.Value) {
		ch <- result{v.Get("value").String(), v.Get("error").String()}
	})
	r := <-ch
	if r.err != "" { // the browser's reason, said as it is (not as an internal failure)
		return "", shared.Errorf(shared.CodeInvalid, "%s", r.err)
	}
	return r.value, nil
}

// The worker's push and click handlers, in place of go-app's (with one for a renewed
// subscription, which go-app has not): a notification is shown only
// for a session path, replaces the older one of its session (tag), and a click focuses a
// window already showing the session, else has an open window of the app go there
// (go-app's in-app navigation), else opens one. go-app's own notifications (notify.go)
// carry their path the same way, in data.goapp.path; a click opens only this origin's.
const conchPush = `self.addEventListener("push", (event) => {
  let n = null;
  try {
    n = event.data ? event.data.json() : null;
  } catch {
    n = null;
  }
  if (!n || typeof n.path !== "string" || !n.path.startsWith("/sessions/")) {
    return;
  }
  event.waitUntil(self.registration.showNotification(String(n.title || "Conch"), {
    body: String(n.body || ""),
    tag: String(n.tag || n.path),
    renotify: true,
    icon: "/web/icon-192.png",
    data: {goapp: {path: n.path, actions: []}},
  }));
});

// The push service renewed or ended this browser's subscription: subscribe again with the
// server's key where the browser gave none, and tell the server, which drops the old one.
self.addEventListener("pushsubscriptionchange", (event) => {
  event.waitUntil(renewPush(event.oldSubscription, event.newSubscription));
});

async function renewPush(old, sub) {
  if (!sub) {
    const r = await fetch("/api/v1/push/key");
    if (!r.ok) {
      return;
    }
    const {public_key} = await r.json();
    sub = await self.registration.pushManager.subscribe({userVisibleOnly: true, applicationServerKey: public_key});
  }
  const body = Object.assign({}, sub.toJSON(), {replaces: old ? old.endpoint : ""});
  await fetch("/api/v1/push/subscriptions", {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
}

`

const conchClick = `self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const data = event.notification.data || {};
  const path = data.goapp && data.goapp.path;
  if (typeof path !== "string") {
    return;
  }
  const url = new URL(path, self.location.origin);
  if (url.origin !== self.location.origin) {
    return; // "//host/…" is a path too
  }
  event.waitUntil(openPath(url));
});

async function openPath(url) {
  const windows = await clients.matchAll({type: "window", includeUncontrolled: true});
  const showing = windows.find((w) => new URL(w.url).pathname === url.pathname);
  if (showing) {
    return showing.focus();
  }
  const open = windows.find((w) => new URL(w.url).origin === url.origin);
  if (open) {
    open.postMessage({goapp: {type: "notification", path: url.pathname}});
    return open.focus();
  }
  return clients.openWindow(url.href);
}`

// replaceWorkerHandlers puts conchPush and conchClick in place of go-app's: its push
// listener runs up to its message listener, its click listener to the end of the file.
func replaceWorkerHandlers(js string) string {
	const push, message, click = `self.addEventListener("push", (event) => {`, `self.addEventListener("message", (event) => {`, `self.addEventListener("notificationclick", (event) => {`
	p, c := strings.Index(js, push), strings.Index(js, click)
	m := strings.Index(js[max(p, 0):], message)
	if strings.Count(js, push) != 1 || strings.Count(js, click) != 1 || m < 0 || c < p || !strings.HasSuffix(strings.TrimSpace(js), "});") {
		panic("ui: go-app's service worker changed; update replaceWorkerHandlers")
	}
	return js[:p] + conchPush + js[p+m:c] + conchClick + "\n"
}
