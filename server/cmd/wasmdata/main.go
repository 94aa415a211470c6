// Command wasmdata rewrites the data section of a wasm binary as one segment: the memory
// image from its first initialised byte to its last, zeros included.
//
// Why: Go's linker leaves out every run of 8 or more zero bytes between initialised data
// and starts a new segment after it, up to 100,000 segments. That saves raw bytes (about
// 1 MB of zeros in app.wasm) but each segment carries its own offset and length, which no
// compressor predicts, while zeros cost almost nothing compressed: joined, app.wasm is
// 1.0 MB larger raw and 8% smaller in brotli (docs/PERFORMANCE.md). The memory the
// browser instantiates is the same byte for byte. Run after go build (make wasm):
//
//	go run ./server/cmd/wasmdata web/app.wasm
package main

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// maxImage bounds the joined image: Go's wasm memory starts far below this, and a file
// whose segments lie further apart is not one this command was written for.
const maxImage = 256 << 20

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: wasmdata FILE.wasm")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "wasmdata:", err)
		os.Exit(1)
	}
}

// run joins the data segments of the file at path in place; on error it leaves the file
// as it was.
func run(path string) error {
	bin, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := joinData(bin)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".wasmdata-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(out); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), info.Mode().Perm()); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

type segment struct {
	offset int
	data   []byte
}

// joinData returns bin with the segments of its data section joined into one. It accepts
// what Go's linker writes: active segments of memory 0 placed by an i32.const, which do
// not overlap, and no data count section.
func joinData(bin []byte) ([]byte, error) {
	if len(bin) < 8 || !bytes.Equal(bin[:4], []byte("\x00asm")) {
		return nil, errors.New("not a wasm binary")
	}
	out := slices.Clone(bin[:8])
	found := false
	for rest := bin[8:]; len(rest) > 0; {
		id := rest[0]
		size, n := binary.Uvarint(rest[1:])
		if n <= 0 || size > uint64(len(rest)-1-n) {
			return nil, fmt.Errorf("section %d: bad or truncated size", id)
		}
		body := rest[1+n : 1+n+int(size)]
		rest = rest[1+n+int(size):]
		switch id {
		case 12:
			return nil, errors.New("a data count section: not written by Go's linker")
		case 11:
			if found {
				return nil, errors.New("two data sections")
			}
			found = true
			segs, err := readSegments(body)
			if err != nil {
				return nil, fmt.Errorf("data section: %w", err)
			}
			if body, err = joined(segs); err != nil {
				return nil, fmt.Errorf("data section: %w", err)
			}
		}
		out = append(out, id)
		out = binary.AppendUvarint(out, uint64(len(body)))
		out = append(out, body...)
	}
	if !found {
		return nil, errors.New("no data section")
	}
	return out, nil
}

func readSegments(body []byte) ([]segment, error) {
	count, n := binary.Uvarint(body)
	if n <= 0 || count > uint64(len(body)) {
		return nil, errors.New("bad segment count")
	}
	body = body[n:]
	segs := make([]segment, 0, count)
	for i := range count {
		// flags 0 (active, memory 0), then the offset expression: i32.const OFFSET end.
		if len(body) < 2 || body[0] != 0 || body[1] != 0x41 {
			return nil, fmt.Errorf("segment %d: not an active segment placed by i32.const", i)
		}
		offset, n := readI32(body[2:])
		if n <= 0 || offset < 0 || len(body) < 3+n || body[2+n] != 0x0b {
			return nil, fmt.Errorf("segment %d: bad offset", i)
		}
		body = body[3+n:]
		size, n := binary.Uvarint(body)
		if n <= 0 || size > uint64(len(body)-n) {
			return nil, fmt.Errorf("segment %d: bad or truncated size", i)
		}
		segs = append(segs, segment{int(offset), body[n : n+int(size)]})
		body = body[n+int(size):]
	}
	if len(body) != 0 {
		return nil, errors.New("bytes after the last segment")
	}
	return segs, nil
}

// readI32 reads a signed LEB128 number of at most 5 bytes (binary.Varint reads Go's
// zig-zag form, not this); n <= 0 when b starts with none.
func readI32(b []byte) (v int64, n int) {
	var shift uint
	for n < len(b) && n < 5 {
		c := b[n]
		n++
		v |= int64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			if c&0x40 != 0 {
				v -= 1 << shift // the sign bit of the last byte
			}
			return v, n
		}
	}
	return 0, -1
}

// joined is the body of a data section holding segs as one segment.
func joined(segs []segment) ([]byte, error) {
	segs = slices.DeleteFunc(segs, func(s segment) bool { return len(s.data) == 0 })
	slices.SortFunc(segs, func(a, b segment) int { return cmp.Compare(a.offset, b.offset) })
	var image []byte
	if len(segs) > 0 {
		start, end := segs[0].offset, segs[0].offset
		for _, s := range segs {
			if s.offset < end {
				return nil, fmt.Errorf("segments overlap at %#x", s.offset)
			}
			end = s.offset + len(s.data)
		}
		if end-start > maxImage {
			return nil, fmt.Errorf("segments span %d bytes, more than %d", end-start, maxImage)
		}
		image = make([]byte, end-start)
		for _, s := range segs {
			copy(image[s.offset-start:], s.data)
		}
		segs = []segment{{start, image}}
	}
	body := binary.AppendUvarint(nil, uint64(len(segs)))
	for _, s := range segs {
		body = append(body, 0, 0x41)
		body = appendI32(body, int64(s.offset))
		body = append(body, 0x0b)
		body = binary.AppendUvarint(body, uint64(len(s.data)))
		body = append(body, s.data...)
	}
	return body, nil
}

// appendI32 appends v in signed LEB128.
func appendI32(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 && c&0x40 == 0 || v == -1 && c&0x40 != 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
