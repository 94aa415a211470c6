// Command wasmsize prints what each Go package costs in a wasm binary: the bytes of its
// function bodies in the code section, largest first. go tool nm cannot read wasm, so it
// reads the binary's "name" custom section; build without -ldflags='-s -w' to keep it:
//
//	GOOS=js GOARCH=wasm go build -trimpath -o /tmp/app.wasm ./wasm
//	go run ./server/cmd/wasmsize -n 25 /tmp/app.wasm
package main

import (
	"cmp"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
)

func main() {
	top := flag.Int("n", 25, "how many packages to print")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: wasmsize [-n N] FILE.wasm")
		os.Exit(2)
	}
	bin, err := os.ReadFile(flag.Arg(0))
	if err == nil {
		var sizes map[string]int
		if sizes, err = packageSizes(bin); err == nil {
			print(sizes, *top)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "wasmsize:", err)
		os.Exit(1)
	}
}

func print(sizes map[string]int, top int) {
	pkgs := make([]string, 0, len(sizes))
	total := 0
	for p, n := range sizes {
		pkgs = append(pkgs, p)
		total += n
	}
	slices.SortFunc(pkgs, func(a, b string) int { return cmp.Or(sizes[b]-sizes[a], strings.Compare(a, b)) })
	fmt.Printf("%10d  code section, all packages\n", total)
	for _, p := range pkgs[:min(top, len(pkgs))] {
		fmt.Printf("%10d  %s\n", sizes[p], p)
	}
}

// reader walks a wasm binary's LEB128 integers and length-prefixed byte strings.
type reader struct {
	b   []byte
	err error
}

func (r *reader) uint() int {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = cmp.Or(r.err, errors.New("bad LEB128 integer"))
		r.b = nil
		return 0
	}
	r.b = r.b[n:]
	return int(v)
}

func (r *reader) bytes(n int) []byte {
	if n > len(r.b) {
		r.err = cmp.Or(r.err, errors.New("truncated"))
		n = len(r.b)
	}
	b := r.b[:n]
	r.b = r.b[n:]
	return b
}

// packageSizes sums the function bodies of bin by the Go package their name starts with.
// Functions are indexed after the imported ones, so the import section is counted too.
func packageSizes(bin []byte) (map[string]int, error) {
	if len(bin) < 8 || string(bin[:4]) != "\x00asm" {
		return nil, errors.New("not a wasm binary")
	}
	r := &reader{b: bin[8:]}
	var imported int
	var bodies []int
	names := map[int]string{}
	for len(r.b) > 0 && r.err == nil {
		id := r.bytes(1)[0]
		sec := &reader{b: r.bytes(r.uint())}
		switch id {
		case 2: // import: module, name, kind, then a description whose length depends on kind
			for n := sec.uint(); n > 0 && sec.err == nil; n-- {
				sec.bytes(sec.uint())
				sec.bytes(sec.uint())
				switch kind := sec.bytes(1)[0]; kind {
				case 0: // function: type index
					imported++
					sec.uint()
				default:
					return nil, fmt.Errorf("import of kind %d not handled", kind)
				}
			}
		case 10: // code: one size-prefixed body per defined function
			for n := sec.uint(); n > 0 && sec.err == nil; n-- {
				size := sec.uint()
				sec.bytes(size)
				bodies = append(bodies, size)
			}
		case 0:
			if string(sec.bytes(sec.uint())) != "name" {
				continue
			}
			for len(sec.b) > 0 && sec.err == nil {
				sub := sec.bytes(1)[0]
				s := &reader{b: sec.bytes(sec.uint())}
				if sub != 1 { // 1 holds the function names
					continue
				}
				for n := s.uint(); n > 0 && s.err == nil; n-- {
					i := s.uint()
					names[i] = string(s.bytes(s.uint()))
				}
				sec.err = cmp.Or(sec.err, s.err)
			}
		}
		r.err = cmp.Or(r.err, sec.err)
	}
	if r.err != nil {
		return nil, r.err
	}
	if len(names) == 0 {
		return nil, errors.New("no function names: build without -ldflags='-s -w'")
	}
	sizes := map[string]int{}
	for i, size := range bodies {
		sizes[packageOf(names[imported+i])] += size
	}
	return sizes, nil
}

// domain matches the host a module path starts with, as the linker writes it.
var domain = regexp.MustCompile(`^[a-z0-9-]+(\.[a-z0-9-]+)*\.(com|org|net|io|in|dev)_`)

// packageOf is the package a Go symbol name starts with. The wasm linker writes '/' in
// package paths as '_' but keeps the dots of a leading domain, so
// "github.com_coder_websocket.(*Conn).Read" is in "github.com_coder_websocket",
// "net_http.(*Client).Do" in "net_http" and "type:.eq.[2]int" in "type:".
func packageOf(sym string) string {
	if sym == "" {
		return "(unnamed)"
	}
	if i := strings.Index(sym, ":"); i >= 0 && !strings.Contains(sym[:i], ".") {
		return sym[:i+1]
	}
	start := len(domain.FindString(sym))
	if dot := strings.Index(sym[start:], "."); dot >= 0 {
		return sym[:start+dot]
	}
	return sym
}
