package api

import (
	"context"
	"net/http"
	"net/url"
	"path/filepath"
	"testing"

	"conch/app/client"
	"conch/shared"
)

// The list and the import through the API (the runtime's side: server/acp's
// lifecycle_test.go): the directory is checked before the agent is asked, the import
// answers the new sessions, stopped and resumable, and names them in the task's list.
func TestAgentSessionsRoutes(t *testing.T) {
	e := newEnv(t)
	var task shared.Task
	e.expect(http.StatusCreated, "POST", "/api/v1/tasks", `{"title":"Earlier work"}`, &task)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	list := "/api/v1/tasks/" + task.ID + "/agent-sessions?agent=shell&cwd="
	e.expect(http.StatusBadRequest, "GET", list, "", nil)                                                // no cwd on a task on no repository
	e.expect(http.StatusBadRequest, "GET", list+url.QueryEscape("relative"), "", nil)                    // not absolute
	e.expect(http.StatusBadRequest, "GET", "/api/v1/tasks/"+task.ID+"/agent-sessions?cwd="+dir, "", nil) // no agent
	e.expect(http.StatusNotFound, "GET", "/api/v1/tasks/nope/agent-sessions?agent=shell&cwd="+dir, "", nil)
	var page shared.AgentSessionPage
	e.expect(http.StatusOK, "GET", list+url.QueryEscape(dir), "", &page)
	if page.Cwd != dir || page.Agent != "shell" || len(page.Sessions) != 1 || page.Sessions[0].ID != "agent-1" {
		t.Fatalf("page %+v", page)
	}

	imp := "/api/v1/tasks/" + task.ID + "/agent-sessions/import"
	e.expect(http.StatusBadRequest, "POST", imp, `{"agent":"shell","session_ids":["agent-1"]}`, nil) // no cwd
	e.expect(http.StatusBadRequest, "POST", imp, `{"agent":"shell","cwd":"`+dir+`","session_ids":"agent-1"}`, nil)
	var got shared.ImportedSessions
	e.expect(http.StatusCreated, "POST", imp, `{"agent":"shell","cwd":"`+dir+`","session_ids":["agent-1"]}`, &got)
	if len(got.Sessions) != 1 || got.Sessions[0].TaskID != task.ID || !got.Sessions[0].Stopped || !got.Sessions[0].Resumable || got.Sessions[0].Cwd != dir {
		t.Fatalf("imported %+v", got)
	}
	e.expect(http.StatusConflict, "POST", imp, `{"agent":"shell","cwd":"`+dir+`","session_ids":["agent-1"]}`, nil) // held already
	var tasks struct {
		Tasks []shared.Task `json:"tasks"`
	}
	e.expect(http.StatusOK, "GET", "/api/v1/tasks", "", &tasks)
	if len(tasks.Tasks) != 1 || len(tasks.Tasks[0].Sessions) != 1 || tasks.Tasks[0].Sessions[0].ID != got.Sessions[0].ID {
		t.Errorf("tasks %+v", tasks.Tasks)
	}

	// The UI's typed client, on the same routes.
	c := client.New("http://" + e.listen())
	ctx := context.Background()
	if page, err := c.AgentSessions(ctx, task.ID, "shell", dir, "next"); err != nil || page.Cwd != dir {
		t.Errorf("client list: %+v %v", page, err)
	}
	sessions, err := c.ImportAgentSessions(ctx, task.ID, shared.ImportAgentSessions{Agent: "shell", Cwd: dir, SessionIDs: []string{"agent-2"}})
	if err != nil || len(sessions) != 1 || !sessions[0].Resumable {
		t.Errorf("client import: %+v %v", sessions, err)
	}
	if _, err := c.ImportAgentSessions(ctx, task.ID, shared.ImportAgentSessions{Agent: "shell", SessionIDs: []string{"agent-3"}}); shared.ErrorCode(err) != shared.CodeInvalid {
		t.Errorf("client import without cwd: %v", err)
	}
}
