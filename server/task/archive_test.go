package task

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestRedactSecrets: every shape of key and token the export redacts, and text that only
// looks close, which stays.
func TestRedactSecrets(t *testing.T) {
	for _, secret := range []string{
		"conch_ABCDEFGHIJKLMNOPQRSTUVWXYZ",
		"sk-proj-abcdefghijklmnopqrstuvwxyz012345",
		"sk-ant-api03-abcdefghijklmnopqrstuvwxyz_0123",
		"ghp_abcdefghijklmnopqrstuvwxyz0123456789",
		"github_pat_11ABCDEFG0123456789_abcdefghij",
		"glpat-abcdefghijklmnopqrst",
		"AKIAIOSFODNN7EXAMPLE",
		"AIzaSyA-abcdefghijklmnopqrstuvwxyz01234",
		"xoxb-123456789012-abcdefghij",
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
		"Bearer abcdefghijklmnopqrstuvwxyz.0123456789",
		"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
	} {
		text := "export KEY=" + secret + "\nnext line"
		if got, want := RedactSecrets(text), "export KEY="+Redacted+"\nnext line"; got != want {
			t.Errorf("RedactSecrets(%q) = %q, want %q", text, got, want)
		}
		// In JSON text (how the export applies it), the result is still JSON.
		b, _ := json.Marshal(map[string]string{"a": "\"quoted\"\t" + secret, "b": secret + `\`})
		if red := RedactSecrets(string(b)); !json.Valid([]byte(red)) || strings.Contains(red, secret) {
			t.Errorf("redacted JSON %s: invalid, or still holds the secret", red)
		}
	}
	for _, plain := range []string{
		"conch_session", "conch_ABC", "sk-short", "task-0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
		"AKIA is a prefix", "the bearer of news", "go test ./... -run TestGitHub_pat",
	} {
		if got := RedactSecrets(plain); got != plain {
			t.Errorf("RedactSecrets(%q) = %q: it is no secret", plain, got)
		}
	}
}
