package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"conch/shared"
)

// changedFiles is how many files the changes step's task touches: a third committed on its
// branch, a third changed and not committed, a third new and untracked.
const changedFiles = 1000

// changes measures GET /api/v1/tasks/{id}/changes for a task touching changedFiles files
// of a repository of twice as many, and one file's diff beside it.
func (b *bench) changes(ctx context.Context) error {
	repo := filepath.Join(b.tmp, "changes-repo")
	if err := makeRepo(ctx, repo); err != nil {
		return err
	}
	srv, err := startConch(ctx, b.conchBin, filepath.Join(b.tmp, "changes.db"))
	if err != nil {
		return err
	}
	defer srv.stop()
	var task shared.Task
	if err := srv.post(ctx, "/api/v1/tasks", map[string]string{"title": "touch a thousand files", "repo": repo}, &task, http.StatusCreated); err != nil {
		return err
	}
	if err := srv.post(ctx, "/api/v1/tasks/"+task.ID+"/sessions", map[string]string{"agent": "shell"}, new(shared.Session), http.StatusCreated); err != nil {
		return err
	}
	raw, err := srv.get(ctx, "/api/v1/tasks/"+task.ID)
	if err == nil {
		err = json.Unmarshal(raw, &task)
	}
	if err != nil {
		return err
	}
	edit := func(from, to int) map[string]string {
		m := map[string]string{}
		for i := from; i < to; i++ {
			m[fmt.Sprintf("pkg%02d/file%04d.txt", i%40, i)] = strings.Repeat(fmt.Sprintf("line of file %d, changed\n", i), 21)
		}
		return m
	}
	third := changedFiles / 3
	if err := writeFiles(task.Worktree, edit(0, third)); err != nil {
		return err
	}
	if err := gitIn(ctx, task.Worktree, "commit", "-q", "-am", "a third"); err != nil {
		return err
	}
	added := map[string]string{}
	for i := range changedFiles - 2*third {
		added[fmt.Sprintf("new/file%04d.txt", i)] = "a new file\n"
	}
	if err := writeFiles(task.Worktree, edit(third, 2*third)); err != nil {
		return err
	}
	if err := writeFiles(task.Worktree, added); err != nil {
		return err
	}

	var summary, diff, size dist
	for range b.runs {
		t := time.Now()
		raw, err := srv.get(ctx, "/api/v1/tasks/"+task.ID+"/changes")
		if err != nil {
			return err
		}
		summary = append(summary, float64(time.Since(t).Microseconds()))
		size = append(size, float64(len(raw)))
		var ch shared.Changes
		if err := json.Unmarshal(raw, &ch); err != nil {
			return err
		}
		if len(ch.Files) != changedFiles {
			return fmt.Errorf("the summary lists %d files, not %d", len(ch.Files), changedFiles)
		}
		t = time.Now()
		if _, err := srv.get(ctx, "/api/v1/tasks/"+task.ID+"/changes/diff?path="+url.QueryEscape(ch.Files[0].Path)); err != nil {
			return err
		}
		diff = append(diff, float64(time.Since(t).Microseconds()))
	}
	b.r.h(2, "A task's changes")
	b.r.p("A task on a repository of %d files whose worktree touches %d of them: %d changed and committed on its branch, "+
		"%d changed and not committed, %d new and untracked. Each request runs git in the worktree (rev-parse, merge-base, "+
		"rev-list, a copy of the index with untracked files marked, two diffs); %d runs, sequential.",
		2*changedFiles, changedFiles, third, third, changedFiles-2*third, b.runs)
	b.r.table([]string{"request", "time", "answer"}, [][]string{
		{"GET .../changes (summary, no bodies)", summary.format(micros), size.format(bytesIEC)},
		{"GET .../changes/diff?path= (one file)", diff.format(micros), ""},
	})
	return nil
}

// makeRepo makes a repository of 2*changedFiles files of 20 lines, pkgNN/fileNNNN.txt,
// on its branch main.
func makeRepo(ctx context.Context, repo string) error {
	files := map[string]string{}
	for i := range 2 * changedFiles {
		files[fmt.Sprintf("pkg%02d/file%04d.txt", i%40, i)] = strings.Repeat(fmt.Sprintf("line of file %d\n", i), 20)
	}
	if err := writeFiles(repo, files); err != nil {
		return err
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "start"}} {
		if err := gitIn(ctx, repo, args...); err != nil {
			return err
		}
	}
	return nil
}

// writeFiles writes files (names relative to dir), making their folders.
func writeFiles(dir string, files map[string]string) error {
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// gitIn runs git in dir as a person would, without their or the system's configuration.
func gitIn(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@localhost", "GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@localhost")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git %v: %w: %s", args, err, out)
	}
	return nil
}
