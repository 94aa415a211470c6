// Package web holds the files served at /web/: the stylesheet, the icons and the build
// output app.wasm with its precompressed copies app.wasm.gz and app.wasm.br.
package web

import (
	"embed"
	"strings"
)

// FS holds every file of this directory. The pattern is "*" so that the package still
// compiles before app.wasm has been built (the server then has no UI to serve).
//
//go:embed *
var FS embed.FS

// ContentType is the media type to serve name with, or "" to let the server guess.
// The precompressed copies keep app.wasm's type: browsers compile the module while it
// downloads only when it is served as application/wasm.
func ContentType(name string) string {
	switch {
	case strings.HasPrefix(name, "app.wasm"):
		return "application/wasm"
	case strings.HasSuffix(name, ".svg"):
		return "image/svg+xml"
	case strings.HasSuffix(name, ".css"):
		return "text/css; charset=utf-8"
	case strings.HasSuffix(name, ".png"):
		return "image/png"
	}
	return ""
}
