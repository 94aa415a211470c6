package task

import (
	"context"
	"slices"

	"conch/server/store"
	"conch/shared"
)

// Who may do what, for REST and WebSocket alike: a role reaches the roles below it
// (Permits), a write to a task needs an account that may edit it (CheckEdit), sharing needs
// its owner (CheckShare), and a guest of a share link reaches its own task alone (InScope);
// and what they did (Audit).
// docs/API.md, "Accounts and roles".

// admin is the one rule that an admin may do anything: edit and share every task.
func admin(acc shared.Account) bool { return acc.Role == shared.RoleAdmin }

// Permits reports whether acc's role reaches need.
func Permits(acc shared.Account, need string) error {
	if shared.RoleRank(acc.Role) >= shared.RoleRank(need) {
		return nil
	}
	return shared.Errorf(shared.CodeForbidden, "this needs the %s role; %s is %s", need, acc.Login, acc.Role)
}

// Person is the account of a request when it is a person's own, the zero account for the
// server's token and a server without one: what owns a task and signs a prompt.
func Person(acc shared.Account) shared.Account {
	if acc.ID != "" {
		return acc
	}
	return shared.Account{}
}

// Readable is which tasks acc may read, for what lists or searches across tasks: every
// role reads every task (a member may read others' tasks too); a guest only its own.
func Readable(acc shared.Account) store.Readable {
	if acc.TaskID != "" {
		return store.Readable{Tasks: []string{acc.TaskID}}
	}
	return store.EveryTask
}

// InScope refuses a guest (a share link's sign-in, acc.TaskID) anything but its own task:
// whatever e names of another task, a session or message of one, or nothing of its task at
// all (the usage, accounts, …) is not found, as if it did not exist. Its own task's writes
// go on to the role check, which refuses them. The task list shows a guest its one task
// (SeenBy), and its live updates only that task's (hub.Who's Task); /me is its own.
func (s *Service) InScope(ctx context.Context, acc shared.Account, e shared.AuditEvent) error {
	if acc.TaskID == "" || e.Action == "GET /api/v1/tasks" || e.Action == "GET /api/v1/me" || e.Action == shared.ActionTasksSubscribe {
		return nil
	}
	task, err := "", error(nil)
	switch {
	case e.TaskID != "":
		task = e.TaskID
	case e.SessionID != "":
		var sess shared.Session
		sess, err = s.store.GetSession(ctx, e.SessionID)
		task = sess.TaskID
	case e.MessageID != "":
		var m shared.Message
		m, err = s.store.GetMessage(ctx, e.MessageID)
		task = m.TaskID
	}
	if err != nil && shared.ErrorCode(err) != shared.CodeNotFound {
		return err
	}
	if task != acc.TaskID {
		return errNotShared
	}
	return nil
}

var errNotShared = shared.Errorf(shared.CodeNotFound, "not found")

// CheckEdit refuses a write to a task the account may not edit. The task is the one the
// event names, or the one of its session (filled in); one that does not exist is left
// to the handler's own not-found answer.
func (s *Service) CheckEdit(ctx context.Context, acc shared.Account, event *shared.AuditEvent) error {
	if admin(acc) {
		return nil
	}
	if event.TaskID == "" && event.SessionID != "" {
		sess, err := s.store.GetSession(ctx, event.SessionID)
		if shared.ErrorCode(err) == shared.CodeNotFound {
			return nil
		}
		if err != nil {
			return err
		}
		event.TaskID = sess.TaskID
	}
	if event.TaskID == "" {
		return nil // a new task: anyone of the role
	}
	if acc.Role == shared.RoleMember && acc.ID != "" { // a viewer edits nothing
		ok, err := s.store.Edits(ctx, acc.ID, event.TaskID)
		if err != nil || ok {
			return err
		}
	}
	return shared.Errorf(shared.CodeForbidden, "%s may not change this task: it is %s's; ask them or an admin to share it", acc.Login, s.ownerOf(ctx, event.TaskID))
}

// SeenBy is the tasks as acc sees them: a guest only its own task, and each with MayEdit
// by CheckEdit's rule and MayShare by CheckShare's.
func (s *Service) SeenBy(ctx context.Context, acc shared.Account, tasks []shared.Task) ([]shared.Task, error) {
	if acc.TaskID != "" {
		tasks = slices.DeleteFunc(tasks, func(t shared.Task) bool { return t.ID != acc.TaskID })
	}
	var mine map[string]bool
	if acc.Role == shared.RoleMember && acc.ID != "" {
		var err error
		if mine, err = s.store.EditableTasks(ctx, acc.ID); err != nil {
			return nil, err
		}
	}
	for i := range tasks {
		tasks[i].MayEdit = admin(acc) || mine[tasks[i].ID]
		tasks[i].MayShare = mayShare(acc, tasks[i])
	}
	return tasks, nil
}

// CheckShare: only the task's owner and admins share it or take it back (its editors may
// edit it, not hand it on).
func (s *Service) CheckShare(ctx context.Context, acc shared.Account, taskID string) error {
	task, err := s.store.GetTask(ctx, taskID)
	switch {
	case err != nil:
		return err
	case mayShare(acc, task):
		return nil
	}
	return shared.Errorf(shared.CodeForbidden, "only %s or an admin may share this task", s.ownerOf(ctx, taskID))
}

// mayShare is CheckShare's rule, which the task list answers too (Task.MayShare).
func mayShare(acc shared.Account, task shared.Task) bool {
	return admin(acc) || acc.ID != "" && task.Owner == acc.Login
}

func (s *Service) ownerOf(ctx context.Context, taskID string) string {
	if t, err := s.store.GetTask(ctx, taskID); err == nil && t.Owner != "" {
		return t.Owner
	}
	return "the admins"
}

// Audit records a write that succeeded. A store that cannot record it is logged, not
// answered: the write itself is done.
func (s *Service) Audit(ctx context.Context, e shared.AuditEvent) {
	if err := s.store.Record(context.WithoutCancel(ctx), e); err != nil {
		s.log.Error("audit", "action", e.Action, "login", e.Login, "err", err)
	}
}
