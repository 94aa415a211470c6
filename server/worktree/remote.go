package worktree

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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

// What the server asks of the machine that holds a task's worktree made from a repo_url
// (a runner's; Do): make it, read, commit or push the task's change there, or remove it.
const (
	OpMake    = "make"
	OpChanges = "changes"
	OpCommit  = "commit"
	OpPush    = "push"
	OpRemove  = "remove" // the task was deleted: its uncommitted work is committed onto its branch, which the clone keeps
)

// Op is one operation on the worktree of a task's branch made from a repo_url. The
// worktree's place follows from URL and Branch alone, so no operation names a path.
type Op struct {
	Op      string `json:"op"`
	URL     string `json:"url"`
	Base    string `json:"base"`
	Branch  string `json:"branch"`
	Message string `json:"message,omitempty"` // OpCommit's
}

// Result is what an Op did: the worktree's path and, but for OpMake, the task's changes
// after it.
type Result struct {
	Dir     string          `json:"dir"`
	Changes *shared.Changes `json:"changes,omitempty"`
}

// operating makes the operations of this process take turns: two sessions of a task
// placed here at once make one worktree, and a fetch never races a commit.
var operating sync.Mutex

// Host is the machine Do works on: Dir is its data directory, which holds its clones
// (Dir/repos), the worktrees made from them and its sessions' directories; Repos, when
// not empty, are the patterns of the URLs its tasks may name (path.Match over the whole
// URL: https://git.example.com/acme/*), from the runner's --repos.
type Host struct {
	Dir   string
	Repos []string
}

// allows refuses a URL that names a place under h.Dir (other tasks' clones and
// worktrees, other sessions' directories: no task's repository), as written or through a
// symbolic link, and, when h.Repos is not empty, one that matches none of its patterns.
func (h Host) allows(raw string) error {
	if len(h.Repos) > 0 && !slices.ContainsFunc(h.Repos, func(p string) bool { ok, _ := path.Match(p, raw); return ok }) {
		return shared.Errorf(shared.CodeInvalid, "repo_url %q is not one of the repositories this machine takes (%s)", raw, strings.Join(h.Repos, ", "))
	}
	p := raw
	switch u, err := url.Parse(raw); {
	case strings.HasPrefix(raw, "file://") && err == nil: // CheckURL parsed it
		p = u.Path
	case !strings.HasPrefix(raw, "/"):
		return nil // another machine's
	}
	own := resolved(h.Dir)
	for _, q := range []string{filepath.Clean(p), resolved(p)} {
		if rel, err := filepath.Rel(own, q); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return shared.Errorf(shared.CodeInvalid, "repo_url %q is in this machine's own directory, not a task's repository", raw)
		}
	}
	return nil
}

