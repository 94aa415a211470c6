// Package web holds the files served at /web/: the stylesheet, the icons and the build
// output app.wasm with its precompressed copies app.wasm.gz and app.wasm.br (served as
// application/wasm, so browsers compile the module while it downloads).
package web

import "embed"

// FS holds every file of this directory. The pattern is "*" so that the package still
// compiles before app.wasm has been built (the server then has no UI to serve).
//
//go:embed *
var FS embed.FS
