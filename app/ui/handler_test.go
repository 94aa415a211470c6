package ui

import (
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"conch/app/client"
	"conch/web"
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
	h := Handler()

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
		if !strings.Contains(body, "Loading messages…") || !strings.Contains(body, "controllerchange") {
			t.Fatalf("session page shell lacks its loading state or update hook:\n%s", body)
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

	t.Run("the worker serves the cached shell for navigations and bypasses the API", func(t *testing.T) {
		_, body := get(t, h, "/app-worker.js")
		for _, want := range []string{`request.mode === "navigate"`, `caches.match("/")`, `"/api/"`, `"/web/icon.svg"`, `"/web/app.css"`} {
			if !strings.Contains(body, want) {
				t.Errorf("app-worker.js lacks %s", want)
			}
		}
		if strings.Contains(body, "raw.githubusercontent.com") {
			t.Error("app-worker.js caches a remote icon")
		}
	})

	t.Run("assets come from the embedded FS", func(t *testing.T) {
		for path, ctype := range map[string]string{"/web/app.css": "text/css", "/web/icon.svg": "image/svg+xml", "/web/icon-192.png": "image/png"} {
			res, _ := get(t, h, path)
			if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), ctype) {
				t.Errorf("GET %s: %d %s", path, res.StatusCode, res.Header.Get("Content-Type"))
			}
		}
	})

	if h.Version == "" {
		t.Error("Version is empty: every restart would look like an update")
	}
	if info, err := fs.Stat(web.FS, "app.wasm"); err == nil && h.WasmContentLength != strconv.FormatInt(info.Size(), 10) {
		t.Errorf("WasmContentLength %q, app.wasm is %d bytes", h.WasmContentLength, info.Size())
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
