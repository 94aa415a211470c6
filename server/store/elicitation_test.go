package store

import (
	"encoding/json"
	"testing"

	"conch/shared"
)

// The host a URL question's link opens, as the page shows it: with its port, an
// international name in its xn-- form (and one that comes in that form left in it), never
// the name before @; "" when there is no http(s) link to open.
func TestURLHost(t *testing.T) {
	for _, tc := range []struct{ url, host string }{
		{"https://example.test/auth?step=1", "example.test"},
		{"http://127.0.0.1:8443/callback", "127.0.0.1:8443"},
		{"https://[::1]:9000/", "[::1]:9000"},
		{"https://Login.Example.TEST/", "login.example.test"}, // as the browser looks it up
		{"https://example.com@attacker.test/login", "attacker.test"},
		// "раураl.test" in Cyrillic letters but the last reads like "paypal.test"
		// (Python's "раураl".encode("idna") gives the same xn-- label).
		{"https://раураl.test/signin", "xn--l-7sba6dbr.test"},
		{"https://xn--l-7sba6dbr.test/signin", "xn--l-7sba6dbr.test"},
		{"https://bücher.example/", "xn--bcher-kva.example"},
		{"https://xn--example-.test/", `"xn--example-.test"`}, // a bad xn-- label hiding an ASCII name
		{"javascript:alert(1)", ""},
		{"https:///signin", ""},
		{"%zz", ""},
	} {
		if got := urlHost(tc.url); got != tc.host {
			t.Errorf("urlHost(%q) = %q, want %q", tc.url, got, tc.host)
		}
	}
}

// Every URL question leaving the store carries its host, also one stored before the field
// existed; a form carries none.
func TestProjectionElicitationHost(t *testing.T) {
	for _, tc := range []struct {
		e    shared.Elicitation
		host string
	}{
		{shared.Elicitation{Mode: shared.ElicitURL, URL: "https://раураl.test/signin"}, "xn--l-7sba6dbr.test"},
		{shared.Elicitation{Mode: shared.ElicitURL, URL: "https://a.test/", Host: "stale.test"}, "a.test"},
		{shared.Elicitation{Mode: shared.ElicitForm}, ""},
	} {
		md, err := json.Marshal(shared.Metadata{Elicitation: &tc.e})
		if err != nil {
			t.Fatal(err)
		}
		m, err := messageRow{ID: "m1", Type: string(shared.TypeElicitation), Metadata: md}.message()
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Metadata.Elicitation.Host; got != tc.host {
			t.Errorf("%+v: host %q, want %q", tc.e, got, tc.host)
		}
	}
}
