package task

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"conch/server/store"
	"conch/server/worktree"
	"conch/shared"
)

// checkRepo checks a task request's repository, on the server (repo) or where runners
// clone it (repoURL), and base branch (docs/API.md, "Repositories and worktrees"); no
// repository, no base. The server cannot read a repoURL's branches (it may be a path on
// the runners' disks): its base is named, and checked by the runner.
func checkRepo(ctx context.Context, repo, repoURL, base string) (string, string, error) {
	switch {
	case repo != "" && repoURL != "":
		return "", "", shared.Errorf(shared.CodeInvalid, "name repo (on the server) or repo_url (cloned on runners), not both")
	case repoURL != "":
		if err := worktree.CheckURL(repoURL); err != nil {
			return "", "", err
		}
		if base == "" {
			return "", "", shared.Errorf(shared.CodeInvalid, "repo_url needs a base_branch: the server does not read the repository's branches")
		}
		return "", base, worktree.CheckBranch(base)
	case repo == "":
		if base != "" {
			return "", "", shared.Errorf(shared.CodeInvalid, "base_branch needs a repo")
		}
		return "", "", nil
	}
	if err := shared.CheckText("repo", repo); err != nil {
		return "", "", err
	}
	repo, err := checkDirectory("repo", repo)
	if err != nil {
		return "", "", err
	}
	return worktree.Repo(ctx, repo, base)
}

// Repository says what a directory on the server is to git (shared.Repository), so the
// New task form can offer a worktree; the directory is checked as a task's are.
func (s *Service) Repository(ctx context.Context, path string) (shared.Repository, error) {
	if path == "" {
		return shared.Repository{}, shared.Errorf(shared.CodeInvalid, "path is required")
	}
	if err := shared.CheckLength("path", path, shared.MaxPathBytes); err != nil {
		return shared.Repository{}, err
	}
	dir, err := checkDirectory("path", path)
	if err != nil {
		return shared.Repository{}, err
	}
	return worktree.Inspect(ctx, dir)
}

