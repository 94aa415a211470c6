package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"conch/server/worktree/gittest"
	"conch/shared"
)

// A task on a real repository: its first session makes its worktree and says so, the
// second reuses it, the changes summary lists the worktree's work without any body, one
// file's diff has its texts, and deleting the task removes the worktree and keeps the branch.
func TestTaskOnRepository(t *testing.T) {
	e := newEnv(t)
	repo := gittest.Repo(t, map[string]string{"a.txt": "one\n"})
	var task shared.Task
	e.expect(http.StatusCreated, "POST", "/api/v1/tasks", fmt.Sprintf(`{"title":"Fix \"it\"","repo":%q}`, repo), &task)
	if task.Repo != repo || task.BaseBranch != "main" || task.Worktree != "" {
		t.Fatalf("task %+v", task)
	}
	e.expect(http.StatusNotFound, "GET", "/api/v1/tasks/"+task.ID+"/changes", "", nil)

	var s1, s2 shared.Session
	e.expect(http.StatusCreated, "POST", "/api/v1/tasks/"+task.ID+"/sessions", `{"agent":"shell"}`, &s1)
	e.expect(http.StatusCreated, "POST", "/api/v1/tasks/"+task.ID+"/sessions", `{"agent":"shell"}`, &s2)
	e.expect(http.StatusOK, "GET", "/api/v1/tasks/"+task.ID, "", &task)
	wantBranch := "conch/" + task.ID[:8] + "-fix-it"
	if task.Branch != wantBranch || s1.Cwd != task.Worktree || s2.Cwd != task.Worktree {
		t.Fatalf("task %+v, sessions in %s and %s", task, s1.Cwd, s2.Cwd)
	}
	var page shared.MessagePage
	e.expect(http.StatusOK, "GET", "/api/v1/task-sessions/"+s1.ID+"/messages", "", &page)
	if len(page.Messages) != 1 || page.Messages[0].Type != shared.TypeStatus || !strings.Contains(page.Messages[0].Content, wantBranch) {
		t.Errorf("first session's messages %+v", page.Messages)
	}
	e.expect(http.StatusOK, "GET", "/api/v1/task-sessions/"+s2.ID+"/messages", "", &page)
	if len(page.Messages) != 0 {
		t.Errorf("second session's messages %+v", page.Messages)
	}
	e.expect(http.StatusBadRequest, "POST", "/api/v1/tasks/"+task.ID+"/sessions", `{"agent":"shell","cwd":"/tmp"}`, nil)

	gittest.Write(t, task.Worktree, map[string]string{"a.txt": "one\ntwo\n", "b.txt": "new\n"})
	got := e.expect(http.StatusOK, "GET", "/api/v1/tasks/"+task.ID+"/changes", "", nil)
	head := gittest.Git(t, repo, "rev-parse", "main")
	want := fmt.Sprintf(`{"base":"main","branch":%q,"head":%q,"merge_base":%q,"ahead":0,"behind":0,"files":[`+
		`{"path":"a.txt","status":"modified","added_lines":1,"removed_lines":0},{"path":"b.txt","status":"added","added_lines":1,"removed_lines":0}]}`,
		wantBranch, head, head)
	if got != want {
		t.Errorf("changes\n got %s\nwant %s", got, want)
	}
	got = e.expect(http.StatusOK, "GET", "/api/v1/tasks/"+task.ID+"/changes/diff?path=a.txt", "", nil)
	if want := `{"file":{"path":"a.txt","status":"modified","added_lines":1,"removed_lines":0},"old_text":"one\n","new_text":"one\ntwo\n",` +
		`"hunks":[{"old_line":1,"new_line":1,"lines":[{"kind":" ","old":1,"new":1,"text":"one"},{"kind":"+","new":2,"text":"two"}]}]}`; got != want {
		t.Errorf("diff\n got %s\nwant %s", got, want)
	}
	e.expect(http.StatusNotFound, "GET", "/api/v1/tasks/"+task.ID+"/changes/diff?path="+url.QueryEscape("../a.txt"), "", nil)
	e.expect(http.StatusBadRequest, "GET", "/api/v1/tasks/"+task.ID+"/changes/diff", "", nil)

	list := e.expect(http.StatusOK, "GET", "/api/v1/tasks", "", nil)
	if strings.Contains(list, "two") || !strings.Contains(list, `"worktree":`) {
		t.Errorf("task list %s", list)
	}

	e.expect(http.StatusNoContent, "DELETE", "/api/v1/tasks/"+task.ID, "", nil)
	if _, err := os.Stat(task.Worktree); !os.IsNotExist(err) {
		t.Errorf("worktree after delete: %v", err)
	}
	if got := gittest.Git(t, repo, "branch", "--list", wantBranch); !strings.Contains(got, wantBranch) {
		t.Errorf("branch after delete: %q", got)
	}
}

