// Package shared holds Conch's wire types and the pure rules every side agrees on:
// the 256 KiB output bound and the body-free summary of a command's output (docs/API.md, "The one idea").
// It imports only the standard library so that it builds for the server and for js/wasm.
package shared
