package worktree

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"conch/server/worktree/gittest"
	"conch/shared"
)

func code(err error) string {
	if err == nil {
		return ""
	}
	return shared.ErrorCode(err)
}

func TestRepoRefusesWhatIsNotAWorkTreeTop(t *testing.T) {
	ctx := context.Background()
	r := gittest.Repo(t, map[string]string{"sub/a.txt": "a\n"})
	gittest.Git(t, r, "checkout", "-q", "--detach")
	for _, tc := range []struct{ name, path, base, want string }{
		{"relative", "repo", "main", "repo must be an absolute path"},
		{"missing", filepath.Join(r, "nope"), "main", "not a directory"},
		{"not a repository", t.TempDir(), "main", "not a git work tree"},
		{"a folder inside", filepath.Join(r, "sub"), "main", "not its top level"},
		{"unknown base", r, "develop", `no branch "develop"`},
		{"an option for a base", r, "--output=x", "not a branch name"},
		{"detached without a base", r, "", "on no branch"},
	} {
		_, _, err := Repo(ctx, tc.path, tc.base)
		if code(err) != shared.CodeInvalid || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want invalid %q", tc.name, err, tc.want)
		}
	}
	gittest.Git(t, r, "checkout", "-q", "main")
	if path, base, err := Repo(ctx, r+"/", ""); err != nil || path != r || base != "main" {
		t.Errorf("Repo(%s/) = %s %s %v", r, path, base, err)
	}
}

// The server's own GIT_* variables never reach git: GIT_DIR pointing elsewhere would
// make every command work on another repository.
func TestServerGitEnvironmentDoesNotLeak(t *testing.T) {
	other := gittest.Repo(t, nil)
	r := gittest.Repo(t, map[string]string{"a.txt": "a\n"})
	t.Setenv("GIT_DIR", filepath.Join(other, ".git"))
	t.Setenv("GIT_WORK_TREE", other)
	dir, err := Add(context.Background(), r, "main", "conch/env")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(dir, filepath.Join(r, ".git")) {
		t.Errorf("worktree %s outside %s", dir, r)
	}
	os.Unsetenv("GIT_DIR")
	os.Unsetenv("GIT_WORK_TREE")
	if got := gittest.Git(t, other, "branch", "--list", "conch/*"); got != "" {
		t.Errorf("the other repository got branch %q", got)
	}
}

func TestAddRemoveKeepsBranch(t *testing.T) {
	ctx := context.Background()
	r := gittest.Repo(t, map[string]string{"a.txt": "a\n"})
	branch := Branch("0190a1b2-c3d4-7e5f", "Fix the \"login\" page\n‮ now!")
	if branch != "conch/0190a1b2-fix-the-login-page-now" {
		t.Errorf("branch %q", branch)
	}
	dir, err := Add(ctx, r, "main", branch)
	if err != nil {
		t.Fatal(err)
	}
	if got := gittest.Git(t, dir, "branch", "--show-current"); got != branch {
		t.Errorf("worktree on %q", got)
	}
	if got := gittest.Git(t, r, "status", "--porcelain"); got != "" {
		t.Errorf("the repository's own status: %q", got)
	}
	before := gittest.Git(t, r, "worktree", "list", "--porcelain")
	if _, err := Add(ctx, r, "main", branch); code(err) != shared.CodeConflict {
		t.Errorf("second Add: %v, want conflict", err)
	}
	if _, err := Add(ctx, r, "nope", "conch/other"); code(err) != shared.CodeInvalid {
		t.Errorf("Add from an unknown base: %v", err)
	}
	if after := gittest.Git(t, r, "worktree", "list", "--porcelain"); after != before || gittest.Git(t, r, "branch", "--list", "conch/other") != "" {
		t.Errorf("a refused Add changed the repository:\n%s\n%s", before, after)
	}
	gittest.Write(t, dir, map[string]string{"a.txt": "changed\n"})
	if err := Remove(ctx, r, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("worktree still there: %v", err)
	}
	if got := gittest.Git(t, r, "branch", "--list", branch); !strings.Contains(got, branch) {
		t.Errorf("branch gone: %q", got)
	}
	if got := gittest.Git(t, r, "show", branch+":a.txt"); got != "changed" { // the uncommitted change, kept
		t.Errorf("the branch's a.txt: %q", got)
	}
}

