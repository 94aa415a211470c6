package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestPackageOf(t *testing.T) {
	for sym, want := range map[string]string{
		"runtime.mallocgc":                                 "runtime",
		"runtime.__mheap_.alloc":                           "runtime",
		"net_http.__Client_.Do":                            "net_http",
		"github.com_coder_websocket.__Conn_.Read":          "github.com_coder_websocket",
		"github.com_aymanbagabas_go_udiff_lcs.DiffStrings": "github.com_aymanbagabas_go_udiff_lcs",
		"type:.eq.[2]int":                                  "type:",
		"":                                                 "(unnamed)",
	} {
		if got := packageOf(sym); got != want {
			t.Errorf("packageOf(%q) = %q, want %q", sym, got, want)
		}
	}
}

// A real js/wasm build: the sizes must cover main and the runtime.
func TestPackageSizes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a wasm binary")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() { println(\"hi\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "a.wasm")
	cmd := exec.Command("go", "build", "-o", out, src)
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	bin, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	sizes, err := packageSizes(bin)
	if err != nil {
		t.Fatal(err)
	}
	if sizes["main"] == 0 || sizes["runtime"] < 10000 {
		t.Errorf("main %d bytes, runtime %d bytes: want both counted", sizes["main"], sizes["runtime"])
	}
	if _, err := packageSizes(bin[:len(bin)/2]); err == nil {
		t.Error("a truncated binary parsed without error")
	}
}
