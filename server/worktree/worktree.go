package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"conch/shared"
)

// Repo checks that path names a git work tree's top level the server can reach and that
// base (the repository's current branch when "") is one of its branches. It returns the
// cleaned path and the base branch's name.
func Repo(ctx context.Context, path, base string) (string, string, error) {
	if !filepath.IsAbs(path) {
		return "", "", shared.Errorf(shared.CodeInvalid, "repo must be an absolute path")
	}
	path = filepath.Clean(path)
	if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
		return "", "", shared.Errorf(shared.CodeInvalid, "repo %s is not a directory the server can reach", path)
	}
	top, err := git(ctx, path, 0, nil, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", "", shared.Errorf(shared.CodeInvalid, "repo %s is not a git work tree", path)
	}
	if real, _ := filepath.EvalSymlinks(path); strings.TrimSuffix(string(top), "\n") != real {
		return "", "", shared.Errorf(shared.CodeInvalid, "repo %s is inside a git work tree, not its top level (%s)", path, strings.TrimSpace(string(top)))
	}
	if base == "" {
		out, err := git(ctx, path, 0, nil, "symbolic-ref", "--quiet", "--short", "HEAD")
		if err != nil {
			return "", "", shared.Errorf(shared.CodeInvalid, "repo %s is on no branch: name base_branch", path)
		}
		base = strings.TrimSpace(string(out))
	}
	if _, err := commit(ctx, path, base); err != nil {
		return "", "", err
	}
	return path, base, nil
}

// maxBranches bounds the branches Inspect lists.
const maxBranches = 1000

// Inspect says what the directory dir (absolute, its links resolved) is to git: the top of
// the work tree it is in, that tree's current branch and its local branches by name (at
// most maxBranches, and the current one). A directory in no work tree is
// Top "": no error.
func Inspect(ctx context.Context, dir string) (shared.Repository, error) {
	r := shared.Repository{Path: dir, Branches: []string{}}
	top, err := git(ctx, dir, 0, nil, "rev-parse", "--show-toplevel")
	var gitErr *Error
	if errors.As(err, &gitErr) { // git says it is no work tree (or one it will not read)
		return r, nil
	}
	if err != nil {
		return r, err
	}
	r.Top = strings.TrimSuffix(string(top), "\n")
	if out, err := git(ctx, dir, 0, nil, "symbolic-ref", "--quiet", "--short", "HEAD"); err == nil {
		r.Branch = strings.TrimSpace(string(out))
	}
	out, err := git(ctx, dir, 0, nil, "for-each-ref", "--count="+strconv.Itoa(maxBranches), "--format=%(refname)", "refs/heads/")
	if err != nil {
		return r, err
	}
	for _, ref := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if b, ok := strings.CutPrefix(ref, "refs/heads/"); ok {
			r.Branches = append(r.Branches, b)
		}
	}
	if r.Branch != "" && !slices.Contains(r.Branches, r.Branch) {
		if _, err := commit(ctx, dir, r.Branch); err == nil { // past the bound; none before its first commit
			r.Branches = append(r.Branches, r.Branch)
		}
	}
	return r, nil
}

// commit resolves branch to its commit; a branch that is not there is CodeInvalid.
func commit(ctx context.Context, dir, branch string) (string, error) {
	if err := CheckBranch(branch); err != nil {
		return "", err
	}
	out, err := git(ctx, dir, 0, nil, "rev-parse", "--verify", "--quiet", "--end-of-options", "refs/heads/"+branch+"^{commit}")
	if err != nil {
		return "", shared.Errorf(shared.CodeInvalid, "the repository has no branch %q", branch)
	}
	return strings.TrimSpace(string(out)), nil
}

// CheckBranch refuses what git would not take as a branch's name, or would read as an
// option.
func CheckBranch(branch string) error {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	if strings.HasPrefix(branch, "-") || shared.CheckLength("branch", branch, MaxURLBytes) != nil {
		return shared.Errorf(shared.CodeInvalid, "%q is not a branch name", branch)
	}
	if _, err := run(ctx, "/", 0, env(safety), "check-ref-format", "refs/heads/"+branch); err != nil {
		return shared.Errorf(shared.CodeInvalid, "%q is not a branch name", branch)
	}
	return nil
}

