package worktree

import (
	"strings"
	"testing"

	"conch/shared"
)

// A task's repo_url is a URL git clones with the transports Conch allows, or a path on
// the runner's disk; nothing git or ssh would read as an option, and no remote helper.
func TestCheckURL(t *testing.T) {
	for _, ok := range []string{
		"https://github.com/example/repo.git",
		"ssh://git@example.com:2222/repo.git",
		"git@example.com:example/repo.git",
		"example.com:repo",
		"file:///srv/git/repo.git",
		"file://localhost/srv/git/repo.git",
		"/srv/git/repo.git",
	} {
		if err := CheckURL(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for url, why := range map[string]string{
		"":                                     "is empty",
		"-uhttps://example.com/r":              "starts with -",
		"--upload-pack=touch /tmp/x":           "starts with -",
		"ext::sh -c id":                        "whitespace",
		"ext::sh":                              "remote helper",
		"fd::3":                                "remote helper",
		"https://example.com/a::b":             "remote helper",
		"git://example.com/r.git":              "is not https://",
		"http://example.com/r.git":             "is not https://",
		"HTTPS://example.com/r.git":            "is not https://",
		"ssh://-oProxyCommand=id/r":            "starts with -",
		"ssh://-oProxyCommand@host/r":          "starts with -",
		"-oProxyCommand=id:r":                  "starts with -",
		"git@-oProxyCommand=id:r":              "starts with -",
		"@host:r":                              "starts with -",
		"https:///no-host":                     "names no host",
		"file://other/srv/r.git":               "is not file:///",
		"relative/path":                        "is not a URL git can clone",
		"/srv/../etc/r.git":                    "not a clean absolute path",
		"https://example.com/r\n.git":          "control character",
		"https://example.com/\x00":             "NUL",
		"https://example.com/\xff":             "not valid UTF-8",
		"/" + strings.Repeat("a", MaxURLBytes): "longer than",
	} {
		err := CheckURL(url)
		if shared.ErrorCode(err) != shared.CodeInvalid || !strings.Contains(err.Error(), why) {
			t.Errorf("%q: %v, want invalid with %q", url, err, why)
		}
	}
}