// resolved is p with its symbolic links followed, or p cleaned when it cannot be.
func resolved(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// Do runs op on machine h, whose clones are under h.Dir/repos: one bare clone per URL
// (<hash of the URL>.git, its branches fetched as refs/remotes/origin/*), holding
// the worktrees of the tasks made from it (Dir). OpMake fetches the clone (made the first
// time), moves its base branch to the repository's, and makes the worktree of the task's
// branch unless it is here already: from the repository's branch of that name when it has
// one (a session that moved from another runner continues the branch pushed there), else
// from the base. The other operations need the worktree here. op is checked as the
// server checks a task's, since it comes from the network, and against h (Host.allows).
func Do(ctx context.Context, h Host, op Op) (Result, error) {
	if err := CheckURL(op.URL); err != nil {
		return Result{}, err
	}
	if err := errors.Join(CheckBranch(op.Base), CheckBranch(op.Branch), h.allows(op.URL)); err != nil {
		return Result{}, err
	}
	operating.Lock()
	defer operating.Unlock()
	sum := sha256.Sum256([]byte(op.URL))
	repo := filepath.Join(h.Dir, "repos", hex.EncodeToString(sum[:12])+".git")
	if op.Op == OpMake {
		dir, err := makeWorktree(ctx, repo, op)
		return Result{Dir: dir}, err
	}
	dir, err := Dir(ctx, repo, op.Branch)
	if err == nil {
		_, err = os.Stat(dir)
	}
	if err != nil {
		return Result{}, shared.Errorf(shared.CodeConflict, "the task's worktree is not on this runner (any more)")
	}
	switch op.Op {
	case OpChanges:
	case OpCommit:
		err = Commit(ctx, dir, op.Message)
	case OpPush:
		err = Push(ctx, dir, op.Branch)
	case OpRemove:
		return Result{Dir: dir}, Remove(ctx, repo, dir)
	default:
		err = shared.Errorf(shared.CodeInvalid, "no worktree operation %q", op.Op)
	}
	if err != nil {
		return Result{}, err
	}
	c, err := Changes(ctx, dir, op.Base, op.Branch)
	return Result{Dir: dir, Changes: &c}, err
}

// makeWorktree is OpMake in the clone repo.
func makeWorktree(ctx context.Context, repo string, op Op) (string, error) {
	if _, err := os.Stat(repo); errors.Is(err, fs.ErrNotExist) {
		if err := initClone(ctx, repo, op.URL); err != nil {
			return "", err
		}
	}
	if _, err := git(ctx, repo, 0, nil, "fetch", "--quiet", "--prune", "--no-tags", "origin", "+refs/heads/*:refs/remotes/origin/*"); err != nil {
		return "", shared.Errorf(shared.CodeConflict, "cannot fetch %s: %s", op.URL, reason(err))
	}
	base, err := git(ctx, repo, 0, nil, "rev-parse", "--verify", "--quiet", "--end-of-options", "refs/remotes/origin/"+op.Base+"^{commit}")
	if err != nil {
		return "", shared.Errorf(shared.CodeInvalid, "%s has no branch %q", op.URL, op.Base)
	}
	if at, err := checkedOut(ctx, repo, op.Base); err != nil || at != "" { // a task's branch as the base of another
		return "", errOr(err, shared.Errorf(shared.CodeConflict, "%s is a task's branch checked out in %s", op.Base, at))
	}
	if _, err := git(ctx, repo, 0, nil, "update-ref", "refs/heads/"+op.Base, strings.TrimSpace(string(base))); err != nil {
		return "", err
	}
	dir, err := Dir(ctx, repo, op.Branch)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	if _, err := git(ctx, repo, 0, nil, "worktree", "prune"); err != nil {
		return "", err
	}
	local := "refs/heads/" + op.Branch
	if _, err := git(ctx, repo, 0, nil, "rev-parse", "--verify", "--quiet", local); err != nil {
		if _, err := git(ctx, repo, 0, nil, "rev-parse", "--verify", "--quiet", "refs/remotes/origin/"+op.Branch+"^{commit}"); err != nil {
			return Add(ctx, repo, op.Base, op.Branch)
		}
		if _, err := git(ctx, repo, 0, nil, "update-ref", local, "refs/remotes/origin/"+op.Branch, ""); err != nil {
			return "", err
		}
	}
	if _, err := git(ctx, repo, 0, nil, "worktree", "add", "--quiet", "--end-of-options", dir, op.Branch); err != nil {
		return "", shared.Errorf(shared.CodeInvalid, "cannot make a worktree of %s: %s", op.Branch, reason(err))
	}
	return dir, nil
}

// initClone makes the bare clone of url at repo, whole or not at all: an empty repository
// with url as its remote origin, which the fetch then fills.
func initClone(ctx context.Context, repo, url string) error {
	if err := os.MkdirAll(filepath.Dir(repo), 0o700); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(repo), ".clone-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if _, err := git(ctx, tmp, 0, nil, "init", "--quiet", "--bare"); err != nil {
		return err
	}
	if _, err := git(ctx, tmp, 0, nil, "config", "remote.origin.url", url); err != nil {
		return err
	}
	return os.Rename(tmp, repo)
}
