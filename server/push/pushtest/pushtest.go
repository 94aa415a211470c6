// Package pushtest is a browser's side of Web Push for tests: its subscription keys, and
// the decryption of what a push service hands it (RFC 8291, aes128gcm); and the names of
// push services, looked up with no network.
package pushtest

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"conch/shared"
)

// Browser is a subscribed browser.
type Browser struct {
	Endpoint string
	key      *ecdh.PrivateKey
	auth     []byte
}

// NewBrowser makes the keys of a browser whose push service is at endpoint.
func NewBrowser(endpoint string) (*Browser, error) {
	key, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	auth := make([]byte, 16)
	_, _ = rand.Read(auth)
	return &Browser{Endpoint: endpoint, key: key, auth: auth}, nil
}

// Subscription is what the browser's PushSubscription.toJSON() gives.
func (b *Browser) Subscription(everyTask bool) shared.PushSubscription {
	enc := base64.RawURLEncoding.EncodeToString
	return shared.PushSubscription{Endpoint: b.Endpoint, EveryTask: everyTask,
		Keys: shared.PushKeys{P256dh: enc(b.key.PublicKey().Bytes()), Auth: enc(b.auth)}}
}

// Decrypt opens an aes128gcm body (RFC 8188) sent to b, its key derived as RFC 8291 says.
func (b *Browser) Decrypt(body []byte) ([]byte, error) {
	if len(body) < 21 {
		return nil, fmt.Errorf("body of %d bytes", len(body))
	}
	salt, idLen := body[:16], int(body[20])
	if rs := binary.BigEndian.Uint32(body[16:20]); rs < 18 || len(body) < 21+idLen {
		return nil, fmt.Errorf("record size %d, key id of %d bytes", rs, idLen)
	}
	senderPub, ciphertext := body[21:21+idLen], body[21+idLen:]
	peer, err := ecdh.P256().NewPublicKey(senderPub)
	if err != nil {
		return nil, err
	}
	secret, err := b.key.ECDH(peer)
	if err != nil {
		return nil, err
	}
	info := append(append([]byte("WebPush: info\x00"), b.key.PublicKey().Bytes()...), senderPub...)
	ikm, err := hkdf.Key(sha256.New, secret, b.auth, string(info), 32)
	if err != nil {
		return nil, err
	}
	cek, err := hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: aes128gcm\x00", 16)
	if err != nil {
		return nil, err
	}
	nonce, err := hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: nonce\x00", 12)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	plain, err := gcm.Open(nil, nonce, ciphertext, nil)
	if err != nil {
		return nil, fmt.Errorf("decrypt: %w", err)
	}
	plain = bytes.TrimRight(plain, "\x00")
	if len(plain) == 0 || plain[len(plain)-1] != 2 { // the last record's delimiter
		return nil, errors.New("no last-record delimiter")
	}
	return plain[:len(plain)-1], nil
}

// Resolver answers host names from its table as DNS would, with no network: a name it
// lacks does not exist (push.Endpoints' Resolver).
type Resolver map[string][]netip.Addr

// LookupNetIP is (*net.Resolver).LookupNetIP on the table.
func (r Resolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if addrs, ok := r[host]; ok {
		return addrs, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// PublicAddr is a public address for Resolver's tables: nothing here connects to it.
var PublicAddr = netip.MustParseAddr("93.184.215.14")
