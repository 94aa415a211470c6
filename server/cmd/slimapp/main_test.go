package main

import (
	"os"
	"path/filepath"
	"regexp"
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
	"pkg/app/route.go":     routeGo,
	"pkg/app/context.go":   "package app\n\nimport \"github.com/google/uuid\"\n\nfunc id() string { return uuid.NewString() }\n",
	"pkg/app/state.go":     "package app\n\nimport (\n\t\"github.com/google/uuid\"\n)\n\nvar storeID = uuid.NewString()\n",
	"pkg/app/crypto.go": `package app

import (
	"crypto/aes"
	"crypto/rand"
)

func encrypt(key string, v []byte) ([]byte, error) { rand.Read(v); return nil, nil }

func decrypt(key string, v []byte) ([]byte, error) { aes.NewCipher(nil); return nil, nil }
`,
}

// go-app's router, cut down.
const routeGo = `package app

import (
	"regexp"
	"sync"
)

type router struct {
	mu               sync.RWMutex
	routesWithRegexp []regexpRoute
}

func (r *router) routeWithRegexp(pattern string) {
	r.routesWithRegexp = append(r.routesWithRegexp, regexpRoute{regexp: regexp.MustCompile(pattern)})
}

type regexpRoute struct {
	regexp *regexp.Regexp
}
`

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
		"pkg/app/route.go": strings.NewReplacer(`	"regexp"
`, "", "regexp.MustCompile(", "mustCompileRoute(", "*regexp.Regexp", "*routePattern").Replace(routeGo),
		"pkg/app/route_pattern.go": strings.Replace(string(routeSource), "package main\n", "package app\n", 1),
		"pkg/app/context.go":       "package app\n\nfunc id() string { return newUUID() }\n",
		"pkg/app/state.go":         "package app\n\nvar storeID = newUUID()\n",
		"pkg/app/uuid.go":          strings.Replace(string(uuidSource), "package main\n", "package app\n", 1),
		"pkg/app/crypto.go":        "package app\n",
		"pkg/app/nocrypto.go":      strings.Replace(string(noCryptoSource), "package main\n", "package app\n", 1),
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
	dir := fakeModule(t, "")
	if err := os.WriteFile(filepath.Join(dir, "pkg/app/route.go"), []byte(strings.ReplaceAll(routeGo, "*regexp.Regexp", "regexp.Regexp")), 0o644); err != nil {
		t.Fatal(err)
	}
	err = slimModule(dir, filepath.Join(t.TempDir(), "go-app"))
	if err == nil || !strings.Contains(err.Error(), "route.go has no *regexp.Regexp any more") {
		t.Fatalf("err = %v, want one naming the router's regexp", err)
	}
}

// newUUID gives what uuid.NewString gives: random version 4 UUIDs.
func TestNewUUID(t *testing.T) {
	form := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	a, b := newUUID(), newUUID()
	if !form.MatchString(a) || !form.MatchString(b) || a == b {
		t.Errorf("%q, %q: want two different version 4 UUIDs", a, b)
	}
}

// The matcher agrees with regexp on the shapes it reads, and refuses the rest by name.
func TestCompileRoute(t *testing.T) {
	paths := []string{"", "/", "/a", "/a/", "/a/b", "/a/b/", "/a//c", "/a/b/c", "/a/b/changes", "/a/bx/changes",
		"/xa/b", "/a/b.x", "/a/bx", "/a/b/changesx", "a/b", "/a/é/c"}
	for _, pattern := range []string{"^/$", "^/a/[^/]+$", "^/a/[^/]+/changes$", "^/a/[^/]+x$",
		"^/a/[^/]+[^/]+/c$", "^/a/[^/]+/[^/]+$", "^/a/b-c_d~$"} {
		p, err := compileRoute(pattern)
		if err != nil {
			t.Fatalf("%s: %v", pattern, err)
		}
		re := regexp.MustCompile(pattern)
		for _, path := range paths {
			if got, want := p.MatchString(path), re.MatchString(path); got != want {
				t.Errorf("%s matches %q: %v, regexp says %v", pattern, path, got, want)
			}
		}
	}
	for pattern, why := range map[string]string{
		"/a/[^/]+$":     "not anchored",
		"^/a/[^/]+":     "not anchored",
		"^/a/[0-9]+$":   `"[0-9]+" is neither`,
		"^/a/.*$":       `".*" is neither`,
		"^/a/(b|c)$":    `"(b|c)" is neither`,
		`^/a\.json$`:    `"\\.json" is neither`,
		"^/a/[^/]*$":    `"[^/]*" is neither`,
		"^/a/[^/]+?/b$": `"?/b" is neither`,
	} {
		if _, err := compileRoute(pattern); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%s: err = %v, want one saying %s", pattern, err, why)
		}
	}
}

// Every pattern Conch registers (found in app/ and wasm/) is one the browser build's
// router reads, matches a page's path, and matches the paths regexp does (the server's
// router): each page still opens. A new pattern needs a path of its page here.
func TestConchRoutes(t *testing.T) {
	patterns, err := checkRoutes("../../..")
	if err != nil || len(patterns) == 0 {
		t.Fatalf("patterns %q, %v", patterns, err)
	}
	paths := map[string]bool{"/sessions/0b5e": true, "/tasks/0b5e/changes": true, "/sessions/0b5e/replay": true, "/tasks/0b5e/attempts": true,
		"/sessions/": false, "/sessions/a/b": false, "/tasks/a/changes/": false, "/tasks//changes": false, "/x/sessions/a": false}
	for _, pattern := range patterns {
		p, err := compileRoute(pattern)
		if err != nil {
			t.Fatal(err)
		}
		re, matched := regexp.MustCompile(pattern), false
		for path := range paths {
			got := p.MatchString(path)
			if got != re.MatchString(path) {
				t.Errorf("%s matches %q: %v, regexp says otherwise", pattern, path, got)
			}
			matched = matched || got
		}
		if !matched {
			t.Errorf("no page path matches %s", pattern)
		}
	}
}

// A pattern the matcher cannot read, or cannot check because it is no constant, stops the
// build naming its place.
func TestCheckRoutes(t *testing.T) {
	root := t.TempDir()
	for name, text := range map[string]string{
		"app/ui/ui.go": `package ui

func Routes() {
	app.RouteWithRegexp("^/sessions/[^/]+$", nil)
	app.RouteWithRegexp("^/users/[0-9]+$", nil)
	app.RouteWithRegexp(pattern, nil)
}
`,
		"app/ui/ui_test.go": "package ui\n\nfunc f() { app.RouteWithRegexp(\"(\", nil) }\n",
		"wasm/main.go":      "package main\n\nfunc main() { app.RouteWithRegexp(`^/a$`, nil) }\n",
	} {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := checkRoutes(root)
	if err == nil {
		t.Fatal("no error")
	}
	lines := strings.Split(err.Error(), "\n")[1:]
	want := []string{`ui.go:5:2: route pattern "^/users/[0-9]+$": "[0-9]+" is neither literal text nor [^/]+`,
		"ui.go:6:2: the pattern is no string constant"}
	if len(lines) != len(want) {
		t.Fatalf("err = %v, want %d places", err, len(want))
	}
	for i, line := range lines {
		if !strings.HasSuffix(line, want[i]) {
			t.Errorf("line %d = %q, want it to end %q", i, line, want[i])
		}
	}
}
