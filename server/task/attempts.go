package task

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"conch/server/store"
	"conch/server/worktree"
	"conch/shared"
)

// Attempts (docs/API.md, "Attempts"): one prompt to several agents, each an ordinary
// session of the task in a worktree and branch of its own from the task's base; acp runs
// the check after each turn and applies the cost cap; this file starts them, lists them
// for the compare table, and keeps one.

// StartAttempts starts one session per agent of req, each on a new worktree, and sends
// each the prompt. The task must be on a repository; the agents must be known; the
// task's attempts running at once may not pass req's cap (CodeConflict, nothing made).
func (s *Service) StartAttempts(ctx context.Context, acc shared.Account, taskID string, req shared.AttemptsRequest) (shared.AttemptList, error) {
	if err := s.checkAttempts(req); err != nil {
		return shared.AttemptList{}, err
	}
	if err := s.rt.Draining(); err != nil {
		return shared.AttemptList{}, err
	}
	task, err := s.store.GetTask(ctx, taskID)
	if err != nil {
		return shared.AttemptList{}, err
	}
	if task.Repo == "" {
		return shared.AttemptList{}, shared.Errorf(shared.CodeInvalid, "attempts need a task on a repository: each runs in a worktree of its own")
	}
	made, err := s.attemptWorktrees(ctx, task, req)
	if err != nil {
		return shared.AttemptList{}, err
	}
	var wg sync.WaitGroup
	for i, a := range made {
		wg.Go(func() { s.startAttempt(context.WithoutCancel(ctx), acc, task, req, a, i) })
	}
	wg.Wait()
	s.events.TaskChanged(task.ID)
	return s.ListAttempts(ctx, task.ID)
}

// madeAttempt is an attempt's worktree, made before its session starts.
type madeAttempt struct {
	n            int
	branch, dir  string
	agent, noted string
}

// checkAttempts checks a request for attempts against the agents this server knows.
func (s *Service) checkAttempts(req shared.AttemptsRequest) error {
	switch {
	case strings.TrimSpace(req.Prompt) == "":
		return shared.Errorf(shared.CodeInvalid, "prompt is required")
	case len(req.Agents) < shared.MinAttempts || len(req.Agents) > shared.MaxAttempts:
		return shared.Errorf(shared.CodeInvalid, "attempts take %d to %d agents", shared.MinAttempts, shared.MaxAttempts)
	case req.MaxRunning < 0 || req.MaxRunning > shared.MaxAttempts:
		return shared.Errorf(shared.CodeInvalid, "max_running is 0 (no cap but %d) to %d", shared.MaxAttempts, shared.MaxAttempts)
	case req.MaxCost < 0 || req.MaxCost > 1e9:
		return shared.Errorf(shared.CodeInvalid, "max_cost is 0 (no cap) or a positive amount")
	}
	if err := shared.CheckLength("prompt", req.Prompt, shared.MaxPromptBytes); err != nil {
		return err
	}
	if err := shared.CheckLength("check", req.Check, shared.MaxPathBytes); err != nil {
		return err
	}
	if err := shared.CheckText("check", req.Check); err != nil {
		return err
	}
	known := s.rt.Agents()
	for _, name := range req.Agents {
		if !slices.ContainsFunc(known, func(a shared.Agent) bool { return a.Name == name }) {
			return shared.Errorf(shared.CodeInvalid, "unknown agent %q", name)
		}
	}
	return nil
}

