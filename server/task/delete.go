package task

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"conch/server/store"
	"conch/server/worktree"
	"conch/shared"
)

// DeleteTask stops the task's agents, then removes the task with everything it holds in
// one transaction, and tells the sessions' subscribers; what it held outside the database
// goes last (leftovers).
func (s *Service) DeleteTask(ctx context.Context, id string) error {
	left, live, err := leftoversOf(ctx, s.store, id)
	if err != nil {
		return err
	}
	const reason = "its task was deleted"
	// First, so that no agent writes into what is being deleted; at once, so that agents
	// asked to close their sessions (session/close, bounded) delay the deletion only once.
	var stopping sync.WaitGroup
	for _, sid := range live {
		stopping.Go(func() { s.rt.Stop(sid, reason) })
	}
	stopping.Wait()
	deleted, err := s.store.DeleteTask(ctx, id)
	if err != nil {
		return err
	}
	for _, sid := range deleted {
		if !slices.Contains(live, sid) { // started in between
			s.rt.Stop(sid, reason)
		}
		s.events.SessionDeleted(sid)
	}
	left.remove(s.log)
	s.removeOnRunners(left)
	s.events.TaskDeleted(id)
	return nil
}

// removeOnRunners removes the worktrees that a deleted task on a repo_url has on the
// runners its sessions ran on, as remove does here (its uncommitted work committed onto
// its branch, which the runner's clone keeps). A runner not connected to this server keeps
// its worktree; it is logged.
func (s *Service) removeOnRunners(left leftovers) {
	if left.task.RepoURL == "" || s.ws == nil {
		return
	}
	op := worktree.Op{Op: worktree.OpRemove, URL: left.task.RepoURL, Base: left.task.BaseBranch, Branch: left.task.Branch}
	for _, runner := range left.runners {
		ctx, cancel := context.WithTimeout(context.Background(), worktree.OpTimeout)
		res, err := s.ws.Workspace(ctx, runner, op)
		cancel()
		if err != nil {
			s.log.Warn("a deleted task's worktree stays on its runner", "task", left.task.ID, "runner", runner, "err", err)
			continue
		}
		s.log.Info("worktree removed with its task", "task", left.task.ID, "runner", runner, "dir", res.Dir)
	}
}

// Prune deletes, straight from the database, the tasks idle since before
// (store.IdleTasks) with what they hold outside it, as DeleteTask does with no agent to
// stop: `conch prune`. It returns the tasks as they were, the sessions deleted with them,
// and how many worktrees went.
func Prune(ctx context.Context, st *store.Store, before time.Time, log *slog.Logger) (tasks []shared.Task, sessions []string, worktrees int, err error) {
	ids, err := st.IdleTasks(ctx, before)
	if err != nil {
		return nil, nil, 0, err
	}
	sessions = []string{}
	for _, id := range ids {
		left, _, err := leftoversOf(ctx, st, id)
		var deleted []string
		if err == nil {
			deleted, err = st.DeleteTask(ctx, id)
		}
		switch {
		case shared.ErrorCode(err) == shared.CodeNotFound:
			continue // deleted meanwhile
		case err != nil:
			return tasks, sessions, worktrees, fmt.Errorf("prune: %w", err)
		}
		tasks, sessions = append(tasks, left.task), append(sessions, deleted...)
		worktrees += left.remove(log)
	}
	return tasks, sessions, worktrees, nil
}

// leftovers are what a task holds outside the database: its worktree and its attempts'
// (their branches stay, with uncommitted work committed onto them), its sessions'
// private homes (shared.Sandbox), and the runners its sessions ran on.
type leftovers struct {
	task     shared.Task
	attempts []store.AttemptRecord
	homes    []string
	runners  []string
}

// leftoversOf reads the task id's leftovers, before it is deleted, and its sessions.
func leftoversOf(ctx context.Context, st *store.Store, id string) (leftovers, []string, error) {
	task, err := st.GetTask(ctx, id)
	if err != nil {
		return leftovers{}, nil, err
	}
	sessions, err := st.TaskSessions(ctx, id)
	if err != nil {
		return leftovers{}, nil, err
	}
	left := leftovers{task: task}
	for _, sid := range sessions {
		sess, err := st.GetSession(ctx, sid)
		if err != nil {
			continue
		}
		if sess.Sandbox != nil && sess.Sandbox.Home != "" {
			left.homes = append(left.homes, sess.Sandbox.Home)
		}
		if sess.Runner != "" && !slices.Contains(left.runners, sess.Runner) {
			left.runners = append(left.runners, sess.Runner)
		}
	}
	left.attempts, err = st.Attempts(ctx, id)
	return left, sessions, err
}

// remove removes the leftovers of a deleted task and returns how many worktrees went. The
// task is gone already, so a failure is only logged: a worktree is then git's to prune.
func (l leftovers) remove(log *slog.Logger) (worktrees int) {
	removed := func(what, dir string, err error) {
		if err != nil {
			log.Warn(what+" stays", "task", l.task.ID, "dir", dir, "err", err)
			return
		}
		worktrees++
		log.Info(what+" removed with its task", "task", l.task.ID, "dir", dir)
	}
	if l.task.Worktree != "" {
		removed("worktree", l.task.Worktree, worktree.Remove(context.Background(), l.task.Repo, l.task.Worktree))
	}
	for _, a := range l.attempts {
		if _, err := os.Stat(a.Worktree); err != nil {
			continue
		}
		removed("attempt's worktree", a.Worktree, worktree.RemoveKeeping(context.Background(), l.task.Repo, a.Worktree,
			fmt.Sprintf("Uncommitted work of attempt %d, kept by Conch when the task was deleted", a.N)))
	}
	for _, home := range l.homes {
		// <data>/sandboxes/<session id>/home: the session's directory goes, its home and TMPDIR.
		if dir := filepath.Dir(home); filepath.Base(filepath.Dir(dir)) == "sandboxes" {
			if err := os.RemoveAll(dir); err != nil {
				log.Warn("a deleted session's sandbox home stays", "dir", dir, "err", err)
			}
		}
	}
	return worktrees
}