// A bad repository or base is refused with a clear error, and stores nothing; a branch
// that exists already fails the session, and leaves the repository as it was.
func TestTaskRepositoryRefused(t *testing.T) {
	e := newEnv(t)
	repo := gittest.Repo(t, nil)
	for body, want := range map[string]string{
		`{"title":"t","repo":"relative"}`:                                `repo \"relative\" is not an absolute path`,
		fmt.Sprintf(`{"title":"t","repo":%q}`, t.TempDir()):              "is not a git work tree",
		fmt.Sprintf(`{"title":"t","repo":%q,"base_branch":"dev"}`, repo): `no branch \"dev\"`,
		`{"title":"t","base_branch":"main"}`:                             "base_branch needs a repo",
		fmt.Sprintf(`{"title":"t","repo":%q}`, filepath.Join(repo, "x")): "not a directory",
		// repo_url, cloned on runners: checked here, each refusal storing nothing.
		`{"title":"t","repo_url":"-uhttps://x/y","base_branch":"main"}`:                "starts with -",
		`{"title":"t","repo_url":"ext::sh -c touch% /tmp/pwned","base_branch":"main"}`: "whitespace",
		`{"title":"t","repo_url":"ext::sh","base_branch":"main"}`:                      "remote helper",
		`{"title":"t","repo_url":"https://example.com/r.git"}`:                         "repo_url needs a base_branch",
		`{"title":"t","repo_url":"https://example.com/r.git","base_branch":"-b"}`:      `\"-b\" is not a branch name`,
		`{"title":"t","repo_url":"https://example.com/r.git","base_branch":"a..b"}`:    `\"a..b\" is not a branch name`,
		fmt.Sprintf(`{"title":"t","repo":%q,"repo_url":"/srv/r.git"}`, repo):           "not both",
	} {
		if got := e.expect(http.StatusBadRequest, "POST", "/api/v1/tasks", body, nil); !strings.Contains(got, want) {
			t.Errorf("%s: %s, want %q", body, got, want)
		}
	}
	if got := e.expect(http.StatusOK, "GET", "/api/v1/tasks", "", nil); got != `{"tasks":[]}`+"\n" && got != `{"tasks":[]}` {
		t.Errorf("tasks stored: %s", got)
	}
	var task shared.Task
	e.expect(http.StatusCreated, "POST", "/api/v1/tasks", fmt.Sprintf(`{"title":"taken","repo":%q}`, repo), &task)
	branch := "conch/" + task.ID[:8] + "-taken"
	gittest.Git(t, repo, "branch", branch)
	before := gittest.Git(t, repo, "worktree", "list")
	if got := e.expect(http.StatusConflict, "POST", "/api/v1/tasks/"+task.ID+"/sessions", `{"agent":"shell"}`, nil); !strings.Contains(got, "exists already") {
		t.Errorf("session on a taken branch: %s", got)
	}
	if after := gittest.Git(t, repo, "worktree", "list"); after != before {
		t.Errorf("worktrees %q, were %q", after, before)
	}
}

// The New task form asks what a directory is to git: the top of the work tree it is in,
// its current branch and its branches; a directory in none says so; a directory the task
// routes would refuse is refused the same way.
func TestRepositoryOfADirectory(t *testing.T) {
	e := newEnv(t)
	repo := gittest.Repo(t, map[string]string{"sub/a.txt": "a\n"})
	gittest.Git(t, repo, "branch", "dev")
	plain, links := t.TempDir(), t.TempDir()
	if err := os.Symlink(filepath.Join(repo, "sub"), filepath.Join(links, "sub")); err != nil {
		t.Fatal(err)
	}
	ask := func(path string) string {
		return e.expect(http.StatusOK, "GET", "/api/v1/repository?path="+url.QueryEscape(path), "", nil)
	}
	inRepo := fmt.Sprintf(`"top":%q,"branch":"main","branches":["dev","main"]}`, repo)
	for path, want := range map[string]string{
		repo:                        fmt.Sprintf(`{"path":%q,`, repo) + inRepo,
		filepath.Join(links, "sub"): fmt.Sprintf(`{"path":%q,`, filepath.Join(repo, "sub")) + inRepo,
		plain:                       fmt.Sprintf(`{"path":%q,"branches":[]}`, plain),
		filepath.Join(repo, ".git"): fmt.Sprintf(`{"path":%q,"branches":[]}`, filepath.Join(repo, ".git")),
	} {
		if got := ask(path); got != want {
			t.Errorf("%s:\n got %s\nwant %s", path, got, want)
		}
	}
	gittest.Git(t, repo, "checkout", "-q", "--detach")
	if got, want := ask(repo), fmt.Sprintf(`{"path":%q,"top":%q,"branches":["dev","main"]}`, repo, repo); got != want {
		t.Errorf("detached:\n got %s\nwant %s", got, want)
	}

	for path, want := range map[string]string{
		"":                               "path is required",
		"relative":                       `path \"relative\" is not an absolute path`,
		filepath.Join(repo, "nope"):      "is not a directory the server can reach",
		filepath.Join(repo, "sub/a.txt"): "is not a directory the server can reach",
		"/proc/self/cwd":                 "path /proc/self/cwd is in /proc, the kernel's files",
		"/a\x00b":                        "contains a NUL character",
	} {
		if got := e.expect(http.StatusBadRequest, "GET", "/api/v1/repository?path="+url.QueryEscape(path), "", nil); !strings.Contains(got, want) {
			t.Errorf("%q: %s, want %q", path, got, want)
		}
	}
}

