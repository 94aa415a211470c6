package ui

import (
	"testing"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/shared"
)

// A task card offers Share only to who may share the task (Task.MayShare: its owner or an
// admin), not to its editors, whom the server would refuse; the other actions stay theirs.
func TestShareButtonOnlyForWhoMayShare(t *testing.T) {
	for _, tt := range []struct {
		name     string
		task     shared.Task
		has, not []string
	}{
		{"owner or admin", shared.Task{ID: "t1", Title: "mine", MayEdit: true, MayShare: true},
			[]string{">Share link</button>", ">Delete</button>"}, nil},
		{"editor", shared.Task{ID: "t1", Title: "shared with me", Owner: "ada", MayEdit: true},
			[]string{">Delete</button>"}, []string{"Share link"}},
		{"reader", shared.Task{ID: "t1", Title: "ada's", Owner: "ada"},
			nil, []string{"Share link", ">Delete</button>"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &TasksPage{agents: []shared.Agent{{Name: "shell"}}}
			checkHTML(t, compact(app.HTMLString(p.renderTask(tt.task))), tt.has, tt.not)
		})
	}
}
