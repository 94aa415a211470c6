//go:build !js

package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"conch/server/worktree/gittest"
	"conch/shared"
)

// Three attempts of the built-in shell agent on one repository, started from the page:
// each works in its own worktree (the prompt writes "ok" only in attempt 2's), and the
// check passes there alone. The table shows the exit codes, the sizes of the changes and
// the durations from the list alone, fetching no body; opening a check's cell fetches
// that output only; keeping attempt 2 merges it into main, and the other two keep their
// branches (with their work) while their worktrees go.
func TestAttemptsCompare(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	repo := gittest.Repo(t, map[string]string{"a.txt": "one\n"})
	task, err := s.API.CreateTaskOn(ctx, "Three ways", "", repo, "")
	if err != nil {
		t.Fatal(err)
	}

	b := newBrowser(t)
	b.do(t, chromedp.Navigate(s.URL+"/tasks/"+task.ID+"/attempts"))
	b.waitFor(t, "the page", `!document.getElementById("app-wasm-loader") && !!document.querySelector(".attempts-page .new-attempts") && document.querySelectorAll(".chosen li").length === 2`)
	b.click(t, "Add agent")
	b.do(t, chromedp.SendKeys(chromedp.CSS("#attempt-prompt"), `case $PWD in *-attempt-2) echo ok > result.txt;; *) echo no > result.txt;; esac`),
		chromedp.SendKeys(chromedp.CSS("#attempt-check"), `cat result.txt; grep -q ok result.txt`))
	b.click(t, "Start 3 attempts")
	done := `.attempts .check-passed, .attempts .check-failed`
	b.waitFor(t, "three checks", fmt.Sprintf(`document.querySelectorAll(%q).length === 3 && document.querySelector(".attempts-page").dataset.running === "false"`, done))

	rows := eval[[][]string](t, b, `[...document.querySelectorAll(".attempts tbody tr")].map(r => [...r.cells].map(c => c.textContent))`)
	if len(rows) != 3 {
		t.Fatalf("rows %q", rows)
	}
	for i, r := range rows {
		exit := "exit 1 · "
		if i == 1 {
			exit = "exit 0 · "
		}
		// #, agent, state, check, files, lines, commands, tokens, cost, wall, change
		if r[0] != fmt.Sprint(i+1) || r[1] != "shell" || r[2] != "ready" || !strings.HasPrefix(r[3], exit) || !strings.HasSuffix(r[3], " s") ||
			r[4] != "1" || r[5] != "+1 −0" || r[6] != "1" || !strings.HasSuffix(r[9], " s") || r[10] != "Changes" {
			t.Errorf("row %d: %q", i+1, r)
		}
	}
	if n := b.total(); n != 0 {
		t.Errorf("%d bodies fetched before any was opened", n)
	}

	list, err := s.API.Attempts(ctx, task.ID)
	if err != nil || len(list.Attempts) != 3 {
		t.Fatalf("attempts %+v: %v", list, err)
	}
	first := list.Attempts[0]
	b.do(t, chromedp.Evaluate[chromedp.Void](`document.querySelector('tr[data-n="1"] .check').click()`))
	b.waitFor(t, "the check's output", `document.querySelector("#check-output .check-text")?.textContent === "no\n"`)
	if n, all := b.snapshots(first.CheckMessageID), b.total(); n != 1 || all != 1 {
		t.Errorf("opening one check fetched %d of it, %d bodies in all", n, all)
	}
	// One file of two attempts, side by side: both diffs fetched on Compare, nothing else.
	b.do(t, chromedp.SendKeys(chromedp.CSS("#compare-path"), "result.txt"))
	b.click(t, "Compare")
	b.waitFor(t, "two diffs side by side", `document.querySelectorAll(".side-by-side .side .dl-add").length === 2`)
	if got := eval[[]string](t, b, `[...document.querySelectorAll(".side-by-side .dl-add")].map(e => e.textContent)`); fmt.Sprint(got) != "[1+no 1+ok]" {
		t.Errorf("compared lines %q", got)
	}
	if n, all := b.snapshots("diff:result.txt"), b.total(); n != 2 || all != 3 {
		t.Errorf("comparing fetched %d diffs of result.txt, %d bodies in all", n, all)
	}
	b.screenshots(t, "attempts", ".compare")
	b.checkAxe(t, "the compare page, a check's output and a file compared open")

	b.do(t, chromedp.EmulateViewport(1280, 900))
	// Continue: a follow-up prompt to attempt 3, whose check then runs again and passes.
	b.do(t, chromedp.Evaluate[chromedp.Void](`document.querySelector('tr[data-n="3"] .row-actions button.secondary').click()`))
	b.do(t, chromedp.SendKeys(chromedp.CSS("#continue-text"), `echo ok > result.txt`))
	b.click(t, "Send to attempt 3")
	b.waitFor(t, "attempt 3's check passing after its follow-up", `document.querySelector('tr[data-n="3"] .check')?.textContent.startsWith("exit 0 · ") && document.querySelector(".attempts-page").dataset.running === "false"`)
	b.do(t, chromedp.Evaluate[chromedp.Void](`document.querySelector('tr[data-n="2"] .row-actions button').click()`))
	b.click(t, "Keep and merge")
	b.waitFor(t, "attempt 2 kept", `!!document.querySelector('tr[data-n="2"].outcome-kept') && document.querySelectorAll("tr.outcome-closed").length === 2`)
	if got := gittest.Git(t, repo, "show", "main:result.txt"); got != "ok" {
		t.Errorf("main's result.txt after keep: %q", got)
	}
	for _, a := range []shared.Attempt{list.Attempts[0], list.Attempts[2]} {
		want := map[int]string{1: "no", 3: "ok"}[a.N] // attempt 3 was continued
		if got := gittest.Git(t, repo, "show", a.Branch+":result.txt"); got != want {
			t.Errorf("attempt %d's branch after keep: %q, want %q", a.N, got, want)
		}
		sess, err := s.API.GetSession(ctx, a.SessionID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(sess.Cwd); !os.IsNotExist(err) {
			t.Errorf("attempt %d's worktree after keep: %v", a.N, err)
		}
	}
}