// A task's repository, additional directories and a session's cwd are never in /proc,
// /sys or /dev, named there or reached by a link (/proc/self/cwd is whatever directory
// the reading process runs in); a link elsewhere is kept as the directory it resolves to.
func TestKernelDirectoriesRefused(t *testing.T) {
	e := newEnv(t)
	links := t.TempDir()
	repo := gittest.Repo(t, nil)
	for name, target := range map[string]string{"self": "/proc/self", "repo": repo} {
		if err := os.Symlink(target, filepath.Join(links, name)); err != nil {
			t.Fatal(err)
		}
	}
	var plain shared.Task
	e.expect(http.StatusCreated, "POST", "/api/v1/tasks", `{"title":"plain"}`, &plain)
	for _, path := range []string{"/proc/self/cwd", "/proc/1/root/tmp", "/proc", "/sys/kernel", "/dev/shm", "/dev/../proc/self/cwd",
		filepath.Join(links, "self")} {
		tree := "/proc"
		if p := filepath.Clean(path); strings.HasPrefix(p, "/sys") || strings.HasPrefix(p, "/dev") {
			tree = p[:4]
		}
		for _, r := range []struct{ what, url, body string }{
			{"repo", "/api/v1/tasks", fmt.Sprintf(`{"title":"t","repo":%q}`, path)},
			{"additional directory", "/api/v1/tasks", fmt.Sprintf(`{"title":"t","additional_directories":[%q]}`, path)},
			{"cwd", "/api/v1/tasks/" + plain.ID + "/sessions", fmt.Sprintf(`{"agent":"shell","cwd":%q}`, path)},
		} {
			want := fmt.Sprintf("%s %s is in %s, the kernel's files, not a project's: name the directory itself", r.what, path, tree)
			if got := e.expect(http.StatusBadRequest, "POST", r.url, r.body, nil); !strings.Contains(got, want) {
				t.Errorf("%s: %s, want %q", r.body, got, want)
			}
		}
	}
	if got := e.expect(http.StatusOK, "GET", "/api/v1/tasks", "", nil); strings.Count(got, `"id"`) != 1 {
		t.Errorf("tasks stored: %s", got)
	}
	var task shared.Task
	link := filepath.Join(links, "repo")
	e.expect(http.StatusCreated, "POST", "/api/v1/tasks", fmt.Sprintf(`{"title":"t","repo":%q,"additional_directories":[%q]}`, link, link), &task)
	if task.Repo != repo || !slices.Equal(task.AdditionalDirectories, []string{repo}) {
		t.Errorf("a link to %s kept as %s and %q", repo, task.Repo, task.AdditionalDirectories)
	}
	// Through /proc to a directory of the server's: kept as that directory, which the
	// request could have named.
	here, err := os.Getwd()
	if err == nil {
		here, err = filepath.EvalSymlinks(here)
	}
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{link: repo, filepath.Join(links, "self", "cwd"): here} {
		var sess shared.Session
		e.expect(http.StatusCreated, "POST", "/api/v1/tasks/"+plain.ID+"/sessions", fmt.Sprintf(`{"agent":"shell","cwd":%q}`, path), &sess)
		if sess.Cwd != want {
			t.Errorf("session asked for %s in %s, want %s", path, sess.Cwd, want)
		}
	}
}

