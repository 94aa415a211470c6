package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A module shaped like go-app's, small enough to read: every declaration cut names, and
// code the browser keeps beside them.
var files = map[string]string{
	"pkg/errors/errors.go": "package errors\n\nfunc New(s string) error { return nil }\n",
	"pkg/app/http.go": `package app

import (
	"net/http"
	"strings"
)

// Handler is kept: the UI builds one on both sides.
type Handler struct{ Name string }

// ServeHTTP serves pages.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// pages and files
	w.WriteHeader(200)
}

func (h Handler) init() {}

func title(s string) string { return strings.ToUpper(s) }
`,
	"pkg/app/resource.go": `package app

import (
	"net/http"
	"strings"
)

// LocalDir serves a folder.
func LocalDir(d string) any { return localResourceResolver{Handler: http.FileServer(http.Dir(d))} }

type localResourceResolver struct{ http.Handler }

func (r localResourceResolver) Resolve(s string) string { return s }

func PrefixedLocation(p string) any { return prefixedResourceResolver{} }

type prefixedResourceResolver struct{ localResourceResolver }

func (r prefixedResourceResolver) Resolve(s string) string { return s }

func GitHubPages(r string) any { return PrefixedLocation(strings.Trim(r, "/")) }

func RemoteBucket(url string) string { return strings.TrimSuffix(url, "/") }
`,
	"pkg/app/http_test.go": "package app\n",
}

func fakeModule(t *testing.T, skip string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if skip != "" {
			text = strings.Replace(text, "func "+skip+"(", "func moved"+skip+"(", 1)
		}
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestSlimModule(t *testing.T) {
	out := filepath.Join(t.TempDir(), "go-app")
	if err := slimModule(fakeModule(t, ""), out); err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	want := map[string]string{
		"pkg/app/http.go": `package app

import (
	"strings"
)

// Handler is kept: the UI builds one on both sides.
type Handler struct{ Name string }

func title(s string) string { return strings.ToUpper(s) }
`,
		"pkg/app/resource.go": `package app

import (
	"strings"
)

func RemoteBucket(url string) string { return strings.TrimSuffix(url, "/") }
`,
		"pkg/errors/errors.go": files["pkg/errors/errors.go"],
	}
	for name, text := range want {
		if got := read(name); got != text {
			t.Errorf("%s:\n%s\nwant:\n%s", name, got, text)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "pkg/app/http_test.go")); err == nil {
		t.Error("the tests were copied")
	}
}

// A go-app version that moved a declaration fails the step, naming it, rather than
// building a browser app that carries the server code again.
func TestSlimModuleMissing(t *testing.T) {
	err := slimModule(fakeModule(t, "GitHubPages"), filepath.Join(t.TempDir(), "go-app"))
	if err == nil || !strings.Contains(err.Error(), "no GitHubPages any more") {
		t.Fatalf("err = %v, want one naming GitHubPages", err)
	}
}
