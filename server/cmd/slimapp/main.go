// Command slimapp prepares the browser build of go-app: it copies pkg/app and pkg/errors of
// the go-app version go.mod requires (from the module cache) into a git-ignored folder
// without the code only the server runs, and writes a workspace file that builds ./wasm
// against that copy. The server and every host test use go-app as published.
//
// Why: upstream's pkg/app imports net/http for Handler's methods and LocalDir, and a
// GOOS=js build keeps the package initialisers of all it imports (crypto/tls and the curves
// under it): about 330 KB of app.wasm.br. go build -overlay cannot hide those files, since
// Go refuses overlays of files in the module cache. Run from the module root (make wasm):
//
//	go run ./server/cmd/slimapp -out .cache/wasm
//	GOWORK=$PWD/.cache/wasm/go.work GOOS=js GOARCH=wasm go build ./wasm
//
// It also gives the copy's router a small matcher in place of regexp (route.go in this
// folder), after checking that it reads every pattern Conch registers with
// app.RouteWithRegexp under app/ and wasm/, its ids a random UUID of its own (uuid.go) in
// place of github.com/google/uuid (see rewrites), and encrypted states that fail
// (nocrypto.go) in place of crypto/aes, crypto/cipher and crypto/rand.
//
// It fails when a declaration it cuts is no longer there (a new go-app version moved it):
// then read the new version and update cut; wasm/deps_test.go fails if net/http comes
// back.
package main

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

const module = "github.com/maxence-charriere/go-app/v10"

// What the browser build does without: Handler's methods (serving pages and files), the
// resolvers that serve a folder through net/http, and AES-GCM for encrypted states (whose
// stand-ins are in nocrypto.go), by name. Each must be found.
var cut = []string{"Handler.*", "LocalDir", "PrefixedLocation", "GitHubPages",
	"localResourceResolver", "localResourceResolver.Resolve",
	"prefixedResourceResolver", "prefixedResourceResolver.Resolve",
	"encrypt", "decrypt"}

func main() {
	out := flag.String("out", ".cache/wasm", "the folder to write go.work and the copy (go-app/) into")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "slimapp:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	if _, err := checkRoutes(root); err != nil {
		return err
	}
	// The version go.mod requires, from the module cache (downloaded if missing).
	cmd := exec.Command("go", "mod", "download", "-json", module)
	cmd.Env = append(os.Environ(), "GOWORK=off")
	cmd.Stderr = os.Stderr
	j, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("go mod download %s: %w", module, err)
	}
	var mod struct{ Dir, Version string }
	if err := json.Unmarshal(j, &mod); err != nil || mod.Dir == "" {
		return fmt.Errorf("go mod download %s: no folder in %q (%v)", module, j, err)
	}
	copyDir := filepath.Join(out, "go-app")
	if err := slimModule(mod.Dir, copyDir); err != nil {
		return fmt.Errorf("%s %s: %w", module, mod.Version, err)
	}
	for _, name := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(mod.Dir, name))
		if err == nil {
			err = os.WriteFile(filepath.Join(copyDir, name), b, 0o644)
		}
		if err != nil {
			return err
		}
	}
	// The workspace: Conch and the copy, which stands in for the module go.mod requires.
	if err := os.RemoveAll(filepath.Join(out, "go.work")); err != nil {
		return err
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(abs, root) // so that the checkout may move
	if err != nil {
		return err
	}
	cmd = exec.Command("go", "work", "init", rel, "./go-app")
	cmd.Dir, cmd.Env, cmd.Stderr = out, append(os.Environ(), "GOWORK="), os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go work init: %w", err)
	}
	return nil
}

// slimModule copies pkg/app and pkg/errors of the module in dir into copyDir without what
// cut names, and fails when any of it is missing.
func slimModule(dir, copyDir string) error {
	if err := os.RemoveAll(copyDir); err != nil {
		return err
	}
	found := map[string]bool{}
	for _, pkg := range []string{"pkg/app", "pkg/errors"} {
		if err := copyPackage(filepath.Join(dir, pkg), filepath.Join(copyDir, pkg), found); err != nil {
			return err
		}
	}
	for _, rw := range rewrites {
		if !found[rw.file] {
			return fmt.Errorf("no pkg/app/%s any more: read the new version and update rewrites in server/cmd/slimapp", rw.file)
		}
	}
	for name, source := range map[string][]byte{"route_pattern.go": routeSource, "uuid.go": uuidSource, "nocrypto.go": noCryptoSource} {
		text := bytes.Replace(source, []byte("package main\n"), []byte("package app\n"), 1)
		if err := os.WriteFile(filepath.Join(copyDir, "pkg/app", name), text, 0o644); err != nil {
			return err
		}
	}
	var missing []string
	for _, name := range cut {
		if !found[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("no %s any more: read its pkg/app and update cut in server/cmd/slimapp",
			strings.Join(missing, ", "))
	}
	return nil
}

// copyPackage writes the Go files of the package in src (no tests, no subfolders) into
// dst, without the declarations cut names, noting in found the ones it met.
func copyPackage(src, dst string, found map[string]bool) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		text, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			return err
		}
		if text, err = slim(name, text, found); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, name), text, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// slim drops the declarations cut names from one file, with their comments, and the