// Branch is the branch of a task: conch/<the first 8 characters of its id>-<a slug of its title>.
func Branch(taskID, title string) string {
	var slug []rune
	dash := false
	for _, r := range strings.ToLower(title) {
		switch {
		case r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			slug, dash = append(slug, r), false
		case !dash && len(slug) > 0:
			slug, dash = append(slug, '-'), true
		}
		if len(slug) == 32 {
			break
		}
	}
	short := taskID
	if len(short) > 8 {
		short = short[:8]
	}
	if s := strings.Trim(string(slug), "-"); s != "" {
		return "conch/" + short + "-" + s
	}
	return "conch/" + short
}

// Dir is where the worktree of branch lives: inside the repository's own git directory,
// which git never lists as a change and which goes with the repository.
func Dir(ctx context.Context, repo, branch string) (string, error) {
	out, err := git(ctx, repo, 0, nil, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return "", err
	}
	return filepath.Join(strings.TrimSpace(string(out)), "conch-worktrees", strings.TrimPrefix(branch, "conch/")), nil
}

// Add creates branch from base and checks it out in a new worktree; it returns the
// worktree's path. A branch that exists already is CodeConflict; on any failure the
// repository is left as it was (no branch, no worktree).
func Add(ctx context.Context, repo, base, branch string) (string, error) {
	from, err := commit(ctx, repo, base)
	if err != nil {
		return "", err
	}
	if _, err := git(ctx, repo, 0, nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch); err == nil {
		return "", shared.Errorf(shared.CodeConflict, "branch %s exists already in %s", branch, repo)
	}
	dir, err := Dir(ctx, repo, branch)
	if err != nil {
		return "", err
	}
	if _, err := os.Lstat(dir); err == nil {
		return "", shared.Errorf(shared.CodeConflict, "%s exists already", dir)
	}
	if _, err := git(ctx, repo, 0, nil, "worktree", "add", "--quiet", "-b", branch, "--end-of-options", dir, from); err != nil {
		// git removes what it made when the checkout fails; make sure of it.
		_, _ = git(context.Background(), repo, 0, nil, "worktree", "remove", "--force", "--end-of-options", dir)
		_, _ = git(context.Background(), repo, 0, nil, "branch", "-D", "--end-of-options", branch)
		return "", shared.Errorf(shared.CodeInvalid, "cannot make a worktree of %s: %s", repo, reason(err))
	}
	return dir, nil
}

// Remove removes the worktree and keeps its branch, with the worktree's uncommitted work
// (what git does not ignore) as one more commit on it: nothing the agent wrote is lost.
func Remove(ctx context.Context, repo, dir string) error {
	return RemoveKeeping(ctx, repo, dir, "Uncommitted work of the task, kept by Conch when the task was deleted")
}

// RemoveKeeping is Remove with the message of the commit that keeps the uncommitted work.
func RemoveKeeping(ctx context.Context, repo, dir, message string) error {
	if _, err := os.Stat(dir); err == nil {
		if _, err := git(ctx, dir, 0, nil, "add", "--all"); err != nil {
			return fmt.Errorf("keep the uncommitted work of %s: %w", dir, err)
		}
		if _, err := git(ctx, dir, 0, nil, "diff", "--cached", "--quiet"); err != nil { // something to keep
			if _, err := git(ctx, dir, 0, identity(ctx, dir), "commit", "--no-verify", "--quiet", "-m", message); err != nil {
				return fmt.Errorf("keep the uncommitted work of %s: %w", dir, err)
			}
		}
	}
	if _, err := git(ctx, repo, 0, nil, "worktree", "remove", "--force", "--end-of-options", dir); err != nil {
		if _, statErr := os.Stat(dir); errors.Is(statErr, os.ErrNotExist) {
			_, err = git(ctx, repo, 0, nil, "worktree", "prune")
		}
		return err
	}
	return nil
}

// reason is what git said, for people.
func reason(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Stderr != "" {
		return e.Stderr
	}
	return err.Error()
}
