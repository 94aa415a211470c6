//go:build !js

package main

import (
	"cmp"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// What each build may pull in besides the standard library and Conch's own packages (whose
// imports the layer map checks), by package path prefix. A new edge fails TestDependencies
// with the importer named: add it here only on purpose (every package in the browser build
// adds to app.wasm; shared stays standard library only, so it builds anywhere and carries
// no server code).
var allowed = map[string]struct {
	goos     string
	prefixes []string
	banned   []string // standard packages too costly for the build
}{
	"./wasm": {
		goos: "js",
		// No diff algorithm: the server works out the hunks a diff view draws (server/diff),
		// which kept go-udiff, log and regexp's use of it out (15 KB of app.wasm.br).
		// No markdown parser: the server parses an agent's markdown when it is stored
		// (server/markdown), which kept goldmark out (128 KB of app.wasm.br).
		// No github.com/google/uuid either: its crypto/md5 and crypto/sha1 register themselves
		// and stay (server/cmd/slimapp gives go-app a UUID of its own).
		prefixes: []string{"github.com/maxence-charriere/go-app/v10/"},
		// Its package initialisers alone (crypto/tls and the curves under it) add 340 KB
		// to app.wasm.br: server/cmd/slimapp says how go-app is built without it.
		// crypto/sha256 hashes app.wasm for the server's handler only (app/ui/handler.go,
		// built without the wasm tag): 3.5 KB of app.wasm.br. crypto/rand and crypto/cipher
		// bring the FIPS 140 module (AES, the DRBG, SHA-2 and SHA-3): 43 KB of app.wasm.br
		// for ids that only must not repeat (math/rand/v2 makes them) and go-app's encrypted
		// states, which Conch never uses (server/cmd/slimapp leaves them out).
		banned: []string{"net/http", "crypto/sha256", "crypto/rand", "crypto/cipher", "log", "regexp"},
	},
	"./shared/...": {},
}

// Only these packages may import a module of this list directly.
var owners = map[string]string{
	"gorm.io/":                      "conch/server/store",
	"github.com/mattn/go-sqlite3":   "conch/server/store",
	"database/sql":                  "conch/server/store",
	"github.com/gofiber/":           "conch/server/api",
	"github.com/valyala/fasthttp":   "conch/server/api",
	"github.com/coder/acp-go-sdk":   "conch/server/acp conch/server/acp/acptest conch/server/shellagent",
	"github.com/maxence-charriere/": "conch/app/ui conch/wasm conch/server",
	// The markdown parser stays on the server (it added 162 KB to app.wasm.br): the page
	// draws the tree the store keeps (server/markdown).
	"github.com/yuin/goldmark": "conch/server/markdown",
}

type pkg struct {
	path     string
	standard bool
	imports  []string
}

// list runs `go list -deps` (the habit pkgsite uses) for pattern and GOOS.
func list(t *testing.T, goos string, deps bool, pattern string) []pkg {
	t.Helper()
	args := []string{"list", "-f", "{{.ImportPath}}|{{.Standard}}|{{join .Imports \" \"}}"}
	if deps {
		args = append(args, "-deps")
	}
	cmd := exec.Command("go", append(args, pattern)...)
	cmd.Dir = ".."
	cmd.Env = append(cmd.Environ(), "GOWORK=off") // the server's build: go-app as published
	if goos == "js" {
		// The browser build, as make wasm builds it: in the workspace server/cmd/slimapp writes.
		work, err := filepath.Abs("../.cache/wasm/go.work")
		if err == nil {
			_, err = os.Stat(work)
		}
		if err != nil {
			t.Fatalf("%v: make wasm writes it (go run ./server/cmd/slimapp)", err)
		}
		cmd.Env = append(cmd.Environ(), "GOWORK="+work, "GOOS=js", "GOARCH=wasm")
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pattern, err)
	}
	var pkgs []pkg
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.SplitN(line, "|", 3)
		pkgs = append(pkgs, pkg{path: f[0], standard: f[1] == "true", imports: strings.Fields(f[2])})
	}
	return pkgs
}

