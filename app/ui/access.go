package ui

import (
	"context"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/shared"
)

// stateReadOnly is the app state that holds why the session shown is read-only for the
// person ("" while they may change it): the session page sets it, and every permission
// request's row observes it, so no button is drawn that the server would refuse.
const stateReadOnly = "conch/read-only"

// readOnlyReason says in one line why acc may not change task, or "" when it may. The
// rule is the server's (task.MayEdit, answered for acc); this only words it.
func readOnlyReason(acc shared.Account, task shared.Task) string {
	switch {
	case task.MayEdit:
		return ""
	case acc.TaskID != "":
		return "Read only: this task was shared with you by a link."
	case acc.Role == shared.RoleViewer:
		return "Read only: you are a viewer."
	case task.Owner == "":
		return "Read only: ask an admin to share this task with you."
	}
	return shared.Visible(task.Owner) + "'s task: ask " + shared.Visible(task.Owner) + " or an admin to share it."
}

// checkAccess reads the session's task, for the header, and asks who the person is and
// what they may do with it: the page is read-only when they may not change it.
func (p *SessionPage) checkAccess(ctx app.Context, c context.Context, taskID string) {
	task, err := api.GetTask(c, taskID)
	if err != nil {
		return // the server refuses what the person may not do, and says why
	}
	acc, err := api.Me(c)
	dispatchIn(ctx, c, func(ctx app.Context) {
		p.task = &task
		if err == nil {
			p.readOnly = readOnlyReason(acc, task)
			ctx.SetState(stateReadOnly, p.readOnly)
		}
	})
}
