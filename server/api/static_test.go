package api

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"testing/fstest"
)

func TestWasmServedPrecompressed(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		accept, encoding, body string
	}{
		{"gzip, deflate, br", "br", "BR"},
		{"br;q=0.5, gzip;q=1.0", "br", "BR"}, // both are precompressed; br is smaller
		{"br;q=0, gzip", "gzip", "GZ!"},
		{"GZIP", "gzip", "GZ!"},
		{"identity", "", "RAW-WASM"},
		{"", "", "RAW-WASM"},
	} {
		resp, body := e.do("GET", "/web/app.wasm", "", "Accept-Encoding", c.accept)
		h := resp.Header
		if resp.StatusCode != http.StatusOK || body != c.body || h.Get("Content-Encoding") != c.encoding ||
			h.Get("Content-Type") != "application/wasm" || h.Get("Vary") != "Accept-Encoding" ||
			resp.ContentLength != int64(len(c.body)) || h.Get("Cache-Control") != "no-cache" || h.Get("ETag") == "" {
			t.Errorf("Accept-Encoding %q: %d %q %+v", c.accept, resp.StatusCode, body, h)
		}
		again, _ := e.do("GET", "/web/app.wasm", "", "Accept-Encoding", c.accept, "If-None-Match", h.Get("ETag"))
		if again.StatusCode != http.StatusNotModified {
			t.Errorf("Accept-Encoding %q revalidation: %d", c.accept, again.StatusCode)
		}
	}
	br, _ := e.do("GET", "/web/app.wasm", "", "Accept-Encoding", "br")
	raw, _ := e.do("GET", "/web/app.wasm", "")
	if br.Header.Get("ETag") == raw.Header.Get("ETag") {
		t.Error("compressed and raw bodies share an ETag")
	}
}

func TestWasmWithoutCompressedCopies(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Web = fstest.MapFS{"app.wasm": {Data: []byte("ONLY-RAW")}} })
	resp, body := e.do("GET", "/web/app.wasm", "", "Accept-Encoding", "br, gzip")
	if resp.StatusCode != http.StatusOK || body != "ONLY-RAW" || resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("%d %q %v", resp.StatusCode, body, resp.Header)
	}
}

func TestWebFiles(t *testing.T) {
	e := newEnv(t)
	resp, body := e.do("GET", "/web/css/app.css", "")
	if resp.StatusCode != http.StatusOK || body != "body{}" || resp.Header.Get("Content-Type") != "text/css; charset=utf-8" || resp.Header.Get("Vary") != "" {
		t.Errorf("css: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	for _, target := range []string{"/web/missing.js", "/web/css", "/web/", "/web/../go.mod", "/web/css/../../x"} {
		if resp, body := e.do("GET", target, ""); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d %s", target, resp.StatusCode, body)
		}
	}
}

func TestWasmHead(t *testing.T) {
	e := newEnv(t)
	resp, body := e.do("HEAD", "/web/app.wasm", "", "Accept-Encoding", "br")
	if resp.StatusCode != http.StatusOK || body != "" || resp.Header.Get("Content-Length") != "2" || resp.Header.Get("Content-Encoding") != "br" {
		t.Errorf("HEAD: %d %q %v", resp.StatusCode, body, resp.Header)
	}
}

// TestSessionPageIsNeverCachedHoweverItsPathIsSpelt: go-app routes by the decoded path,
// so every spelling of a session page's path is answered no-store, without the build's
// ETag, and never 304 for that ETag.
func TestSessionPageIsNeverCachedHoweverItsPathIsSpelt(t *testing.T) {
	e := newEnv(t, withRealUI)
	s := e.session()
	e.text(s.ID, "private words")
	home, _ := e.do("GET", "/", "")
	build := home.Header.Get("ETag")
	if build == "" {
		t.Fatal("go-app's pages carry no ETag: this test cannot tell a cached answer")
	}
	for _, target := range []string{
		"/sessions/" + s.ID,
		"/%73essions/" + s.ID,
		"/%73%65%73%73%69%6F%6E%73/" + s.ID,
		"/sessions/" + fmt.Sprintf("%%%02X", s.ID[0]) + s.ID[1:],
		"/sessions/" + s.ID + "?x=%2F",
	} {
		resp, body := e.do("GET", target, "", "If-None-Match", build)
		cc, etag := resp.Header.Get("Cache-Control"), resp.Header.Get("ETag")
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, "private words") || cc != "no-store" || etag != "" {
			t.Errorf("%s: %d, Cache-Control %q, ETag %q", target, resp.StatusCode, cc, etag)
		}
	}
}
