package api

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"conch/shared"
)

// archiveNames are an archive's entries, by name, with their text.
func archiveNames(t *testing.T, archive string) map[string]string {
	t.Helper()
	zr, err := gzip.NewReader(strings.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	tr, out := tar.NewReader(zr), map[string]string{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		out[hdr.Name] = string(b)
	}
}

// TestExportImport: a viewer exports a task (redacted when asked; the audit only for an
// admin), a member imports it as a new task of theirs that lists the same, and what is not
// an archive, or a viewer's import, stores nothing.
func TestExportImport(t *testing.T) {
	e := newEnv(t, withToken)
	admin, ada, bob, vic, task := e.people()
	ctx := context.Background()
	sess, err := e.store.CreateSession(ctx, task.ID, "shell", "/repo")
	if err != nil {
		t.Fatal(err)
	}
	const key = "conch_ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	if _, _, _, err := e.store.AddUserMessage(ctx, sess.ID, "deploy with "+key, "", "ada"); err != nil {
		t.Fatal(err)
	}
	cmd := e.shell(sess.ID, "env | grep KEY", shared.StatusCompleted, &shared.ShellOutput{Stdout: "KEY=" + key + "\n", ExitCode: intp(0)})
	if _, err := e.store.SetSessionState(ctx, sess.ID, shared.SessionClosed, ""); err != nil {
		t.Fatal(err)
	}
	export := "/api/v1/tasks/" + task.ID + "/export"

	resp, plain := e.do("GET", export, "", vic...)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/gzip" ||
		resp.Header.Get("Content-Disposition") != `attachment; filename="conch-task-`+task.ID+`.tar.gz"` {
		t.Fatalf("export: %d %v", resp.StatusCode, resp.Header)
	}
	entries := archiveNames(t, plain)
	if !strings.Contains(entries["outputs/"+cmd.ID+"/stdout"], key) {
		t.Errorf("the output is not in the archive: %v", entries)
	}
	for name := range entries {
		if strings.HasPrefix(name, "audit/") {
			t.Errorf("a viewer's export holds the audit: %s", name)
		}
	}
	redacted := archiveNames(t, e.expect(http.StatusOK, "GET", export+"?redact=1", "", nil, vic...))
	for name, text := range redacted {
		if strings.Contains(text, key) {
			t.Errorf("%s of a redacted export holds the token: %s", name, text)
		}
	}
	if !strings.Contains(redacted["outputs/"+cmd.ID+"/stdout"], "KEY=[REDACTED]") {
		t.Errorf("redacted output: %q", redacted["outputs/"+cmd.ID+"/stdout"])
	}
	if !strings.Contains(archiveNames(t, e.expect(http.StatusOK, "GET", export, "", nil, admin...))["audit/1.jsonl"], `"action":"POST /api/v1/tasks"`) {
		t.Errorf("an admin's export lacks the audit entry of the task's creation")
	}
	e.expect(http.StatusBadRequest, "GET", export+"?redact=yes", "", nil, vic...)
	e.expect(http.StatusNotFound, "GET", "/api/v1/tasks/nope/export", "", nil, vic...)

	gz := []string{"Content-Type", "application/gzip"}
	e.expect(http.StatusForbidden, "POST", "/api/v1/tasks/import", plain, nil, append(vic, gz...)...)
	e.expect(http.StatusBadRequest, "POST", "/api/v1/tasks/import", "not an archive", nil, append(bob, gz...)...)
	var tasks struct{ Tasks []shared.Task }
	e.expect(http.StatusOK, "GET", "/api/v1/tasks", "", &tasks, ada...)
	if len(tasks.Tasks) != 1 {
		t.Fatalf("after refused imports: %d tasks", len(tasks.Tasks))
	}

	var got shared.Task
	e.expect(http.StatusCreated, "POST", "/api/v1/tasks/import", plain, &got, append(bob, gz...)...)
	if got.ID == task.ID || got.Owner != "bob" || !strings.Contains(got.Description, "first written by ada") || !got.MayEdit {
		t.Errorf("imported: %+v", got)
	}
	ids, err := e.store.TaskSessions(ctx, got.ID)
	if err != nil || len(ids) != 1 {
		t.Fatalf("imported sessions %v, %v", ids, err)
	}
	var before, after shared.MessagePage
	e.expect(http.StatusOK, "GET", "/api/v1/task-sessions/"+sess.ID+"/messages", "", &before, bob...)
	e.expect(http.StatusOK, "GET", "/api/v1/task-sessions/"+ids[0]+"/messages", "", &after, bob...)
	if len(before.Messages) != 2 || len(after.Messages) != 2 {
		t.Fatalf("messages: %d before, %d after", len(before.Messages), len(after.Messages))
	}
	if prompt := after.Messages[0]; prompt.Content != "deploy with "+key || prompt.Metadata.Author != "bob" {
		t.Errorf("imported prompt %+v", prompt)
	}
	var snap shared.ShellOutputSnapshot
	e.expect(http.StatusOK, "GET", "/api/v1/task-sessions/"+ids[0]+"/messages/"+after.Messages[1].ID+"/shell-output", "", &snap, bob...)
	if snap.Output.Stdout != "KEY="+key+"\n" || *snap.Output.ExitCode != 0 {
		t.Errorf("imported output %+v", snap.Output)
	}
	var sessAfter shared.Session
	e.expect(http.StatusOK, "GET", "/api/v1/task-sessions/"+ids[0], "", &sessAfter, bob...)
	if sessAfter.State != shared.SessionClosed || sessAfter.Resumable {
		t.Errorf("imported session %+v: want closed, not resumable", sessAfter)
	}
	// The replay page lists its messages itself: its HTML carries none, and is no session page.
	if resp, _ := e.do("GET", "/sessions/"+ids[0]+"/replay", "", bob...); resp.StatusCode != http.StatusOK {
		t.Errorf("the replay page answered %d", resp.StatusCode)
	}
	// The import is in this server's audit, as the task it made.
	var audit bytes.Buffer
	if err := e.store.Audit(ctx, e.stored.Now().AddDate(0, 0, -1), e.stored.Now().AddDate(0, 0, 1), func(ev shared.AuditEvent) error {
		if ev.Action == "POST /api/v1/tasks/import" && ev.TaskID == got.ID && ev.Login == "bob" {
			audit.WriteString("ok")
		}
		return nil
	}); err != nil || audit.String() != "ok" {
		t.Errorf("the import's audit entry: %q, %v", audit.String(), err)
	}
}