func TestDependencies(t *testing.T) {
	layers := readLayers(t)
	for pattern, rule := range allowed {
		pkgs := list(t, rule.goos, true, pattern)
		checkLayers(t, layers, pkgs)
		for _, p := range pkgs {
			if slices.Contains(rule.banned, p.path) {
				t.Errorf("%s (GOOS=%s) now depends on %s, imported by %s: see the reason in wasm/deps_test.go",
					pattern, rule.goos, p.path, strings.Join(importers(pkgs, p.path), ", "))
				continue
			}
			if p.standard || strings.HasPrefix(p.path, module) ||
				slices.ContainsFunc(rule.prefixes, func(pre string) bool { return strings.HasPrefix(p.path, pre) }) {
				continue
			}
			t.Errorf("%s (GOOS=%s) now depends on %s, imported by %s: if that is meant, add it to allowed in wasm/deps_test.go",
				pattern, cmp.Or(rule.goos, "linux"), p.path, strings.Join(importers(pkgs, p.path), ", "))
		}
	}
}

// importers names the packages of pkgs that import path.
func importers(pkgs []pkg, path string) []string {
	var by []string
	for _, q := range pkgs {
		if slices.Contains(q.imports, path) {
			by = append(by, q.path)
		}
	}
	return by
}

// The top level the design names (docs/ARCHITECTURE.md), besides dotfiles and the build outputs that
// .gitignore names at the root: a new folder there fails TestLayers.
var topLevel = []string{"app", "server", "shared", "wasm", "web", "docs", "go.mod", "go.sum", "Makefile", "README.md"}

func TestLayers(t *testing.T) {
	entries, err := os.ReadDir("..")
	if err != nil {
		t.Fatal(err)
	}
	ignore, err := os.ReadFile("../.gitignore")
	if err != nil {
		t.Fatal(err)
	}
	built := strings.Fields(string(ignore)) // "/bin/" names the build output bin at the root
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || slices.Contains(topLevel, name) ||
			slices.Contains(built, "/"+name+"/") || slices.Contains(built, "/"+name) {
			continue
		}
		t.Errorf("%s at the top level: the design names only %s; put it under one of them",
			name, strings.Join(topLevel, ", "))
	}
	pkgs := list(t, "", false, "./...")
	checkLayers(t, readLayers(t), pkgs)
	for _, p := range pkgs {
		for _, imp := range p.imports {
			for mod, owner := range owners {
				if strings.HasPrefix(imp, mod) && !slices.Contains(strings.Fields(owner), p.path) {
					t.Errorf("%s imports %s: only %s may; go through it instead", p.path, imp, owner)
				}
			}
		}
	}
}

// module is the path of Conch's own packages.
const module = "conch/"

// layerRow matches a row of docs/ARCHITECTURE.md's table of packages: the package in
// backticks first (then words, as "(main)"), the packages it may import last.
var (
	layerRow = regexp.MustCompile("^\\| `([a-z0-9/.]+)`[^|]*\\|.*\\|([^|]*)\\|$")
	quoted   = regexp.MustCompile("`([a-z0-9/.]+)`")
)

// readLayers reads the layer map from docs/ARCHITECTURE.md's table: for each package (or
// folder of packages, "server/cmd/..."), the Conch packages it may import.
func readLayers(t *testing.T) map[string][]string {
	t.Helper()
	doc, err := os.ReadFile("../docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	layers := map[string][]string{}
	for _, line := range strings.Split(string(doc), "\n") {
		row := layerRow.FindStringSubmatch(line)
		if row == nil {
			continue
		}
		var may []string
		for _, q := range quoted.FindAllStringSubmatch(row[2], -1) {
			may = append(may, module+q[1])
		}
		layers[strings.TrimSuffix(module+row[1], "/")] = may
	}
	if len(layers) == 0 {
		t.Fatal("docs/ARCHITECTURE.md has no table of packages")
	}
	return layers
}

// checkLayers fails on each import between Conch's packages that the layer map does not
// list, and on a package of pkgs that has no row.
func checkLayers(t *testing.T, layers map[string][]string, pkgs []pkg) {
	t.Helper()
	for _, p := range pkgs {
		if !strings.HasPrefix(p.path, module) {
			continue
		}
		may, ok := layers[p.path]
		for name, list := range layers {
			if !ok && strings.HasSuffix(name, "/...") && strings.HasPrefix(p.path, strings.TrimSuffix(name, "...")) {
				may, ok = list, true
			}
		}
		if !ok {
			t.Errorf("%s has no row in docs/ARCHITECTURE.md's table of packages: add one, with what it may import", p.path)
			continue
		}
		for _, imp := range p.imports {
			if strings.HasPrefix(imp, module) && !slices.Contains(may, imp) {
				t.Errorf("%s imports %s, which docs/ARCHITECTURE.md's table of packages does not allow: "+
					"go through a package it may import, or change the map there on purpose", p.path, imp)
			}
		}
	}
}
