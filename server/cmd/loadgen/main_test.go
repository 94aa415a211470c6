package main

import (
	"net/http"
	"testing"
)

func TestLoopbackURL(t *testing.T) {
	for _, tt := range []struct {
		url string
		ok  bool
	}{
		{"http://127.0.0.1:8080/healthz", true},
		{"http://localhost:1/", true},
		{"http://[::1]:8080/", true},
		{"https://127.0.0.2/", true},
		{"http://example.com/", false},
		{"http://10.0.0.1/", false},
		{"ftp://127.0.0.1/", false},
		{"127.0.0.1:8080", false},
	} {
		if err := loopbackURL(tt.url); (err == nil) != tt.ok {
			t.Errorf("loopbackURL(%q) = %v, want ok=%v", tt.url, err, tt.ok)
		}
	}
}

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
