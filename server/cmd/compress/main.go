// Command compress writes the precompressed copies of a build output next to it:
// FILE.gz (gzip -9) and FILE.br (brotli quality 11), so the server never compresses
// app.wasm per request.
package main

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/andybalholm/brotli"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: compress FILE")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "compress:", err)
		os.Exit(1)
	}
}

func run(path string) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	gz := func(w io.Writer) (io.WriteCloser, error) { return gzip.NewWriterLevel(w, gzip.BestCompression) }
	br := func(w io.Writer) (io.WriteCloser, error) {
		return brotli.NewWriterLevel(w, brotli.BestCompression), nil
	}
	if err := write(path+".gz", src, gz); err != nil {
		return err
	}
	return write(path+".br", src, br)
}

// write compresses src into a temporary file and renames it into place, so a server
// embedding the directory never sees a half-written copy.
func write(path string, src []byte, newWriter func(io.Writer) (io.WriteCloser, error)) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".compress-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	zw, err := newWriter(tmp)
	if err != nil {
		tmp.Close()
		return err
	}
	if _, err := zw.Write(src); err != nil {
		tmp.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := zw.Close(); err != nil {
		tmp.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
