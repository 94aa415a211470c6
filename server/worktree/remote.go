package worktree

import (
	"net/url"
	"path/filepath"
	"strings"
	"unicode"

	"conch/shared"
)

// MaxURLBytes bounds a task's repo_url.
const MaxURLBytes = 2048

// CheckURL checks a task's repo_url, where a runner gets the task's repository: a URL
// git can clone (https://, ssh://, the scp-like user@host:path, file:// for a repository
// on the runner's own disk) or an absolute path on the runner's disk. Nothing git would
// read as an option (a leading "-", a host or user that starts with one: ssh would take
// it), no remote helper (`ext::`, `fd::`, any `transport::address`, whose program runs on
// the runner), no http:// or git:// (unauthenticated), no whitespace or control
// character. git on the runner allows only these transports too (env).
func CheckURL(raw string) error {
	if err := shared.CheckLength("repo_url", raw, MaxURLBytes); err != nil {
		return err
	}
	bad := func(why string) error {
		return shared.Errorf(shared.CodeInvalid, "repo_url %q %s", raw, why)
	}
	switch {
	case raw == "":
		return bad("is empty")
	case strings.HasPrefix(raw, "-"):
		return bad("starts with -, which git would read as an option")
	case strings.IndexFunc(raw, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return bad("holds whitespace or a control character")
	case strings.Contains(raw, "::"):
		return bad("names a remote helper (transport::address): only https://, ssh://, user@host:path, file:// or an absolute path")
	case strings.HasPrefix(raw, "/"):
		if filepath.Clean(raw) != raw {
			return bad("is not a clean absolute path")
		}
		return nil
	}
	scheme, _, hasScheme := strings.Cut(raw, "://")
	if !hasScheme {
		// scp-like, as git reads it: "[user@]host:path", with no slash before the colon.
		host, path, ok := strings.Cut(raw, ":")
		if !ok || host == "" || path == "" || strings.Contains(host, "/") {
			return bad("is not a URL git can clone: https://, ssh://, user@host:path, file:// or an absolute path")
		}
		user, h, hasUser := strings.Cut(host, "@")
		if !hasUser {
			user, h = "", host
		}
		if h == "" || strings.HasPrefix(h, "-") || hasUser && (user == "" || strings.HasPrefix(user, "-")) {
			return bad("names no host, or a user or host that starts with -")
		}
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return bad("is not a URL: " + err.Error())
	}
	switch scheme {
	case "https", "ssh":
		if u.Hostname() == "" || strings.HasPrefix(u.Host, "-") || strings.HasPrefix(u.User.Username(), "-") {
			return bad("names no host, or a user or host that starts with -")
		}
	case "file":
		if u.Host != "" && u.Host != "localhost" || !strings.HasPrefix(u.Path, "/") {
			return bad("is not file:///an/absolute/path")
		}
	default:
		return bad("is not https://, ssh://, file://, user@host:path or an absolute path")
	}
	return nil
}
