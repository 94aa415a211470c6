package client_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A program outside this module imports the client with a replace line, as docs/API.md
// says, and builds without a single server package.
func TestImportableFromOutside(t *testing.T) {
	_, here, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(here), "..", "..")
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module outside\n\ngo 1.26\n\nrequire conch v0.0.0\n\nreplace conch => " + root + "\n",
		"main.go": `package main

import (
	"context"
	"fmt"

	"conch/app/client"
)

func main() {
	tasks, err := client.New("http://127.0.0.1:8080").ListTasks(context.Background())
	fmt.Println(len(tasks), err)
}
`,
	}
	// Checksums come from this module's go.sum: the outside one needs a subset of them.
	sums, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	files["go.sum"] = string(sums)
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goCmd := func(args ...string) string {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off") // the module cache only
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	goCmd("mod", "tidy")
	goCmd("build", "-o", filepath.Join(dir, "outside"), ".")
	if deps := goCmd("list", "-deps", "."); strings.Contains(deps, "conch/server") {
		t.Fatalf("the client pulls in server packages:\n%s", deps)
	}
}
