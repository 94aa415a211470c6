// Package ui is Conch's go-app PWA: the task list, a session's chat with its command rows
// and on-demand output (docs/API.md, "The one idea: summaries travel, bodies are
// fetched"), and the settings of the handler that serves it.
// Routes is called by both wasm/main.go and the server, so prerendered pages exist.
package ui

import (
	"net/url"
	"strings"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/app/client"
	"conch/shared"
)

// Version identifies the build; set with -ldflags "-X conch/app/ui.Version=...". When it
// is empty the hash of the app.wasm being served is used, so a restart alone never looks
// like an update to installed clients.
var Version string

// api is the client of the server the page came from.
var api = client.New("")

// Routes registers the pages.
func Routes() {
	app.Route("/", func() app.Composer { return &TasksPage{} })
	app.RouteWithRegexp("^/sessions/[^/]+$", newSessionPage)
	app.RouteWithRegexp("^/sessions/[^/]+/replay$", newReplayPage)
	app.RouteWithRegexp("^/tasks/[^/]+/changes$", newChangesPage)
	app.RouteWithRegexp("^/tasks/[^/]+/attempts$", newAttemptsPage)
	app.Route("/account", newAccountPage)
	app.Route("/search", newSearchPage)
}

// signInEnv is set in the page's environment when the server asks people to sign in.
const signInEnv = "CONCH_SIGN_IN"

// sameOrigin resolves /web/ paths to themselves. It is not an http.Handler, so go-app
// serves no files of its own: the server serves /web/ (app.LocalDir, the default, would
// read the working directory).
type sameOrigin struct{}

// Resolve returns location as an escaped URL. go-app also resolves the path of the page
// asked for, which anyone can make a link to, and writes it into the page's head (og:url)
// with Go quoting, not HTML escaping (see markup.go). A location that is no clean URL,
// even once escaped (such a path may hold "?"), is taken as a path and escaped whole.
func (sameOrigin) Resolve(location string) string {
	if location == "" {
		return "/"
	}
	if cleanURL(location) && shared.Linkable(location) { // an agent's link (markdown.go), written for the attribute
		return location
	}
	if u, err := url.Parse(location); err == nil && cleanURL(u.String()) {
		return u.String()
	}
	return (&url.URL{Path: location}).EscapedPath()
}

// cleanURL reports whether s holds only printable ASCII with no meaning in HTML or in Go
// quoting: what an escaped URL holds.
func cleanURL(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r > '~' || strings.ContainsRune("\"'<>\\`", r) })
}

// go-app's worker answers cache-first and caches only "/", so a deep link such as
// /sessions/ID would not open offline. Navigations go to the network (the request sent
// while the worker starts: navigation preload); the session pages
// (each carries its newest messages, prerendered and as the boot payload) are kept in the
// "conch-pages" cache, newest pagesKept of them, also when the app asks for the page it
// shows (a message "conch:keep-page": pages opened inside the app are no navigation).
// When the network fails, the kept copy of the page answers, else the cached shell (the
// WASM app then renders the route itself); the page says it is offline and since when its
// messages are. The bodies a person opened (GET .../shell-output, .../tool-content and an
// error's .../error-detail) go to the network too, and their whole 200
// answers are kept in the "conch-outputs" cache, newest outputsKept of them; when the
// network fails, the kept copy answers, marked X-Conch-Offline: 1 so the page can say it
// may be stale. The rest of the API, the WebSocket and other methods bypass the worker, so
// nothing else stale is served; the page's aborts reach the server through the request's
// signal, which the worker's fetch carries.
const workerFetch = `self.addEventListener("fetch", (event) => {
  event.respondWith(fetchWithCache(event.request));
});`

