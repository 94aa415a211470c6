package worktree

import (
	"context"
	"errors"
	"os/exec"
	"slices"
	"strings"

	"conch/shared"
)

// Landing modes of Land.
const (
	ModeMerge  = "merge"  // a merge commit of the branch on the base
	ModeRebase = "rebase" // the branch rebased onto the base, which then moves to it
)

// identity is the author and committer of the commits Conch makes: the repository's own
// user when it names one, else Conch (the server's global configuration is never read).
func identity(ctx context.Context, dir string) []string {
	if _, err := git(ctx, dir, 0, nil, "config", "--get", "user.email"); err == nil {
		return nil
	}
	return []string{"GIT_AUTHOR_NAME=Conch", "GIT_AUTHOR_EMAIL=conch@localhost",
		"GIT_COMMITTER_NAME=Conch", "GIT_COMMITTER_EMAIL=conch@localhost"}
}

// Commit commits all of the worktree dir's work (what git does not ignore) on its branch.
// Nothing to commit is CodeConflict.
func Commit(ctx context.Context, dir, message string) error {
	if strings.TrimSpace(message) == "" {
		return shared.Errorf(shared.CodeInvalid, "message is required")
	}
	if _, err := git(ctx, dir, 0, nil, "add", "--all"); err != nil {
		return err
	}
	if _, err := git(ctx, dir, 0, nil, "diff", "--cached", "--quiet"); err == nil {
		return shared.Errorf(shared.CodeConflict, "nothing to commit: the task's worktree has no uncommitted work")
	}
	_, err := git(ctx, dir, 0, identity(ctx, dir), "commit", "--no-verify", "--quiet", "-m", message)
	return err
}

// Land brings branch (checked out in the worktree dir) onto base in repo, locally, by mode.
// A conflict is CodeConflict with the conflicting paths, and leaves repo and dir as they
// were. The worktree's work must be committed first, and a base checked out with
// uncommitted changes is refused: landing would have to touch them.
func Land(ctx context.Context, repo, dir, base, branch, mode string) error {
	if mode != ModeMerge && mode != ModeRebase {
		return shared.Errorf(shared.CodeInvalid, `mode must be "merge" or "rebase"`)
	}
	if dirty, err := status(ctx, dir, "all"); err != nil || dirty {
		return errOr(err, shared.Errorf(shared.CodeConflict, "the task's worktree has uncommitted work: commit it first"))
	}
	from, err := commit(ctx, repo, base)
	if err != nil {
		return err
	}
	head, err := commit(ctx, repo, branch)
	if err != nil {
		return err
	}
	if _, err := git(ctx, repo, 0, nil, "merge-base", "--is-ancestor", head, from); err == nil {
		return shared.Errorf(shared.CodeConflict, "nothing to land: %s has every commit of %s", base, branch)
	}
	checkout, err := checkedOut(ctx, repo, base)
	if err != nil {
		return err
	}
	if checkout != "" {
		if dirty, err := status(ctx, checkout, "no"); err != nil || dirty {
			return errOr(err, shared.Errorf(shared.CodeConflict, "%s is checked out in %s with uncommitted changes: commit or discard them first", base, checkout))
		}
	}
	var to string
	if mode == ModeMerge {
		to, err = mergeCommit(ctx, repo, from, head, branch, base)
	} else {
		to, err = rebase(ctx, dir, from, branch, base)
	}
	if err != nil {
		return err
	}
	if checkout != "" {
		_, err = git(ctx, checkout, 0, nil, "merge", "--ff-only", "--quiet", to)
	} else {
		_, err = git(ctx, repo, 0, nil, "update-ref", "-m", "conch: land "+branch, "refs/heads/"+base, to, from)
	}
	if err != nil {
		return shared.Errorf(shared.CodeConflict, "cannot move %s to the landed commit: %s", base, reason(err))
	}
	return nil
}

// mergeCommit makes the merge commit of head onto from without touching any work tree or
// index (git merge-tree), so a conflict has nothing to undo.
func mergeCommit(ctx context.Context, repo, from, head, branch, base string) (string, error) {
	out, err := git(ctx, repo, 0, nil, "merge-tree", "--write-tree", "-z", "--name-only", "--no-messages", from, head)
	fields := strings.Split(string(out), "\x00")
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 {
		return "", conflict(branch, base, fields[1:])
	}
	if err != nil {
		return "", err
	}
	c, err := git(ctx, repo, 0, identity(ctx, repo), "commit-tree", fields[0], "-p", from, "-p", head,
		"-m", "Merge branch '"+branch+"' into "+base)
	return strings.TrimSpace(string(c)), err
}

