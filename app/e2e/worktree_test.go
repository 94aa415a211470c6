//go:build !js

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"conch/server/worktree/gittest"
)

// A new user's first worktree task, made from the page alone: the working directory typed
// is a git repository, so the New task form offers a branch of its own, on by default, from
// the repository's current branch. The task list then shows the repository and the branch,
// the built-in shell agent writes a file in the worktree (the person's checkout stays as it
// was), and the task's Changes page lists the file. Screenshots: worktree-offer-*.png,
// worktree-task-*.png.
func TestWorktreeTaskFromTheForm(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	repo := gittest.Repo(t, map[string]string{"README.md": "hello\n"})
	gittest.Git(t, repo, "branch", "dev")

	b := newBrowser(t)
	b.do(t, chromedp.Navigate(s.URL+"/"))
	b.waitFor(t, "the agents", `!!document.querySelector("#task-agent option[value=shell]") && !document.querySelector(".new-task button[disabled]")`)
	b.do(t,
		chromedp.SendKeys(chromedp.CSS("#task-title"), "Add a greeting"),
		chromedp.SendKeys(chromedp.CSS("#task-cwd"), repo),
	)
	b.waitFor(t, "the offer of a worktree", `!!document.querySelector("#task-worktree")?.checked`)
	if got := eval[[]string](t, b, `[...document.querySelectorAll("#task-base option")].map(e => e.value + (e.selected ? "*" : ""))`); fmt.Sprint(got) != "[dev main*]" {
		t.Errorf("base branches offered %q, want dev and main, main picked", got)
	}
	b.screenshots(t, "worktree-offer", ".worktree-offer")
	b.checkAxe(t, "the New task form's offer of a worktree")
	b.do(t, chromedp.EmulateViewport(1280, 900))
	b.do(t, chromedp.Click(chromedp.CSS(`.new-task button[type=submit]`)))
	b.waitFor(t, "the new session page", `location.pathname.startsWith("/sessions/") && !!document.querySelector(".live")`)
	b.waitLive(t, "Live")

	tasks, err := s.API.ListTasks(ctx)
	if err != nil || len(tasks) != 1 {
		t.Fatalf("tasks %+v, %v", tasks, err)
	}
	task := tasks[0]
	if task.Repo != repo || task.BaseBranch != "main" || !strings.HasPrefix(task.Branch, "conch/") || task.Worktree == "" {
		t.Fatalf("the task made from the form: %+v", task)
	}

	b.do(t, chromedp.SendKeys(chromedp.CSS("#prompt-input"), "printf 'hi\\n' > greeting.txt"), chromedp.KeyEvent("\r"))
	b.waitFor(t, "the command", `[...document.querySelectorAll(".cmd-succeeded .cmd-text")].some(e => e.textContent.startsWith("printf"))`)
	if _, err := os.Stat(filepath.Join(task.Worktree, "greeting.txt")); err != nil {
		t.Errorf("the agent's file is not in the worktree: %v", err)
	}
	if got := gittest.Git(t, repo, "status", "--porcelain"); got != "" {
		t.Errorf("the agent's file reached the person's checkout: %q", got)
	}

	b.do(t, chromedp.Navigate(s.URL+"/"))
	b.waitFor(t, "the task's repository and branch", `!!document.querySelector(".task .task-repo")`)
	if got, want := b.text(t, ".task .task-repo"), "Repository "+repo+" · branch "+task.Branch+" from main"; got != want {
		t.Errorf("the task list says %q, want %q", got, want)
	}
	b.screenshots(t, "worktree-task", ".task-repo")
	b.checkAxe(t, "the task list with a task's repository and branch")
	b.do(t, chromedp.EmulateViewport(1280, 900))
	b.do(t, chromedp.Click(chromedp.CSS(fmt.Sprintf(`a[href="/tasks/%s/changes"]`, task.ID))))
	b.waitFor(t, "the Changes page listing the agent's file", `location.pathname.endsWith("/changes") && (document.querySelector("main") || {textContent: ""}).textContent.includes("greeting.txt")`)
}
