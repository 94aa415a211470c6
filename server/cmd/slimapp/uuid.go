package main

// This file is also written into the copy of go-app (package app), where newUUID stands in
// for github.com/google/uuid's NewString: that package imports crypto/md5 and crypto/sha1,
// which register themselves at start, so their code stays in app.wasm though go-app only
// ever asks for a random id.

import (
	"encoding/hex"
	"math/rand/v2"
)

// newUUID is a random (version 4) UUID in its text form, as uuid.NewString gives it. go-app
// names contexts and its state store with it: ids that must not repeat, not secrets, so
// the runtime's generator (ChaCha8, seeded by the browser's crypto.getRandomValues) does,
// and crypto/rand with the FIPS 140 module under it stays out of app.wasm.
func newUUID() string {
	var b [16]byte
	x, y := rand.Uint64(), rand.Uint64()
	for i := range 8 {
		b[i], b[8+i] = byte(x>>(8*i)), byte(y>>(8*i))
	}
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // the RFC 4122 variant
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