// attemptWorktrees numbers the new attempts after the task's others and makes their
// worktrees, one at a time with the task's other worktrees; the cap on running attempts
// is checked under the same lock. On a failure the worktrees made are removed.
func (s *Service) attemptWorktrees(ctx context.Context, task shared.Task, req shared.AttemptsRequest) ([]madeAttempt, error) {
	s.worktrees.Lock()
	defer s.worktrees.Unlock()
	before, err := s.store.Attempts(ctx, task.ID)
	if err != nil {
		return nil, err
	}
	limit := cmp(req.MaxRunning, shared.MaxAttempts)
	running := 0
	for _, a := range before {
		if a.Outcome == shared.AttemptOpen && (a.State == shared.SessionRunning || a.State == shared.SessionStarting) {
			running++
		}
	}
	if running+len(req.Agents) > limit {
		return nil, shared.Errorf(shared.CodeConflict, "the task may run %d attempts at once and %d are running: wait for them to end, or stop some, then start %d more",
			limit, running, len(req.Agents))
	}
	base := worktree.Branch(task.ID, task.Title)
	var made []madeAttempt
	for i, agent := range req.Agents {
		a := madeAttempt{n: len(before) + i + 1, agent: agent}
		a.branch = fmt.Sprintf("%s-attempt-%d", base, a.n)
		if a.dir, err = worktree.Add(ctx, task.Repo, task.BaseBranch, a.branch); err != nil {
			for _, m := range made {
				_ = worktree.Remove(context.WithoutCancel(ctx), task.Repo, m.dir)
			}
			return nil, err
		}
		a.noted = fmt.Sprintf("Attempt %d of %d: worktree %s on a new branch %s from %s.", a.n, len(before)+len(req.Agents), a.dir, a.branch, task.BaseBranch)
		made = append(made, a)
	}
	return made, nil
}