// rebase rebases the worktree dir's branch onto from and returns its new head; on a
// conflict the rebase is aborted, which puts the branch and the worktree back.
func rebase(ctx context.Context, dir, from, branch, base string) (string, error) {
	_, err := git(ctx, dir, 0, identity(ctx, dir), "rebase", "--quiet", "--no-autostash", from)
	if err != nil {
		paths, _ := git(ctx, dir, 0, nil, "diff", "--name-only", "-z", "--diff-filter=U")
		if _, abortErr := git(context.Background(), dir, 0, nil, "rebase", "--abort"); abortErr != nil {
			return "", errors.Join(err, abortErr)
		}
		if len(paths) == 0 {
			return "", shared.Errorf(shared.CodeConflict, "cannot rebase %s onto %s: %s", branch, base, reason(err))
		}
		return "", conflict(branch, base, strings.Split(string(paths), "\x00"))
	}
	head, err := git(ctx, dir, 0, nil, "rev-parse", "--verify", "HEAD^{commit}")
	return strings.TrimSpace(string(head)), err
}

// conflict is the error of a landing that stopped on conflicts in paths (NUL-split git output).
func conflict(branch, base string, paths []string) error {
	e := &shared.Conflict{Err: shared.Errorf(shared.CodeConflict, "%s conflicts with %s: nothing was changed; resolve it in the task (rebase or merge %s there) and land again", branch, base, base)}
	for _, p := range paths {
		if p != "" {
			e.Paths = append(e.Paths, strings.ToValidUTF8(p, "\uFFFD"))
		}
	}
	return e
}

// status reports whether the work tree dir has uncommitted changes; untracked is "all"
// to count untracked files, "no" not to.
func status(ctx context.Context, dir, untracked string) (bool, error) {
	out, err := git(ctx, dir, 0, nil, "status", "--porcelain", "-z", "--untracked-files="+untracked)
	return len(out) > 0, err
}

// checkedOut is the work tree where branch is checked out, "" when none.
func checkedOut(ctx context.Context, repo, branch string) (string, error) {
	out, err := git(ctx, repo, 0, nil, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return "", err
	}
	var path string
	for _, line := range strings.Split(string(out), "\x00") {
		switch {
		case strings.HasPrefix(line, "worktree "):
			path = strings.TrimPrefix(line, "worktree ")
		case line == "branch refs/heads/"+branch:
			return path, nil
		}
	}
	return "", nil
}

// maxPushMessage bounds what git said of a failed push in the error a client sees.
const maxPushMessage = 1000

// Push pushes branch from the worktree dir to the repository's remote origin. The remote's
// hooks are its own business, except for a remote on this machine: its receive-pack runs
// in the server's process tree, in a repository the agent may have written.
func Push(ctx context.Context, dir, branch string) error {
	urls, err := git(ctx, dir, 0, nil, "remote", "get-url", "--push", "--all", "origin")
	if err != nil {
		return shared.Errorf(shared.CodeConflict, "the repository has no remote origin to push to")
	}
	// git pushes to every push URL: one on this machine needs receivePack, which HTTP
	// ignores but an ssh server would run, without its own hooks.
	all := strings.Split(strings.TrimSuffix(string(urls), "\n"), "\n")
	receive := "git-receive-pack"
	if slices.ContainsFunc(all, local) {
		if slices.ContainsFunc(all, func(u string) bool {
			return !local(u) && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://")
		}) {
			return shared.Errorf(shared.CodeConflict, "origin pushes both to a repository on this machine and to another by ssh: Conch pushes to one kind at a time")
		}
		receive = receivePack()
	}
	_, err = git(ctx, dir, 0, nil, "push", "--quiet", "--receive-pack="+receive, "origin", "refs/heads/"+branch+":refs/heads/"+branch)
	if err != nil {
		said := strings.ToValidUTF8(reason(err), "\uFFFD")
		if len(said) > maxPushMessage {
			said = strings.ToValidUTF8(said[:maxPushMessage], "") + " …"
		}
		return shared.Errorf(shared.CodeConflict, "pushing %s to origin failed: %s", branch, said)
	}
	return nil
}

// receivePack is the program a push starts in a repository on this machine: git
// receive-pack with safety on its command line. The GIT_CONFIG_* variables do not reach
// it (git clears GIT_CONFIG_COUNT, a repository-local variable, for a local transport's
// child), -c does, and receive-pack passes it on to the git commands it starts.
func receivePack() string {
	cmd := "git"
	for _, kv := range safety {
		cmd += " -c '" + strings.ReplaceAll(kv[0]+"="+kv[1], "'", `'\''`) + "'"
	}
	return cmd + " receive-pack"
}

// local reports whether a remote URL names a repository on this machine, as git reads it:
// file://, or a path (no "host:" before the first slash).
func local(url string) bool {
	if strings.HasPrefix(url, "file://") {
		return true
	}
	if strings.Contains(url, "://") {
		return false
	}
	colon, slash := strings.IndexByte(url, ':'), strings.IndexByte(url, '/')
	return colon < 0 || slash >= 0 && slash < colon
}

// errOr is err when there is one, else refusal.
func errOr(err, refusal error) error {
	if err != nil {
		return err
	}
	return refusal
}
