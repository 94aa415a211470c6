package ui

import (
	"testing"

	"conch/shared"
)

// A question that sends the person to a page names, beside its link, the host the link
// opens: in bold and monospace, with its port, an international name in its xn-- form
// (and one that comes in that form left in it), whatever the rest of the address says.
// An address that is not http(s) gets neither a link nor a host.
func TestElicitationURLHost(t *testing.T) {
	for _, tc := range []struct {
		name, url string
		host      string // "" for no link
	}{
		{"a plain host", "https://example.test/auth?step=1", "example.test"},
		{"a port", "http://127.0.0.1:8443/callback", "127.0.0.1:8443"},
		{"an IPv6 address", "https://[::1]:9000/", "[::1]:9000"},
		{"capitals as the browser looks them up", "https://Login.Example.TEST/", "login.example.test"},
		{"a name before @ is not the host", "https://example.com@attacker.test/login", "attacker.test"},
		// "раураl.test" in Cyrillic letters but the last reads like "paypal.test"
		// (Python's "раураl".encode("idna") gives the same xn-- label).
		{"an international name", "https://раураl.test/signin", "xn--l-7sba6dbr.test"},
		{"an international name in its xn-- form", "https://xn--l-7sba6dbr.test/signin", "xn--l-7sba6dbr.test"},
		{"an umlaut", "https://bücher.example/", "xn--bcher-kva.example"},
		{"an xn-- label that hides an ASCII name", "https://xn--example-.test/", `&#34;xn--example-.test&#34;`},
		{"not http(s)", "javascript:alert(1)", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := shared.Message{ID: "e1", AuthorType: shared.AuthorAgent, Type: shared.TypeElicitation, Content: "Sign in",
				Metadata: &shared.Metadata{Status: shared.StatusPending,
					Elicitation: &shared.Elicitation{Mode: shared.ElicitURL, URL: tc.url}}}
			html := compact(render(t, &ElicitationRow{SessionID: "s1", Msg: msg}))
			host := `>Opens <strong><code>` + tc.host + `</code></strong></span>` // attributes come in any order
			if tc.host == "" {
				checkHTML(t, html, []string{`class="elic-address"`}, []string{"elic-host", "elic-open", "href="})
				return
			}
			checkHTML(t, html, []string{`class="elic-open"`, `aria-describedby="elic-host-e1"`, `id="elic-host-e1"`, `class="elic-host"`, host, `class="elic-address"`}, nil)
		})
	}
}