func TestChangesAndDiff(t *testing.T) {
	ctx := context.Background()
	odd := "quote\"d\nnew\u202eline-\xff.txt"
	r := gittest.Repo(t, map[string]string{"keep.txt": "1\n2\n3\n", "gone.txt": "g\n", "moved.txt": strings.Repeat("same line\n", 20),
		"big.txt": "x\n", "bin.dat": "\x00\x01"})
	dir, err := Add(ctx, r, "main", "conch/work")
	if err != nil {
		t.Fatal(err)
	}
	// One commit on the branch, one on the base, and uncommitted work.
	gittest.Write(t, dir, map[string]string{"keep.txt": "1\ntwo\n3\n4\n"})
	gittest.Git(t, dir, "commit", "-q", "-am", "edit keep")
	gittest.Write(t, r, map[string]string{"base.txt": "b\n"})
	gittest.Git(t, r, "add", "base.txt")
	gittest.Git(t, r, "commit", "-q", "-m", "base moves on")
	os.Remove(filepath.Join(dir, "gone.txt"))
	os.Rename(filepath.Join(dir, "moved.txt"), filepath.Join(dir, "renamed.txt"))
	gittest.Write(t, dir, map[string]string{odd: "odd\n", "bin.dat": "\x00\x02\x03", "big.txt": strings.Repeat("y", shared.DiffSideLimit+1),
		"ignored.log": "x", ".gitignore": "*.log\n"})

	c, err := Changes(ctx, dir, "main", "conch/work")
	if err != nil {
		t.Fatal(err)
	}
	if c.Ahead != 1 || c.Behind != 1 || c.Head != gittest.Git(t, dir, "rev-parse", "HEAD") || c.Base != "main" || c.Branch != "conch/work" {
		t.Errorf("summary %+v", c)
	}
	got := map[string]shared.ChangedFile{}
	for _, f := range c.Files {
		got[f.Path] = f
	}
	oddShown := strings.ToValidUTF8(odd, "\uFFFD")
	want := map[string]shared.ChangedFile{
		".gitignore":  {Path: ".gitignore", Status: "added", AddedLines: 1},
		"keep.txt":    {Path: "keep.txt", Status: "modified", AddedLines: 2, RemovedLines: 1},
		"gone.txt":    {Path: "gone.txt", Status: "deleted", RemovedLines: 1},
		"renamed.txt": {Path: "renamed.txt", OldPath: "moved.txt", Status: "renamed"},
		"big.txt":     {Path: "big.txt", Status: "modified", AddedLines: 1, RemovedLines: 1},
		"bin.dat":     {Path: "bin.dat", Status: "modified", Binary: true},
		oddShown:      {Path: oddShown, Status: "added", AddedLines: 1},
	}
	if len(got) != len(want) {
		t.Errorf("files %+v", c.Files)
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%q: %+v, want %+v", p, got[p], w)
		}
	}
	if got := gittest.Git(t, dir, "status", "--porcelain", "--untracked-files=all"); !strings.Contains(got, "?? ") {
		t.Errorf("reading the changes touched the worktree's index: %q", got)
	}

	d, err := Diff(ctx, dir, "main", "conch/work", "keep.txt")
	if err != nil || d.OldText == nil || *d.OldText != "1\n2\n3\n" || d.NewText == nil || *d.NewText != "1\ntwo\n3\n4\n" {
		t.Errorf("keep.txt: %+v %v", d, err)
	}
	if len(d.Hunks) != 1 || len(d.Hunks[0].Lines) != 5 || d.Hunks[0].Lines[2] != (shared.DiffLine{Kind: "+", New: 2, Text: "two"}) {
		t.Errorf("keep.txt's hunks: %+v", d.Hunks) // the page draws these
	}
	if d, err := Diff(ctx, dir, "main", "conch/work", oddShown); err != nil || d.OldText != nil || *d.NewText != "odd\n" {
		t.Errorf("odd name: %+v %v", d, err)
	}
	if d, err := Diff(ctx, dir, "main", "conch/work", "gone.txt"); err != nil || *d.OldText != "g\n" || d.NewText != nil {
		t.Errorf("gone.txt: %+v %v", d, err)
	}
	if d, err := Diff(ctx, dir, "main", "conch/work", "renamed.txt"); err != nil || *d.OldText != *d.NewText || d.Hunks != nil {
		t.Errorf("renamed.txt: %+v %v", d, err)
	}
	if d, err := Diff(ctx, dir, "main", "conch/work", "big.txt"); err != nil || !d.Omitted || d.OldText != nil || d.NewText != nil {
		t.Errorf("big.txt: omitted %v, %v", d.Omitted, err)
	}
	if d, err := Diff(ctx, dir, "main", "conch/work", "bin.dat"); err != nil || !d.File.Binary || d.OldText != nil || d.NewText != nil {
		t.Errorf("bin.dat: %+v %v", d, err)
	}
	for _, p := range []string{"ignored.log", "../" + filepath.Base(r) + "/keep.txt", "base.txt", ""} {
		if _, err := Diff(ctx, dir, "main", "conch/work", p); code(err) != shared.CodeNotFound {
			t.Errorf("%q: %v, want not found", p, err)
		}
	}
}
