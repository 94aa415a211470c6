//go:build !js

// The handler serves pages from the server; the browser build has no ServeHTTP
// (wasm/go-app/README.md).

package ui

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"conch/app/client"
)

func get(t *testing.T, h http.Handler, path string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	res := rec.Result()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func TestHandler(t *testing.T) {
	Routes()
	h := Handler([]byte("\x00asm"), false, nil)

	t.Run("deep links prerender without calling the API", func(t *testing.T) {
		var calls atomic.Int32
		apiSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			w.WriteHeader(http.StatusTeapot)
		}))
		defer apiSrv.Close()
		saved := api
		api = client.New(apiSrv.URL)
		defer func() { api = saved }()

		for _, path := range []string{"/", "/sessions/0192-abc"} {
			res, body := get(t, h, path)
			if res.StatusCode != 200 || !strings.Contains(body, `<div class="page`) {
				t.Fatalf("GET %s: %d\n%s", path, res.StatusCode, body)
			}
		}
		if n := calls.Load(); n != 0 {
			t.Fatalf("prerendering called the API %d times", n)
		}
		_, body := get(t, h, "/sessions/0192-abc")
		if !strings.Contains(body, "Loading messages…") || !strings.Contains(body, `<script src="/web/conch.js"></script>`) {
			t.Fatalf("session page shell lacks its loading state or its script:\n%s", body)
		}
		// The Content-Security-Policy allows no inline script: every script is a file.
		if n, files := strings.Count(body, "<script"), strings.Count(body, "<script defer src=")+strings.Count(body, "<script src="); n != files {
			t.Fatalf("%d of %d scripts are inline:\n%s", n-files, n, body)
		}
	})

	t.Run("manifest icons are local", func(t *testing.T) {
		_, body := get(t, h, "/manifest.webmanifest")
		var m struct {
			Icons []struct{ Src, Type string } `json:"icons"`
		}
		if err := json.Unmarshal([]byte(body), &m); err != nil {
			t.Fatal(err)
		}
		types := map[string]bool{}
		for _, i := range m.Icons {
			if !strings.HasPrefix(i.Src, "/web/") {
				t.Errorf("icon %s is not served by Conch", i.Src)
			}
			types[i.Type] = true
		}
		if !types["image/svg+xml"] || !types["image/png"] {
			t.Errorf("icon types %v, want png and svg", types)
		}
	})

	t.Run("the worker keeps session pages and serves them or the cached shell for navigations offline, keeps opened outputs and bypasses the rest of the API", func(t *testing.T) {
		_, body := get(t, h, "/app-worker.js")
		for _, want := range []string{`request.mode === "navigate"`, `caches.match("/")`, `"/api/"`, `"/shell-output"`, `"/tool-content"`, `"/error-detail"`,
			`key !== outputsCache && key !== pagesCache`, `const pagesKept = 16;`, `"conch:keep-page"`, `navigationPreload.enable()`, `event.preloadResponse`, `"X-Conch-Offline"`, `"/web/icon.svg"`, `"/web/app.css"`, `"/web/conch.js"`} {
			if !strings.Contains(body, want) {
				t.Errorf("app-worker.js lacks %s", want)
			}
		}
		if strings.Contains(body, "raw.githubusercontent.com") {
			t.Error("app-worker.js caches a remote icon")
		}
	})

	t.Run("go-app serves no files of its own under /web/", func(t *testing.T) {
		// The server serves /web/ before this handler; a file served here would be a
		// second, unreachable copy of that route.
		if res, _ := get(t, h, "/web/app.css"); res.StatusCode == 200 {
			t.Errorf("GET /web/app.css: %d from the UI handler", res.StatusCode)
		}
	})
}

func TestHandlerVersion(t *testing.T) {
	wasm := []byte("\x00asm one build")
	h := Handler(wasm, false, nil)
	if h.WasmContentLength != strconv.Itoa(len(wasm)) {
		t.Errorf("WasmContentLength %q, app.wasm is %d bytes", h.WasmContentLength, len(wasm))
	}
	if again := Handler(append([]byte(nil), wasm...), false, nil).Version; again != h.Version {
		t.Errorf("the same app.wasm gave versions %q and %q: a restart would look like an update", h.Version, again)
	}
	if other := Handler([]byte("\x00asm another build"), false, nil).Version; other == h.Version {
		t.Errorf("two builds share version %q: clients would miss the update", other)
	}
	saved := Version
	defer func() { Version = saved }()
	Version = "v1.2.3"
	if got := Handler(wasm, false, nil).Version; got != "v1.2.3" {
		t.Errorf("Version %q, want the one set at build time", got)
	}
}

func TestNotices(t *testing.T) {
	if html := render(t, &Notices{}); strings.Contains(html, "notice") && strings.Contains(html, "<p") {
		t.Fatalf("notices shown with nothing to say:\n%s", html)
	}
	if html := render(t, &Notices{Offline: true}); !strings.Contains(html, "You are offline") {
		t.Fatalf("no offline notice:\n%s", html)
	}
	if html := render(t, &Notices{update: true}); !strings.Contains(html, "A new version of Conch is available") || !strings.Contains(html, ">Reload</button>") {
		t.Fatalf("no update notice:\n%s", html)
	}
}