// cmp is v, or def when v is 0.
func cmp(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// startAttempt starts one attempt's session, records it and sends it the prompt. A
// session that failed to start is recorded all the same: the table shows it failed.
func (s *Service) startAttempt(ctx context.Context, acc shared.Account, task shared.Task, req shared.AttemptsRequest, a madeAttempt, i int) {
	sess, err := s.rt.StartSession(ctx, task.ID, a.agent, a.dir)
	if err != nil {
		s.log.Error("start an attempt", "task", task.ID, "attempt", a.n, "err", err)
		_ = worktree.Remove(ctx, task.Repo, a.dir)
		return
	}
	if err := s.store.CreateAttempt(ctx, store.NewAttempt{SessionID: sess.ID, TaskID: task.ID, Branch: a.branch,
		Worktree: a.dir, Check: req.Check, N: a.n, MaxRunning: req.MaxRunning, MaxCost: req.MaxCost}); err != nil {
		s.log.Error("record an attempt", "task", task.ID, "attempt", a.n, "err", err)
		return
	}
	s.addStatus(ctx, sess.ID, a.noted)
	if sess.State.Ended() {
		return
	}
	if _, err := s.rt.Prompt(ctx, sess.ID, Person(acc).Login, shared.AddRequest{Content: req.Prompt,
		ClientMessageID: fmt.Sprintf("attempt-%d", i)}); err != nil {
		s.log.Error("prompt an attempt", "task", task.ID, "attempt", a.n, "err", err)
	}
}

// ListAttempts is the task's attempts as the compare table shows them. The size of an
// attempt's change is read from its worktree while it runs, and kept once its turn ended.
func (s *Service) ListAttempts(ctx context.Context, taskID string) (shared.AttemptList, error) {
	task, err := s.store.GetTask(ctx, taskID)
	if err != nil {
		return shared.AttemptList{}, err
	}
	recs, err := s.store.Attempts(ctx, task.ID)
	if err != nil {
		return shared.AttemptList{}, err
	}
	var wg sync.WaitGroup
	for i := range recs {
		if a := &recs[i]; a.Outcome != shared.AttemptKept && a.Outcome != shared.AttemptClosed && !a.StatsFresh {
			wg.Go(func() { s.measure(ctx, task, a) })
		}
	}
	wg.Wait()
	out := shared.AttemptList{Attempts: make([]shared.Attempt, len(recs))}
	for i, r := range recs {
		out.Attempts[i] = r.Attempt
		out.Check = r.CheckCommand
	}
	return out, nil
}

// measureEvery is how old the size of a running attempt's change may be: every viewer of
// a compare table reads the list every few seconds, and each reading runs git.
const measureEvery = 5 * time.Second

// measurement is the size of a running attempt's change, and when it was read.
type measurement struct {
	at                    time.Time
	files, added, removed int
}

// measure reads the size of an attempt's change from its worktree (for a running one, at
// most once per measureEvery), and keeps it when the attempt is at rest (its turn ended:
// it holds until the next).
func (s *Service) measure(ctx context.Context, task shared.Task, a *store.AttemptRecord) {
	if m, ok := s.measured.Load(a.SessionID); ok && !a.AtRest() && s.now().Sub(m.(measurement).at) < measureEvery {
		m := m.(measurement)
		a.Files, a.Added, a.Removed = m.files, m.added, m.removed
		return
	}
	if _, err := os.Stat(a.Worktree); err != nil {
		return
	}
	changes, err := worktree.Changes(ctx, a.Worktree, task.BaseBranch, a.Branch)
	if err != nil {
		s.log.Warn("measure an attempt", "session", a.SessionID, "err", err)
		return
	}
	a.Files, a.Added, a.Removed = len(changes.Files), 0, 0
	for _, f := range changes.Files {
		a.Added += f.AddedLines
		a.Removed += f.RemovedLines
	}
	if !a.AtRest() {
		s.measured.Store(a.SessionID, measurement{at: s.now(), files: a.Files, added: a.Added, removed: a.Removed})
		return
	}
	s.measured.Delete(a.SessionID)
	if err := s.store.SetAttemptStats(ctx, *a); err != nil {
		s.log.Warn("keep an attempt's size", "session", a.SessionID, "err", err)
	}
}

// attempt is the open attempt sessionID of the task (a kept or closed one is
// CodeConflict), with its worktree still there.
func (s *Service) attempt(ctx context.Context, taskID, sessionID string) (shared.Task, store.AttemptRecord, error) {
	task, err := s.store.GetTask(ctx, taskID)
	if err != nil {
		return task, store.AttemptRecord{}, err
	}
	a, err := s.store.GetAttempt(ctx, sessionID)
	switch {
	case err != nil:
		return task, a, err
	case a.TaskID != task.ID:
		return task, a, shared.Errorf(shared.CodeNotFound, "attempt not found")
	case a.Outcome == shared.AttemptKept || a.Outcome == shared.AttemptClosed:
		return task, a, shared.Errorf(shared.CodeConflict, "attempt %d is %s: its worktree is gone, its branch %s keeps its change", a.N, a.Outcome, a.Branch)
	}
	return task, a, nil
}

// AttemptChanges is what one attempt changed, file by file (no bodies).
func (s *Service) AttemptChanges(ctx context.Context, taskID, sessionID string) (shared.Changes, error) {
	task, a, err := s.attempt(ctx, taskID, sessionID)
	if err != nil {
		return shared.Changes{}, err
	}
	return worktree.Changes(ctx, a.Worktree, task.BaseBranch, a.Branch)
}

// AttemptDiff is one changed file's texts in one attempt.
func (s *Service) AttemptDiff(ctx context.Context, taskID, sessionID, path string) (shared.FileDiff, error) {
	if path == "" {
		return shared.FileDiff{}, shared.Errorf(shared.CodeInvalid, "path is required")
	}
	task, a, err := s.attempt(ctx, taskID, sessionID)
	if err != nil {
		return shared.FileDiff{}, err
	}
	return worktree.Diff(ctx, a.Worktree, task.BaseBranch, a.Branch, path)
}

// KeepAttempt lands one attempt through the task's landing path (its uncommitted work
// committed first, then merged or rebased onto the base) and closes the task's other
// attempts: their agents stop, their worktrees go, their branches stay with their work.
// Each session's chat says what became of it.
func (s *Service) KeepAttempt(ctx context.Context, acc shared.Account, taskID, sessionID string, req shared.KeepRequest) (shared.AttemptList, error) {
	mode := req.Mode
	if mode == "" {
		mode = worktree.ModeMerge
	}
	task, kept, err := s.attempt(ctx, taskID, sessionID)
	if err != nil {
		return shared.AttemptList{}, err
	}
	if kept.State == shared.SessionRunning || kept.State == shared.SessionStarting {
		return shared.AttemptList{}, shared.Errorf(shared.CodeConflict, "attempt %d is still %s: wait for its turn to end, or cancel it", kept.N, kept.State)
	}
	s.measure(ctx, task, &kept) // what it changed, before landing makes that nothing
	if err := s.landAttempt(ctx, task, kept, mode); err != nil {
		return shared.AttemptList{}, err
	}
	by := Person(acc).Login
	if ok, err := s.store.EndAttempt(ctx, kept.SessionID, shared.AttemptKept, "Kept by "+by); err != nil || !ok {
		return shared.AttemptList{}, errOr(err, shared.Errorf(shared.CodeConflict, "attempt %d was ended meanwhile", kept.N))
	}
	s.addStatus(ctx, kept.SessionID, fmt.Sprintf("%s kept this attempt: its branch %s landed on %s (%s).", by, kept.Branch, task.BaseBranch, mode))
	others, err := s.store.Attempts(ctx, task.ID)
	if err != nil {
		return shared.AttemptList{}, err
	}
	for _, o := range others {
		if o.SessionID == kept.SessionID || o.Outcome == shared.AttemptKept || o.Outcome == shared.AttemptClosed {
			continue
		}
		s.closeAttempt(ctx, task, o, kept.N, by)
	}
	s.events.TaskChanged(task.ID)
	return s.ListAttempts(ctx, task.ID)
}

// landAttempt commits the attempt's uncommitted work on its branch, then lands the branch.
func (s *Service) landAttempt(ctx context.Context, task shared.Task, a store.AttemptRecord, mode string) error {
	s.worktrees.Lock()
	defer s.worktrees.Unlock()
	err := worktree.Commit(ctx, a.Worktree, fmt.Sprintf("Attempt %d (%s), kept by Conch", a.N, a.Agent))
	if err != nil && !strings.HasPrefix(shared.ErrorMessage(err), "nothing to commit") {
		return err
	}
	return worktree.Land(ctx, task.Repo, a.Worktree, task.BaseBranch, a.Branch, mode)
}

// closeAttempt stops another attempt's agent, keeps the size of its change, and removes
// its worktree; its branch keeps its work.
func (s *Service) closeAttempt(ctx context.Context, task shared.Task, a store.AttemptRecord, keptN int, by string) {
	note := fmt.Sprintf("Closed: %s kept attempt %d. This attempt's branch %s keeps its work.", by, keptN, a.Branch)
	s.rt.Stop(a.SessionID, note)
	s.measure(ctx, task, &a)
	if err := s.store.SetAttemptStats(ctx, a); err != nil {
		s.log.Warn("keep an attempt's size", "session", a.SessionID, "err", err)
	}
	if err := worktree.RemoveKeeping(context.WithoutCancel(ctx), task.Repo, a.Worktree,
		fmt.Sprintf("Uncommitted work of attempt %d, kept by Conch when attempt %d was kept", a.N, keptN)); err != nil {
		s.log.Warn("remove a closed attempt's worktree", "session", a.SessionID, "err", err)
	}
	if _, err := s.store.EndAttempt(ctx, a.SessionID, shared.AttemptClosed, note); err != nil {
		s.log.Error("close an attempt", "session", a.SessionID, "err", err)
	}
	s.addStatus(ctx, a.SessionID, note)
}

// errOr is err, or else alt.
func errOr(err, alt error) error {
	if err != nil {
		return err
	}
	return alt
}