// imports nothing uses any more.
func slim(name string, text []byte, found map[string]bool) ([]byte, error) {
	rewritten := false
	for _, rw := range rewrites {
		if rw.file != name {
			continue
		}
		if !bytes.Contains(text, []byte(rw.old)) {
			return nil, fmt.Errorf("pkg/app/%s has no %s any more: read the new version and update rewrites in server/cmd/slimapp", name, rw.old)
		}
		text, rewritten, found[name] = bytes.ReplaceAll(text, []byte(rw.old), []byte(rw.new)), true, true
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, text, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	comments, decls := ast.NewCommentMap(fset, f, f.Comments), len(f.Decls)
	f.Decls = slices.DeleteFunc(f.Decls, func(d ast.Decl) bool {
		key := declName(d)
		if strings.HasPrefix(key, "Handler.") {
			key = "Handler.*"
		}
		found[key] = found[key] || slices.Contains(cut, key)
		return slices.Contains(cut, key)
	})
	if len(f.Decls) == decls && !rewritten {
		return text, nil
	}
	f.Comments = comments.Filter(f).Comments() // the comments of what is left
	pruneImports(f)
	var buf bytes.Buffer
	if err := format.Node(&buf, fset, f); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// declName is "F" for a function, "T.M" for a method of T or *T, "T" for a declaration of
// the single type T, and "" for anything else.
func declName(d ast.Decl) string {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil {
			return d.Name.Name
		}
		t := d.Recv.List[0].Type
		if star, ok := t.(*ast.StarExpr); ok {
			t = star.X
		}
		if id, ok := t.(*ast.Ident); ok {
			return id.Name + "." + d.Name.Name
		}
	case *ast.GenDecl:
		if ts, ok := d.Specs[0].(*ast.TypeSpec); ok && len(d.Specs) == 1 && d.Tok == token.TYPE {
			return ts.Name.Name
		}
	}
	return ""
}

// pruneImports removes the imports no selector in f names any more, and import
// declarations left empty.
func pruneImports(f *ast.File) {
	used := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok {
				used[id.Name] = true
			}
		}
		return true
	})
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
			g.Specs = slices.DeleteFunc(g.Specs, func(s ast.Spec) bool {
				is := s.(*ast.ImportSpec)
				path, _ := strconv.Unquote(is.Path.Value)
				name := path[strings.LastIndex(path, "/")+1:]
				if is.Name != nil {
					name = is.Name.Name
				}
				return name != "_" && name != "." && !used[name]
			})
		}
	}
	f.Decls = slices.DeleteFunc(f.Decls, func(d ast.Decl) bool {
		g, ok := d.(*ast.GenDecl)
		return ok && g.Tok == token.IMPORT && len(g.Specs) == 0
	})
}

// rewrites are the texts of go-app's files that the copy says otherwise, each of which must
// be found: its router's use of regexp, for the matcher of route.go in this folder, and
// its two ids from github.com/google/uuid, for newUUID of uuid.go. The files of this
// folder are written into the copy as route_pattern.go, uuid.go and nocrypto.go.
var rewrites = []struct{ file, old, new string }{
	{"route.go", "regexp.MustCompile(", "mustCompileRoute("},
	{"route.go", "*regexp.Regexp", "*routePattern"},
	{"context.go", "uuid.NewString()", "newUUID()"},
	{"state.go", "uuid.NewString()", "newUUID()"},
}

var (
	//go:embed route.go
	routeSource []byte
	//go:embed uuid.go
	uuidSource []byte
	//go:embed nocrypto.go
	noCryptoSource []byte
)

// checkRoutes returns the patterns the Go files (tests aside) under app/ and wasm/ of root
// pass to app.RouteWithRegexp, and fails unless compileRoute reads every one: the browser
// build would panic on one it cannot read, and only a constant can be checked before it runs.
func checkRoutes(root string) (patterns []string, err error) {
	var bad []string
	for _, dir := range []string{"app", "wasm"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) == 0 {
					return true
				}
				if sel, ok := call.Fun.(*ast.SelectorExpr); !ok || sel.Sel.Name != "RouteWithRegexp" {
					return true
				}
				pattern, err := checkPattern(call.Args[0])
				if err != nil {
					bad = append(bad, fmt.Sprintf("%s: %v", fset.Position(call.Pos()), err))
				}
				patterns = append(patterns, pattern)
				return true
			})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("the browser build's router (server/cmd/slimapp/route.go) cannot match:\n%s", strings.Join(bad, "\n"))
	}
	return patterns, nil
}

func checkPattern(arg ast.Expr) (string, error) {
	lit, ok := arg.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", errors.New("the pattern is no string constant")
	}
	pattern, err := strconv.Unquote(lit.Value)
	if err == nil {
		_, err = compileRoute(pattern)
	}
	return pattern, err
}
