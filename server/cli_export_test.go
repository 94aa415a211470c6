package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"conch/app/client"
	"conch/shared"
)

// TestCLIExportImport: conch export writes a task's archive, and conch import makes it a
// new task on another server, with the command's output there and nothing run again.
func TestCLIExportImport(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	from, stopFrom := startServer(t, "from.db")
	defer stopFrom()
	to, stopTo := startServer(t, "to.db")
	defer stopTo()

	marker := filepath.Join(dir, "ran")
	_, stderr, err := conch(t, from, "run", "--", "echo hello; echo once >> "+marker)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr)
	}
	tasks, _, err := conch(t, from, "tasks", "--json")
	var task shared.Task
	if err != nil || json.Unmarshal([]byte(strings.SplitN(tasks, "\n", 2)[0]), &task) != nil || task.ID == "" {
		t.Fatalf("tasks: %v\n%s", err, tasks)
	}
	archive := filepath.Join(dir, "task.tar.gz")
	if _, _, err := conch(t, from, "export", "--redact", "--out", archive, task.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := conch(t, from, "export", "no-such-task"); err == nil || !strings.Contains(err.Error(), "task not found") {
		t.Errorf("export of an unknown task: %v", err)
	}

	stdout, _, err := conch(t, to, "import", archive)
	made := regexp.MustCompile(`^(\S+)\t`).FindStringSubmatch(stdout)
	if err != nil || made == nil || made[1] == task.ID {
		t.Fatalf("import: %v, %q", err, stdout)
	}
	if _, _, err := conch(t, to, "import", filepath.Join(dir, "ran")); err == nil || !strings.Contains(err.Error(), "gzip") {
		t.Errorf("import of a file that is no archive: %v", err)
	}
	api := client.New(to)
	imported, err := api.GetTask(context.Background(), made[1])
	if err != nil || imported.Title != task.Title {
		t.Fatalf("the imported task %+v, %v; want the title %q", imported, err, task.Title)
	}
	list, err := api.ListTasks(context.Background())
	if err != nil || len(list) != 1 || len(list[0].Sessions) != 1 || list[0].Sessions[0].State != shared.SessionClosed {
		t.Fatalf("the server's tasks after the import: %+v, %v", list, err)
	}
	page, err := api.ListMessages(context.Background(), shared.ListRequest{SessionID: list[0].Sessions[0].ID})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range page.Messages {
		if shared.ShellOf(m) != nil {
			out, _, err := conch(t, to, "output", "--stream", "stdout", m.ID)
			found = err == nil && out == "hello\n"
		}
	}
	if !found {
		t.Errorf("the imported command's output is not hello: %+v", page.Messages)
	}
	if b, err := os.ReadFile(marker); err != nil || string(b) != "once\n" {
		t.Errorf("the command ran %q times (%v): want once, on the first server", b, err)
	}
}