const conchFetch = `self.addEventListener("fetch", (event) => {
  const request = event.request;
  const url = new URL(request.url);
  if (request.method !== "GET" || url.origin !== self.location.origin) {
    return;
  }
  if (url.pathname.startsWith("/api/") &&
      (url.pathname.endsWith("/shell-output") || url.pathname.endsWith("/tool-content") ||
       url.pathname.endsWith("/error-detail"))) {
    event.respondWith(output(event, request, url));
    return;
  }
  if (url.pathname.startsWith("/api/") || url.pathname === "/ws" || url.pathname === "/healthz") {
    return;
  }
  if (request.mode === "navigate") {
    event.respondWith(navigate(event, request, url));
    return;
  }
  event.respondWith(fetchWithCache(request));
});

self.addEventListener("message", (event) => {
  const msg = event.data;
  if (msg && msg.type === "conch:keep-page" && typeof msg.path === "string" && msg.path.startsWith("/sessions/")) {
    // Offline there is nothing newer to keep: the copy already kept stays.
    event.waitUntil(fetch(msg.path).then((response) => keepPage(new URL(response.url), response)).catch(() => {}));
  }
});

const pagesCache = "conch-pages";
const pagesKept = ` + pagesKept + `;

// Navigation preload: the browser sends a navigation's request while the worker starts, so
// going through the worker costs a page no time.
self.addEventListener("activate", (event) => {
  if (self.registration.navigationPreload) {
    event.waitUntil(self.registration.navigationPreload.enable());
  }
});

async function navigate(event, request, url) {
  try {
    const response = (await event.preloadResponse) || await fetch(request);
    event.waitUntil(keepPage(url, response.clone()));
    return response;
  } catch (err) {
    const kept = await caches.match(url.origin + url.pathname, {cacheName: pagesCache});
    if (kept) {
      return kept;
    }
    const shell = await caches.match("/");
    if (shell) {
      return shell;
    }
    throw err;
  }
}

// keepPage keeps a session page answered in full, keyed without its query.
async function keepPage(url, response) {
  if (response.status !== 200 || response.type !== "basic" || response.redirected || !url.pathname.startsWith("/sessions/")) {
    return;
  }
  const headers = {"Content-Type": response.headers.get("Content-Type") || "text/html"};
  await keepNewest(pagesCache, pagesKept, url.origin + url.pathname, await response.text(), headers);
}

const outputsCache = "conch-outputs";
const outputsKept = ` + outputsKept + `;

// output answers from the network and keeps whole snapshots, keyed without the offsets;
// offline it answers the kept copy.
async function output(event, request, url) {
  url.search = "";
  const key = url.href;
  let response;
  try {
    response = await fetch(request);
  } catch (err) {
    if (request.signal.aborted) {
      throw err; // the page gave up on it
    }
    const cache = await caches.open(outputsCache);
    const kept = await cache.match(key);
    if (!kept) {
      throw err;
    }
    const headers = new Headers(kept.headers);
    headers.set("` + shared.OfflineHeader + `", "1");
    return new Response(kept.body, {status: 200, headers: headers});
  }
  if (response.status === 200) {
    event.waitUntil(keep(key, response.clone()));
  }
  return response;
}

// keep stores a whole snapshot (an answer that only appends is not one).
async function keep(key, response) {
  const text = await response.text();
  if (JSON.parse(text).append === true) {
    return;
  }
  const headers = {"Content-Type": response.headers.get("Content-Type") || "application/json"};
  const etag = response.headers.get("ETag");
  if (etag) {
    headers["ETag"] = etag;
  }
  await keepNewest(outputsCache, outputsKept, key, text, headers);
}

// keepNewest stores text as the newest entry of the cache name, and forgets the oldest
// beyond max.
async function keepNewest(name, max, key, text, headers) {
  const cache = await caches.open(name);
  await cache.delete(key); // put after delete: the entry moves to the end, the newest
  await cache.put(key, new Response(text, {headers: headers}));
  const keys = await cache.keys();
  for (const old of keys.slice(0, Math.max(0, keys.length - max))) {
    await cache.delete(old);
  }
}`

// outputsKept bounds the outputs the worker keeps for reading offline: at most 32 snapshots,
// each at most the kept 256 KiB per stream. pagesKept bounds the session pages: each holds
// at most one page of projected messages (pageSize), no output body.
const (
	outputsKept = "32"
	pagesKept   = "16"
)

// A new version's worker deletes every cache but its own when it activates; the outputs
// and pages kept for reading offline outlive an update. Signing out clears them all (the
// server's Clear-Site-Data).
const (
	workerCleanup = `if (key !== cacheName) {`
	conchCleanup  = `if (key !== cacheName && key !== outputsCache && key !== pagesCache) {`
)

// serviceWorker is built by the server only: go-app's worker template is not in the WASM
// build. It is go-app's worker with its fetch handler, its cache cleanup and its push
// handlers (push.go) replaced.
func serviceWorker() string {
	js := app.DefaultAppWorkerJS
	for _, edit := range [][2]string{{workerFetch, conchFetch}, {workerCleanup, conchCleanup}} {
		if strings.Count(js, edit[0]) != 1 {
			panic("ui: go-app's service worker changed; update " + edit[0])
		}
		js = strings.Replace(js, edit[0], edit[1], 1)
	}
	return replaceWorkerHandlers(js)
}
