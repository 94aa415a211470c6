//go:build !wasm

package ui

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"github.com/maxence-charriere/go-app/v10/pkg/app"
)

// Only the server builds the handler: kept out of app.wasm, which would otherwise carry
// crypto/sha256 for the version below.

// Handler returns the go-app handler that serves the pages and the PWA files (manifest,
// worker, wasm_exec.js). The files under /web/ are the server's to serve: wasm is the
// app.wasm it serves there (nil when the UI is not built), of which the handler needs the
// size and, without a Version, the hash. signIn says people sign in (the server has a
// token), so the pages offer to sign out. boot reads what a session page carries (nil:
// session pages are the empty shell and the app lists the messages); the server makes one
// handler, and its prerender uses this boot.
func Handler(wasm []byte, signIn bool, boot BootFunc) *app.Handler {
	loadBoot = boot
	env := map[string]string{}
	if signIn {
		env[signInEnv] = "1"
	}
	return &app.Handler{
		Name:        "Conch",
		ShortName:   "Conch",
		Title:       "Conch",
		Description: "Run AI coding agents and watch their work.",
		Icon: app.Icon{
			Default:  "/web/icon-192.png",
			Large:    "/web/icon-512.png",
			Maskable: "/web/icon-maskable.png",
			SVG:      "/web/icon.svg",
		},
		BackgroundColor:       "#111827",
		ThemeColor:            "#111827",
		LoadingLabel:          "Loading Conch… {progress}%",
		Styles:                []string{"/web/app.css", "/web/term.css"},
		CacheableResources:    []string{"/web/icon.svg"},
		Scripts:               []string{"/web/conch.js"}, // the update hook and form keys; a file, so the CSP needs no inline script
		Version:               version(wasm),
		WasmContentLength:     strconv.Itoa(len(wasm)), // raw: the loader's progress, also when it travels compressed
		ServiceWorkerTemplate: serviceWorker(),
		Resources:             sameOrigin{},
		Env:                   env,
	}
}

func version(wasm []byte) string {
	if Version != "" {
		return Version
	}
	sum := sha256.Sum256(wasm)
	return hex.EncodeToString(sum[:8])
}
