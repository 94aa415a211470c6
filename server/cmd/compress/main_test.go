package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/andybalholm/brotli"
)

func TestRun(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.wasm")
	src := bytes.Repeat([]byte("\x00asm conch "), 50000)
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(path); err != nil {
		t.Fatal(err)
	}
	for suffix, open := range map[string]func(io.Reader) (io.Reader, error){
		".gz": func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) },
		".br": func(r io.Reader) (io.Reader, error) { return brotli.NewReader(r), nil },
	} {
		f, err := os.Open(path + suffix)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		info, _ := f.Stat()
		if info.Mode().Perm() != 0o644 || info.Size() >= int64(len(src)) {
			t.Errorf("%s: mode %v, %d bytes for %d", suffix, info.Mode().Perm(), info.Size(), len(src))
		}
		r, err := open(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		if err != nil || !bytes.Equal(got, src) {
			t.Errorf("%s does not decompress to the original (%v)", suffix, err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".compress-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	if err := run(filepath.Join(dir, "missing.wasm")); err == nil {
		t.Error("a missing file gave no error")
	}
}
