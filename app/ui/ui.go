// Package ui is Conch's go-app PWA: the task list, a session's chat with its command rows
// and on-demand output (ADR-0042), and the settings of the handler that serves it.
// Routes is called by both wasm/main.go and the server, so prerendered pages exist.
package ui

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/app/client"
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
	app.RouteWithRegexp("^/sessions/[^/]+$", func() app.Composer { return &SessionPage{} })
}

// Handler returns the go-app handler that serves the pages and the PWA files (manifest,
// worker, wasm_exec.js). The files under /web/ are the server's to serve: wasm is the
// app.wasm it serves there (nil when the UI is not built), of which the handler needs the
// size and, without a Version, the hash. signIn says people sign in (the server has a
// token), so the pages offer to sign out.
func Handler(wasm []byte, signIn bool) *app.Handler {
	env := map[string]string{}
	if signIn {
		env[signInEnv] = "1"
	}
	return &app.Handler{
		Name:        "Conch",
		ShortName:   "Conch",
		Title:       "Conch",
		Description: "Run AI coding agents and watch their work.",
		Icon: app.Icon{
			Default:  "/web/icon-192.png",
			Large:    "/web/icon-512.png",
			Maskable: "/web/icon-maskable.png",
			SVG:      "/web/icon.svg",
		},
		BackgroundColor:       "#111827",
		ThemeColor:            "#111827",
		LoadingLabel:          "Loading Conch… {progress}%",
		Styles:                []string{"/web/app.css", "/web/term.css"},
		CacheableResources:    []string{"/web/icon.svg"},
		Scripts:               []string{"/web/conch.js"}, // the update hook and form keys; a file, so the CSP needs no inline script
		Version:               version(wasm),
		WasmContentLength:     strconv.Itoa(len(wasm)), // raw: the loader's progress, also when it travels compressed
		ServiceWorkerTemplate: serviceWorker(),
		Resources:             sameOrigin{},
		Env:                   env,
	}
}

// signInEnv is set in the page's environment when the server asks people to sign in.
const signInEnv = "CONCH_SIGN_IN"

// sameOrigin resolves /web/ paths to themselves. It is not an http.Handler, so go-app
// serves no files of its own: the server serves /web/ (app.LocalDir, the default, would
// read the working directory).
type sameOrigin struct{}

func (sameOrigin) Resolve(location string) string {
	if location == "" {
		return "/"
	}
	return location
}

func version(wasm []byte) string {
	if Version != "" {
		return Version
	}
	sum := sha256.Sum256(wasm)
	return hex.EncodeToString(sum[:8])
}

// go-app's worker answers cache-first and caches only "/", so a deep link such as
// /sessions/ID would not open offline. Navigations go to the network and fall back to the
// cached shell (the WASM app then renders the route itself); the API, the WebSocket and
// other methods bypass the worker so aborts reach the server and nothing stale is served.
const workerFetch = `self.addEventListener("fetch", (event) => {
  event.respondWith(fetchWithCache(event.request));
});`

const conchFetch = `self.addEventListener("fetch", (event) => {
  const request = event.request;
  const url = new URL(request.url);
  if (request.method !== "GET" || url.origin !== self.location.origin ||
      url.pathname.startsWith("/api/") || url.pathname === "/ws" || url.pathname === "/healthz") {
    return;
  }
  if (request.mode === "navigate") {
    event.respondWith(navigate(request));
    return;
  }
  event.respondWith(fetchWithCache(request));
});

async function navigate(request) {
  try {
    return await fetch(request);
  } catch (err) {
    const shell = await caches.match("/");
    if (shell) {
      return shell;
    }
    throw err;
  }
}`

// serviceWorker is built by the server only: go-app's worker template is not in the WASM build.
func serviceWorker() string {
	if !strings.Contains(app.DefaultAppWorkerJS, workerFetch) {
		panic("ui: go-app's service worker changed; update conchFetch")
	}
	return strings.Replace(app.DefaultAppWorkerJS, workerFetch, conchFetch, 1)
}
