package main

import (
	"net/http"
	"testing"
)

func TestHeaderFlag(t *testing.T) {
	var h headerFlag
	for _, v := range []string{"Authorization: Bearer x", "X-A:1", "X-A: 2"} {
		if err := h.Set(v); err != nil {
			t.Fatal(err)
		}
	}
	got := http.Header(h)
	if got.Get("Authorization") != "Bearer x" || len(got.Values("X-A")) != 2 {
		t.Fatalf("headers %v", got)
	}
	if err := h.Set("no colon"); err == nil {
		t.Fatal("a header without a colon was accepted")
	}
}

func TestRunRefusesRemoteTargets(t *testing.T) {
	if err := run([]string{"-n", "1", "http://example.com/"}); err == nil {
		t.Fatal("run accepted a non-loopback URL")
	}
}
