package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// section is a wasm section: its id, its size and body.
func section(id byte, body []byte) []byte {
	return append(binary.AppendUvarint([]byte{id}, uint64(len(body))), body...)
}

// dataSection holds segs in the order given, as Go's linker writes them.
func dataSection(segs ...segment) []byte {
	body := binary.AppendUvarint(nil, uint64(len(segs)))
	for _, s := range segs {
		body = appendI32(append(body, 0, 0x41), int64(s.offset))
		body = binary.AppendUvarint(append(body, 0x0b), uint64(len(s.data)))
		body = append(body, s.data...)
	}
	return section(11, body)
}

func module(sections ...[]byte) []byte {
	return bytes.Join(append([][]byte{[]byte("\x00asm\x01\x00\x00\x00")}, sections...), nil)
}

// image is the memory the data section of bin initialises, from address 0.
func image(t *testing.T, bin []byte) (mem []byte, segments int) {
	t.Helper()
	for rest := bin[8:]; len(rest) > 0; {
		size, n := binary.Uvarint(rest[1:])
		body := rest[1+n : 1+n+int(size)]
		if rest[0] == 11 {
			segs, err := readSegments(body)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range segs {
				if end := s.offset + len(s.data); end > len(mem) {
					mem = append(mem, make([]byte, end-len(mem))...)
				}
				copy(mem[s.offset:], s.data)
			}
			return bytes.TrimRight(mem, "\x00"), len(segs)
		}
		rest = rest[1+n+int(size):]
	}
	t.Fatal("no data section")
	return nil, 0
}

func TestJoinData(t *testing.T) {
	code := section(10, []byte{1, 2, 0x0b}) // kept as it is, before and after
	name := section(0, append([]byte{4}, "name"...))
	big := bytes.Repeat([]byte("conch"), 40) // a size and an offset of more than one LEB128 byte
	in := module(code, dataSection(
		segment{0x3000, []byte("third")},
		segment{0x1000, []byte("first")},
		segment{0x1005, []byte("adjacent")},
		segment{0x2000, nil},
		segment{0x20000, big},
		segment{0x1040, []byte("second")},
	), name)
	out, err := joinData(in)
	if err != nil {
		t.Fatal(err)
	}
	want, n := image(t, in)
	got, segments := image(t, out)
	if n != 6 || segments != 1 || !bytes.Equal(got, want) {
		t.Errorf("%d segments into %d; same memory: %v", n, segments, bytes.Equal(got, want))
	}
	if !bytes.HasPrefix(out, module(code)) || !bytes.HasSuffix(out, name) {
		t.Error("the other sections changed")
	}
	again, err := joinData(out)
	if err != nil || !bytes.Equal(again, out) {
		t.Errorf("joined twice: changed %v, %v", !bytes.Equal(again, out), err)
	}
	empty, err := joinData(module(dataSection()))
	if err != nil || !bytes.Equal(empty, module(dataSection())) {
		t.Errorf("no segments: %x, %v", empty, err)
	}
}

// A file the command was not written for is refused, saying why, and left as it was.
func TestJoinDataRefuses(t *testing.T) {
	good := dataSection(segment{16, []byte("a")})
	body := good[2:]
	for name, tc := range map[string]struct {
		bin  []byte
		want string
	}{
		"not wasm":      {[]byte("\x7fELF\x02\x01\x01\x00"), "not a wasm binary"},
		"no data":       {module(section(10, []byte{0})), "no data section"},
		"two":           {module(good, good), "two data sections"},
		"data count":    {module(section(12, []byte{1}), good), "data count"},
		"section size":  {module(good)[:len(module(good))-1], "section 11: bad or truncated size"},
		"passive":       {module(section(11, []byte{1, 1, 1, 'a'})), "segment 0: not an active segment"},
		"global offset": {module(section(11, []byte{1, 0, 0x23, 0, 0x0b, 1, 'a'})), "segment 0: not an active segment"},
		"negative":      {module(dataSection(segment{-16, []byte("a")})), "segment 0: bad offset"},
		"no end":        {module(section(11, []byte{1, 0, 0x41, 16, 0x0c, 1, 'a'})), "segment 0: bad offset"},
		"segment size":  {module(section(11, append(body[:len(body)-2:len(body)-2], 9, 'a'))), "segment 0: bad or truncated size"},
		"count":         {module(section(11, []byte{0xff, 0xff, 0x03})), "bad segment count"},
		"trailing":      {module(section(11, append(body[:len(body):len(body)], 0))), "bytes after the last segment"},
		"overlap":       {module(dataSection(segment{16, []byte("abc")}, segment{17, []byte("b")})), "segments overlap at 0x11"},
		"span":          {module(dataSection(segment{0, []byte("a")}, segment{maxImage, []byte("b")})), "more than"},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "app.wasm")
			if err := os.WriteFile(path, tc.bin, 0o755); err != nil {
				t.Fatal(err)
			}
			err := run(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one saying %q", err, tc.want)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, tc.bin) {
				t.Error("the file changed")
			}
		})
	}
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.wasm")
	in := module(dataSection(segment{16, []byte("a")}, segment{64, []byte("b")}))
	if err := os.WriteFile(path, in, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := run(path); err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := joinData(in)
	info, _ := os.Stat(path)
	if !bytes.Equal(out, want) || info.Mode().Perm() != 0o755 {
		t.Errorf("written %x, mode %v; want %x, 0755", out, info.Mode().Perm(), want)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".wasmdata-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	if err := run(filepath.Join(dir, "missing.wasm")); err == nil {
		t.Error("a missing file gave no error")
	}
}
