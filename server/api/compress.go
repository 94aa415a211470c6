package api

import (
	"bytes"
	"compress/gzip"
	"strconv"
	"strings"

	"github.com/andybalholm/brotli"
	"github.com/gofiber/fiber/v2"
)

// compressMin is the smallest answer worth compressing: answers over 1 KiB (docs/API.md,
// "Output: the snapshot, and polling politely").
const compressMin = 1 << 10

// brotliLevel trades size for time on bodies compressed while a client waits: on a
// 256 KiB build log snapshot (285 KB of JSON) level 5 takes about 9 ms for 22 KB, level 11
// about 740 ms for 14.5 KB, gzip 4.5 ms for 31 KB (BenchmarkCompress, 2 cores).
const brotliLevel = 5

// encodings the server writes, best first.
var encodings = []struct {
	name     string
	compress func([]byte) []byte
}{
	{"br", func(b []byte) []byte {
		var out bytes.Buffer
		w := brotli.NewWriterLevel(&out, brotliLevel)
		w.Write(b) // a bytes.Buffer does not fail
		w.Close()
		return out.Bytes()
	}},
	{"gzip", func(b []byte) []byte {
		var out bytes.Buffer
		w := gzip.NewWriter(&out)
		w.Write(b)
		w.Close()
		return out.Bytes()
	}},
}

// negotiate picks the encoding for an answer of n bytes to a client that sent the
// Accept-Encoding header accept: "" (identity) when the body is small or nothing
// offered is accepted.
func negotiate(accept string, n int) string {
	if n <= compressMin {
		return ""
	}
	accepted := map[string]bool{}
	for _, part := range strings.Split(accept, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		q := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				q = f
			}
		}
		accepted[strings.ToLower(strings.TrimSpace(name))] = q > 0
	}
	for _, e := range encodings {
		if accepted[e.name] {
			return e.name
		}
	}
	return ""
}

// compress returns body in the named encoding ("" leaves it as it is).
func compress(name string, body []byte) []byte {
	for _, e := range encodings {
		if e.name == name {
			return e.compress(body)
		}
	}
	return body
}

// encodingFor is the encoding of an answer of n bytes to c ("": as it is); the answer
// varies with Accept-Encoding either way.
func encodingFor(c *fiber.Ctx, n int) string {
	c.Vary(fiber.HeaderAcceptEncoding)
	return negotiate(c.Get(fiber.HeaderAcceptEncoding), n)
}

// sendEncoded answers body, compressed as the client accepts; encoded gives the body in
// an encoding (a cache may hold it already).
func sendEncoded(c *fiber.Ctx, body []byte, encoded func(name string) []byte) error {
	name := encodingFor(c, len(body))
	if name == "" {
		return c.Send(body)
	}
	c.Set(fiber.HeaderContentEncoding, name)
	return c.Send(encoded(name))
}
