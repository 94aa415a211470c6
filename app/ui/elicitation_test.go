package ui

import (
	"testing"

	"conch/shared"
)

// A question that sends the person to a page names, beside its link, the host the link
// opens, as the server gives it (an international name in its xn-- form: the store's
// TestURLHost), in bold and monospace, whatever the rest of the address says. An address
// that is not http(s), or that has no host, gets neither a link nor a host.
func TestElicitationURLHost(t *testing.T) {
	for _, tc := range []struct {
		name, url, host string
		shown           bool
	}{
		{"an international name", "https://раураl.test/signin", "xn--l-7sba6dbr.test", true},
		{"a port", "http://127.0.0.1:8443/callback", "127.0.0.1:8443", true},
		{"a name before @ is not the host", "https://example.com@attacker.test/login", "attacker.test", true},
		{"not http(s)", "javascript:alert(1)", "", false},
		{"not http(s), whatever the server says", "javascript:alert(1)", "example.test", false},
		{"no host", "https:///signin", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := shared.Message{ID: "e1", AuthorType: shared.AuthorAgent, Type: shared.TypeElicitation, Content: "Sign in",
				Metadata: &shared.Metadata{Status: shared.StatusPending,
					Elicitation: &shared.Elicitation{Mode: shared.ElicitURL, URL: tc.url, Host: tc.host}}}
			html := compact(render(t, &ElicitationRow{SessionID: "s1", Msg: msg}))
			host := `>Opens <strong><code>` + tc.host + `</code></strong></span>` // attributes come in any order
			if !tc.shown {
				checkHTML(t, html, []string{`class="elic-address"`}, []string{"elic-host", "elic-open", "href="})
				return
			}
			checkHTML(t, html, []string{`class="elic-open"`, `aria-describedby="elic-host-e1"`, `id="elic-host-e1"`, `class="elic-host"`, host, `class="elic-address"`}, nil)
		})
	}
}