// Two tasks on one repository change one file differently: each commits, the first lands
// and pushes, the second's landing reports the conflict with its file and changes nothing.
func TestTaskLanding(t *testing.T) {
	e := newEnv(t)
	repo := gittest.Repo(t, map[string]string{"a.txt": "one\n"})
	remote := filepath.Join(t.TempDir(), "remote.git")
	gittest.Git(t, repo, "init", "-q", "--bare", remote)
	e.expect(http.StatusNotFound, "POST", "/api/v1/tasks/nope/push", "", nil)
	var tasks [2]shared.Task
	for i := range tasks {
		e.expect(http.StatusCreated, "POST", "/api/v1/tasks", fmt.Sprintf(`{"title":"t%d","repo":%q}`, i, repo), &tasks[i])
		e.expect(http.StatusCreated, "POST", "/api/v1/tasks/"+tasks[i].ID+"/sessions", `{"agent":"shell"}`, nil)
		e.expect(http.StatusOK, "GET", "/api/v1/tasks/"+tasks[i].ID, "", &tasks[i])
		gittest.Write(t, tasks[i].Worktree, map[string]string{"a.txt": fmt.Sprintf("task %d\n", i)})
	}
	one, two := "/api/v1/tasks/"+tasks[0].ID, "/api/v1/tasks/"+tasks[1].ID
	e.expect(http.StatusBadRequest, "POST", one+"/commit", `{"message":" "}`, nil)
	e.expect(http.StatusConflict, "POST", one+"/merge", `{"mode":"merge"}`, nil) // uncommitted work
	var c shared.Changes
	for _, p := range []string{one, two} {
		e.expect(http.StatusOK, "POST", p+"/commit", `{"message":"Edit a"}`, &c)
		if c.Ahead != 1 || len(c.Files) != 1 {
			t.Errorf("after commit: %+v", c)
		}
	}
	e.expect(http.StatusConflict, "POST", one+"/commit", `{"message":"again"}`, nil)
	e.expect(http.StatusBadRequest, "POST", one+"/merge", `{"mode":"squash"}`, nil)
	e.expect(http.StatusOK, "POST", one+"/merge", `{"mode":"merge"}`, &c)
	if c.Ahead != 0 || len(c.Files) != 0 {
		t.Errorf("after landing: %+v", c)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "a.txt")); string(b) != "task 0\n" {
		t.Errorf("the base's checkout has %q", b)
	}
	if got := e.expect(http.StatusConflict, "POST", one+"/push", "", nil); !strings.Contains(got, "no remote origin") {
		t.Errorf("push without origin: %s", got)
	}
	gittest.Git(t, repo, "remote", "add", "origin", remote)
	e.expect(http.StatusOK, "POST", one+"/push", "", nil)
	if got := gittest.Git(t, remote, "rev-parse", tasks[0].Branch); got != gittest.Git(t, repo, "rev-parse", tasks[0].Branch) {
		t.Errorf("remote's branch at %s", got)
	}

	main := gittest.Git(t, repo, "rev-parse", "main")
	for _, mode := range []string{"merge", "rebase"} {
		got := e.expect(http.StatusConflict, "POST", two+"/merge", `{"mode":"`+mode+`"}`, nil)
		var body shared.ErrorBody
		if err := json.Unmarshal([]byte(got), &body); err != nil || body.Code != shared.CodeConflict || !slices.Equal(body.Paths, []string{"a.txt"}) {
			t.Errorf("%s of a conflicting task: %s", mode, got)
		}
	}
	if got := gittest.Git(t, repo, "rev-parse", "main"); got != main {
		t.Errorf("main moved to %s", got)
	}
	if got := gittest.Git(t, tasks[1].Worktree, "status", "--porcelain"); got != "" {
		t.Errorf("the second worktree after the conflict: %q", got)
	}
}

