//go:build !js

// Package e2e drives the real Conch binary ($CONCH_BIN) in headless Chromium: real
// sessions with the built-in shell agent, real commands, and the browser's own network
// events to count output snapshot requests. Host only: it runs processes and a browser.
package e2e
