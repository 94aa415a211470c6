package main

// This file is also written into the copy of go-app (package app) in place of its
// crypto.go, whose AES-GCM (for State.PersistWithEncryption and Context.Encrypt, which Conch
// never calls) links crypto/aes, crypto/cipher, crypto/rand and the FIPS 140 module under
// them: about 140 KB of app.wasm's code. The copy's encrypted states fail to persist or
// load, with this error, as a state whose key is wrong does upstream.

import "errors"

var errNoEncryption = errors.New("go-app's encryption is left out of Conch's browser build (server/cmd/slimapp)")

func encrypt(string, []byte) ([]byte, error) { return nil, errNoEncryption }

func decrypt(string, []byte) ([]byte, error) { return nil, errNoEncryption }