// Review comments go to the task's newest session as one prompt: file:line references in
// the text, each file once as a link; a bad review is refused and prompts nothing, and
// so is a review to the built-in shell agent, which would run it as a command.
func TestReviewToAgent(t *testing.T) {
	e := newEnv(t)
	repo := gittest.Repo(t, map[string]string{"a.txt": "one\n", "b.txt": "b\n"})
	var task shared.Task
	e.expect(http.StatusCreated, "POST", "/api/v1/tasks", fmt.Sprintf(`{"title":"r","repo":%q}`, repo), &task)
	path := "/api/v1/tasks/" + task.ID + "/review"
	good := `{"comments":[{"path":"a.txt","line":1,"text":"x"}]}`
	e.expect(http.StatusNotFound, "POST", path, good, nil)
	e.expect(http.StatusCreated, "POST", "/api/v1/tasks/"+task.ID+"/sessions", `{"agent":"shell"}`, nil)
	e.expect(http.StatusOK, "GET", "/api/v1/tasks/"+task.ID, "", &task)
	gittest.Write(t, task.Worktree, map[string]string{"a.txt": "one\ntwo\n", "b.txt": "bb\n"})
	if got := e.expect(http.StatusConflict, "POST", path, good, nil); !strings.Contains(got, "the task's newest session is of the built-in shell agent, which would run the review as a shell command") {
		t.Errorf("a review to the shell agent: %s", got)
	}
	// The fake runtime starts only the shell agent: the store makes a session of another.
	newest, err := e.store.CreateSession(context.Background(), task.ID, "coder", task.Worktree)
	if err != nil {
		t.Fatal(err)
	}
	for body, want := range map[string]string{
		`{"comments":[]}`: "1 to 100 comments",
		`{"comments":[{"path":"c.txt","line":1,"text":"x"}]}`: `\"c.txt\" is not a file of the change`,
		`{"comments":[{"path":"a.txt","line":0,"text":"x"}]}`: "line counts from 1",
		`{"comments":[{"path":"a.txt","line":2,"text":" "}]}`: "text is required",
	} {
		if got := e.expect(http.StatusBadRequest, "POST", path, body, nil); !strings.Contains(got, want) {
			t.Errorf("%s: %s, want %q", body, got, want)
		}
	}
	if prompts, _ := e.rt.recorded(); len(prompts) != 0 {
		t.Fatalf("bad reviews prompted: %q", prompts)
	}
	var msg shared.Message
	e.expect(http.StatusAccepted, "POST", path, `{"comments":[{"path":"a.txt","line":2,"text":"Say \"two\"\nin words"},`+
		`{"path":"b.txt","line":1,"text":"why?"},{"path":"a.txt","line":1,"text":"fine"}]}`, &msg)
	text := "Review comments on your change (file:line, in your worktree):\n\na.txt:2: Say \"two\"\n    in words\nb.txt:1: why?\na.txt:1: fine"
	if msg.SessionID != newest.ID || msg.Content != text || msg.AuthorType != shared.AuthorUser {
		t.Errorf("review message %+v", msg)
	}
	prompts, _ := e.rt.recorded()
	want := newest.ID + ": " + text + filepath.Join(task.Worktree, "a.txt") + "\nlink: " + filepath.Join(task.Worktree, "b.txt")
	if len(prompts) != 1 || prompts[0] != want {
		t.Errorf("prompts %q\nwant %q", prompts, want)
	}
}

// A task's additional directories are absolute directories that exist, at most 8: anything
// else is refused with a clear error and stores nothing; a good list is kept cleaned and
// named once, and read back with the task.
func TestTaskAdditionalDirectories(t *testing.T) {
	e := newEnv(t)
	dir, file := t.TempDir(), filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	nine := strings.TrimSuffix(strings.Repeat(fmt.Sprintf("%q,", dir), 9), ",")
	for body, want := range map[string]string{
		`{"title":"t","additional_directories":["relative"]}`:            `additional directory \"relative\" is not an absolute path`,
		fmt.Sprintf(`{"title":"t","additional_directories":[%q]}`, file): file + " is not a directory",
		`{"title":"t","additional_directories":["/no/such/dir"]}`:        "/no/such/dir is not a directory",
		`{"title":"t","additional_directories":["/tmp/\u0000"]}`:         "additional directory contains a NUL character",
		`{"title":"t","additional_directories":[` + nine + `]}`:          "at most 8 additional directories",
		`{"title":"t","additional_directories":"/tmp"}`:                  "additional_directories",
	} {
		if got := e.expect(http.StatusBadRequest, "POST", "/api/v1/tasks", body, nil); !strings.Contains(got, want) {
			t.Errorf("%s: %s, want %q", body, got, want)
		}
	}
	if got := e.expect(http.StatusOK, "GET", "/api/v1/tasks", "", nil); strings.TrimSpace(got) != `{"tasks":[]}` {
		t.Errorf("tasks stored: %s", got)
	}
	var task shared.Task
	e.expect(http.StatusCreated, "POST", "/api/v1/tasks", fmt.Sprintf(`{"title":"t","additional_directories":[%q,%q]}`, dir+"/", dir), &task)
	var got shared.Task
	e.expect(http.StatusOK, "GET", "/api/v1/tasks/"+task.ID, "", &got)
	if want := []string{dir}; !slices.Equal(task.AdditionalDirectories, want) || !slices.Equal(got.AdditionalDirectories, want) {
		t.Errorf("made %q, read back %q, want %q", task.AdditionalDirectories, got.AdditionalDirectories, want)
	}
}