// checkDirectories checks a task request's additional directories: a few directories
// (checkDirectory), each named once, in the order given.
func checkDirectories(dirs []string) ([]string, error) {
	if len(dirs) > shared.MaxAdditionalDirectories {
		return nil, shared.Errorf(shared.CodeInvalid, "at most %d additional directories", shared.MaxAdditionalDirectories)
	}
	var out []string
	for _, d := range dirs {
		if err := shared.CheckLength("additional directory", d, shared.MaxPathBytes); err != nil {
			return nil, err
		}
		d, err := checkDirectory("additional directory", d)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out, nil
}

// kernelTrees are the kernel's own file systems: a path through one names what the
// reading process sees (/proc/self/cwd is the directory the server runs in, and an
// agent's own in its sandbox; /proc/<pid>/root another process's file system), not a
// project's directory.
var kernelTrees = []string{"/proc", "/sys", "/dev"}

// checkDirectory checks a directory a request names (what says which): an absolute path
// of a directory the server can reach, in none of kernelTrees either as given or with its
// symbolic links resolved. It returns the resolved path, which is then the one kept, so
// what it names cannot change with the process that reads it or a link that moves.
func checkDirectory(what, path string) (string, error) {
	if !filepath.IsAbs(path) {
		return "", shared.Errorf(shared.CodeInvalid, "%s %q is not an absolute path", what, path)
	}
	real, err := filepath.EvalSymlinks(path) // "" when it cannot be resolved
	for _, p := range []string{filepath.Clean(path), real} {
		for _, tree := range kernelTrees {
			if p == tree || strings.HasPrefix(p, tree+"/") {
				return "", shared.Errorf(shared.CodeInvalid, "%s %s is in %s, the kernel's files, not a project's: name the directory itself", what, path, tree)
			}
		}
	}
	if err != nil {
		return "", shared.Errorf(shared.CodeInvalid, "%s %s is not a directory the server can reach", what, path)
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return "", shared.Errorf(shared.CodeInvalid, "%s %s is not a directory the server can reach", what, path)
	}
	return real, nil
}

// ensureWorktree gives a task on a repository its worktree when it has none yet, and says
// so for people (made); one at a time, so two first sessions make one worktree.
func (s *Service) ensureWorktree(ctx context.Context, task shared.Task) (shared.Task, string, error) {
	s.worktrees.Lock()
	defer s.worktrees.Unlock()
	task, err := s.store.GetTask(ctx, task.ID)
	if err != nil || task.Worktree != "" {
		return task, "", err
	}
	branch := worktree.Branch(task.ID, task.Title)
	dir, err := worktree.Add(ctx, task.Repo, task.BaseBranch, branch)
	if err != nil {
		return task, "", err
	}
	if task, err = s.store.SetTaskWorktree(ctx, task.ID, branch, dir); err != nil {
		_ = worktree.Remove(context.Background(), task.Repo, dir)
		return task, "", err
	}
	return task, "Made worktree " + dir + " on a new branch " + branch + " from " + task.BaseBranch + ".", nil
}

// addStatus adds a status message for people to a session and publishes it.
func (s *Service) addStatus(ctx context.Context, sessionID, text string) {
	msg, err := s.store.CreateMessage(ctx, store.NewMessage{SessionID: sessionID, AuthorType: shared.AuthorSystem,
		Type: shared.TypeStatus, Content: text})
	if err != nil {
		s.log.Error("status message", "session", sessionID, "err", err)
		return
	}
	s.events.MessageAdded(msg)
}

// repoTask is the task taskID, which must have a worktree: on the server, or on a
// runner (a task on a repo_url).
func (s *Service) repoTask(ctx context.Context, taskID string) (shared.Task, error) {
	task, err := s.store.GetTask(ctx, taskID)
	if err == nil && task.Worktree == "" && task.RepoURL == "" {
		err = shared.Errorf(shared.CodeNotFound, "the task has no worktree: it names no repository or has had no session yet")
	}
	return task, err
}

// serverTask is repoTask of a task whose worktree is on the server: what reads or lands
// its change here (diffs, a review, a merge) is not done on a runner's yet.
func (s *Service) serverTask(ctx context.Context, taskID string) (shared.Task, error) {
	task, err := s.repoTask(ctx, taskID)
	if err == nil && task.RepoURL != "" {
		err = shared.Errorf(shared.CodeConflict, "the task's worktree is on a runner: push its branch to %s to see its diffs and land it there", task.RepoURL)
	}
	return task, err
}

// Workspaces reaches the worktrees of tasks on a repo_url on the runners connected to
// this server (*runner.Registry).
type Workspaces interface {
	Workspace(ctx context.Context, runner string, op worktree.Op) (worktree.Result, error)
}

// onRunner runs op (its kind and message) on the worktree of task, on a repo_url, on the
// runner of its newest session there, and returns the task's changes after it.
func (s *Service) onRunner(ctx context.Context, task shared.Task, op worktree.Op) (shared.Changes, error) {
	summary, err := s.store.TaskSummary(ctx, task.ID)
	if err != nil {
		return shared.Changes{}, err
	}
	i := slices.IndexFunc(summary.Sessions, func(sess shared.Session) bool { return sess.Runner != "" })
	if i < 0 {
		return shared.Changes{}, shared.Errorf(shared.CodeNotFound, "the task has no worktree: it has had no session on a runner yet")
	}
	op.URL, op.Base, op.Branch = task.RepoURL, task.BaseBranch, task.Branch
	res, err := s.ws.Workspace(ctx, summary.Sessions[i].Runner, op)
	if err == nil && res.Changes == nil {
		err = fmt.Errorf("runner %s answered no changes", summary.Sessions[i].Runner)
	}
	if err != nil {
		return shared.Changes{}, err
	}
	return *res.Changes, nil
}

// Changes is what the task changed, file by file (no diff bodies).
func (s *Service) Changes(ctx context.Context, taskID string) (shared.Changes, error) {
	task, err := s.repoTask(ctx, taskID)
	switch {
	case err != nil:
		return shared.Changes{}, err
	case task.RepoURL != "":
		return s.onRunner(ctx, task, worktree.Op{Op: worktree.OpChanges})
	}
	return worktree.Changes(ctx, task.Worktree, task.BaseBranch, task.Branch)
}

// Diff is one changed file's texts.
func (s *Service) Diff(ctx context.Context, taskID, path string) (shared.FileDiff, error) {
	task, err := s.serverTask(ctx, taskID)
	if err != nil {
		return shared.FileDiff{}, err
	}
	if path == "" {
		return shared.FileDiff{}, shared.Errorf(shared.CodeInvalid, "path is required")
	}
	return worktree.Diff(ctx, task.Worktree, task.BaseBranch, task.Branch, path)
}

// Commit commits all of the task's uncommitted work on its branch.
func (s *Service) Commit(ctx context.Context, taskID, message string) (shared.Changes, error) {
	if err := shared.CheckText("message", message); err != nil {
		return shared.Changes{}, err
	}
	return s.landStep(ctx, taskID, worktree.Op{Op: worktree.OpCommit, Message: message}, func(task shared.Task) error {
		s.worktrees.Lock() // git's index lock would refuse a second commit at once
		defer s.worktrees.Unlock()
		return worktree.Commit(ctx, task.Worktree, message)
	})
}

// Merge brings the task's branch onto its base branch, by merge or rebase (mode).
func (s *Service) Merge(ctx context.Context, taskID, mode string) (shared.Changes, error) {
	if _, err := s.serverTask(ctx, taskID); err != nil {
		return shared.Changes{}, err
	}
	return s.landStep(ctx, taskID, worktree.Op{}, func(task shared.Task) error {
		s.worktrees.Lock() // two tasks landing on one base must not both start from its old commit
		defer s.worktrees.Unlock()
		return worktree.Land(ctx, task.Repo, task.Worktree, task.BaseBranch, task.Branch, mode)
	})
}

// Push pushes the task's branch to the repository's remote origin (a task on a repo_url:
// from the runner, to that URL).
func (s *Service) Push(ctx context.Context, taskID string) (shared.Changes, error) {
	return s.landStep(ctx, taskID, worktree.Op{Op: worktree.OpPush}, func(task shared.Task) error {
		return worktree.Push(ctx, task.Worktree, task.Branch)
	})
}

// landStep runs one step of landing a task's change (step here, op on the runner that
// holds the worktree of a task on a repo_url), tells the task's viewers that its changes
// may have moved, and returns the task's changes summary.
func (s *Service) landStep(ctx context.Context, taskID string, op worktree.Op, step func(shared.Task) error) (shared.Changes, error) {
	task, err := s.repoTask(ctx, taskID)
	if err != nil {
		return shared.Changes{}, err
	}
	if task.RepoURL != "" {
		c, err := s.onRunner(ctx, task, op)
		if err == nil {
			s.events.TaskChanged(task.ID)
		}
		return c, err
	}
	if err := step(task); err != nil {
		return shared.Changes{}, err
	}
	s.events.TaskChanged(task.ID)
	return worktree.Changes(ctx, task.Worktree, task.BaseBranch, task.Branch)
}

// Review sends acc's comments on the task's change to its newest session as one prompt:
// file:line references in the text, and each file as a resource link. The built-in shell
// agent would run it as a command, so a review never goes to it.
func (s *Service) Review(ctx context.Context, acc shared.Account, taskID string, req shared.Review) (shared.Message, error) {
	task, err := s.serverTask(ctx, taskID)
	if err != nil {
		return shared.Message{}, err
	}
	changes, err := worktree.Changes(ctx, task.Worktree, task.BaseBranch, task.Branch)
	if err != nil {
		return shared.Message{}, err
	}
	text, files, err := reviewPrompt(req.Comments, changes, task.Worktree)
	if err != nil {
		return shared.Message{}, err
	}
	summary, err := s.store.TaskSummary(ctx, task.ID)
	if err != nil {
		return shared.Message{}, err
	}
	switch {
	case len(summary.Sessions) == 0:
		return shared.Message{}, shared.Errorf(shared.CodeConflict, "the task has no session to send the review to")
	case summary.Sessions[0].Agent == shared.ShellAgent:
		return shared.Message{}, shared.Errorf(shared.CodeConflict, "the task's newest session is of the built-in shell agent, which would run the review as a shell command: start a session of an agent that takes requests, then send the review")
	}
	return s.Prompt(ctx, acc, summary.Sessions[0].ID, shared.AddRequest{Content: text, ClientMessageID: req.ClientMessageID}, files...)
}

// reviewPrompt is the prompt of a review: one line per comment (its continuation lines
// indented), and the paths in the worktree of the files commented on, each once.
func reviewPrompt(comments []shared.ReviewComment, changes shared.Changes, worktree string) (string, []string, error) {
	if len(comments) == 0 || len(comments) > shared.MaxReviewComments {
		return "", nil, shared.Errorf(shared.CodeInvalid, "a review has 1 to %d comments", shared.MaxReviewComments)
	}
	listed := map[string]bool{}
	for _, f := range changes.Files {
		listed[f.Path] = true
	}
	var b strings.Builder
	b.WriteString("Review comments on your change (file:line, in your worktree):\n")
	var files []string
	for i, cm := range comments {
		switch {
		case !listed[cm.Path]:
			return "", nil, shared.Errorf(shared.CodeInvalid, "comment %d: %q is not a file of the change", i+1, cm.Path)
		case cm.Line < 1:
			return "", nil, shared.Errorf(shared.CodeInvalid, "comment %d: line counts from 1", i+1)
		case strings.TrimSpace(cm.Text) == "":
			return "", nil, shared.Errorf(shared.CodeInvalid, "comment %d: text is required", i+1)
		}
		if err := shared.CheckText("text", cm.Text); err != nil {
			return "", nil, err
		}
		fmt.Fprintf(&b, "\n%s:%d: %s", cm.Path, cm.Line, strings.ReplaceAll(strings.TrimSpace(cm.Text), "\n", "\n    "))
		if f := filepath.Join(worktree, cm.Path); !slices.Contains(files, f) {
			files = append(files, f)
		}
	}
	return b.String(), files, nil
}
