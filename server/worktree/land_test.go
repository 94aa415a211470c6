package worktree

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"conch/server/worktree/gittest"
	"conch/shared"
)

// state is everything landing may change: every ref, and each work tree's checkout and files.
func state(t *testing.T, repo string, dirs ...string) string {
	t.Helper()
	s := gittest.Git(t, repo, "for-each-ref", "--format=%(refname) %(objectname)")
	for _, d := range append(dirs, repo) {
		s += "\n" + d + ": " + gittest.Git(t, d, "rev-parse", "HEAD") + " " + gittest.Git(t, d, "status", "--porcelain", "--untracked-files=all")
		files, _ := filepath.Glob(filepath.Join(d, "*.txt"))
		for _, f := range files {
			b, _ := os.ReadFile(f)
			s += "\n" + f + ": " + string(b)
		}
	}
	return s
}

// bare makes a bare repository and names it repo's origin.
func bare(t *testing.T, repo string) string {
	t.Helper()
	remote := filepath.Join(t.TempDir(), "remote.git")
	gittest.Git(t, repo, "init", "-q", "--bare", remote)
	gittest.Git(t, repo, "remote", "add", "origin", remote)
	return remote
}

func TestCommitLandPush(t *testing.T) {
	for _, mode := range []string{ModeMerge, ModeRebase} {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			r := gittest.Repo(t, map[string]string{"a.txt": "a\n"})
			remote := bare(t, r)
			dir, err := Add(ctx, r, "main", "conch/work")
			if err != nil {
				t.Fatal(err)
			}
			if err := Commit(ctx, dir, " \n"); code(err) != shared.CodeInvalid {
				t.Errorf("empty message: %v", err)
			}
			if err := Commit(ctx, dir, "nothing"); code(err) != shared.CodeConflict {
				t.Errorf("nothing to commit: %v", err)
			}
			if err := Land(ctx, r, dir, "main", "conch/work", mode); code(err) != shared.CodeConflict || !strings.Contains(err.Error(), "nothing to land") {
				t.Errorf("landing nothing: %v", err)
			}
			gittest.Write(t, dir, map[string]string{"b.txt": "b\n"})
			if err := Land(ctx, r, dir, "main", "conch/work", mode); code(err) != shared.CodeConflict || !strings.Contains(err.Error(), "commit it first") {
				t.Errorf("landing uncommitted work: %v", err)
			}
			if err := Commit(ctx, dir, "Add b"); err != nil {
				t.Fatal(err)
			}
			if got := gittest.Git(t, dir, "log", "-1", "--format=%s %an"); got != "Add b Conch" {
				t.Errorf("commit %q", got)
			}
			// The base moves on, so landing is a real merge or rebase.
			gittest.Write(t, r, map[string]string{"c.txt": "c\n"})
			gittest.Git(t, r, "add", "c.txt")
			gittest.Git(t, r, "commit", "-q", "-m", "c")
			if err := Land(ctx, r, dir, "main", "conch/work", mode); err != nil {
				t.Fatal(err)
			}
			// The checked-out base moved with its files, and holds the branch.
			if b, err := os.ReadFile(filepath.Join(r, "b.txt")); err != nil || string(b) != "b\n" {
				t.Errorf("b.txt in the base's checkout: %q %v", b, err)
			}
			gittest.Git(t, r, "merge-base", "--is-ancestor", "conch/work", "main")
			if got := gittest.Git(t, r, "status", "--porcelain"); got != "" {
				t.Errorf("base's checkout after landing: %q", got)
			}
			parents := strings.Fields(gittest.Git(t, r, "log", "-1", "--format=%p", "main"))
			if want := map[string]int{ModeMerge: 2, ModeRebase: 1}[mode]; len(parents) != want {
				t.Errorf("main's head has %d parents, want %d", len(parents), want)
			}
			if err := Push(ctx, dir, "conch/work"); err != nil {
				t.Fatal(err)
			}
			if got, want := gittest.Git(t, remote, "rev-parse", "conch/work"), gittest.Git(t, r, "rev-parse", "conch/work"); got != want {
				t.Errorf("remote has %s, want %s", got, want)
			}
		})
	}
}

// Two tasks change one line differently: the first lands, the second's landing stops on
// the conflict, names the file, and leaves every ref, checkout and file as it was.
func TestLandConflictChangesNothing(t *testing.T) {
	for _, mode := range []string{ModeMerge, ModeRebase} {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			r := gittest.Repo(t, map[string]string{"a.txt": "one\n", "z.txt": "z\n"})
			one, err := Add(ctx, r, "main", "conch/one")
			if err != nil {
				t.Fatal(err)
			}
			two, err := Add(ctx, r, "main", "conch/two")
			if err != nil {
				t.Fatal(err)
			}
			gittest.Write(t, one, map[string]string{"a.txt": "first\n"})
			gittest.Write(t, two, map[string]string{"a.txt": "second\n", "z.txt": "zz\n"})
			for _, d := range []string{one, two} {
				if err := Commit(ctx, d, "edit a"); err != nil {
					t.Fatal(err)
				}
			}
			if err := Land(ctx, r, one, "main", "conch/one", mode); err != nil {
				t.Fatal(err)
			}
			before := state(t, r, one, two)
			err = Land(ctx, r, two, "main", "conch/two", mode)
			if code(err) != shared.CodeConflict || !slices.Equal(shared.ConflictPaths(err), []string{"a.txt"}) {
				t.Fatalf("conflicting landing: %v", err)
			}
			if after := state(t, r, one, two); after != before {
				t.Errorf("state after the conflict\n%s\nwas\n%s", after, before)
			}
		})
	}
}

// Landing would have to touch the base's checkout, which has uncommitted changes: refused,
// and nothing changes. A base checked out nowhere moves without any checkout.
func TestLandBaseCheckout(t *testing.T) {
	ctx := context.Background()
	r := gittest.Repo(t, map[string]string{"a.txt": "a\n"})
	dir, err := Add(ctx, r, "main", "conch/work")
	if err != nil {
		t.Fatal(err)
	}
	gittest.Write(t, dir, map[string]string{"b.txt": "b\n"})
	if err := Commit(ctx, dir, "b"); err != nil {
		t.Fatal(err)
	}
	gittest.Write(t, r, map[string]string{"a.txt": "mine\n"})
	before := state(t, r, dir)
	if err := Land(ctx, r, dir, "main", "conch/work", ModeMerge); code(err) != shared.CodeConflict || !strings.Contains(err.Error(), "uncommitted changes") {
		t.Errorf("landing on a dirty base: %v", err)
	}
	if after := state(t, r, dir); after != before {
		t.Errorf("state\n%s\nwas\n%s", after, before)
	}
	gittest.Git(t, r, "checkout", "-q", "-b", "elsewhere")
	if err := Land(ctx, r, dir, "main", "conch/work", ModeRebase); err != nil {
		t.Fatal(err)
	}
	if got, want := gittest.Git(t, r, "rev-parse", "main"), gittest.Git(t, r, "rev-parse", "conch/work"); got != want {
		t.Errorf("main at %s, want the branch's %s", got, want)
	}
	if got := gittest.Git(t, r, "status", "--porcelain"); got != "M a.txt" {
		t.Errorf("the other checkout: %q", got)
	}
	if err := Land(ctx, r, dir, "main", "conch/work", "squash"); code(err) != shared.CodeInvalid {
		t.Errorf("unknown mode: %v", err)
	}
}

func TestPushErrors(t *testing.T) {
	ctx := context.Background()
	r := gittest.Repo(t, map[string]string{"a.txt": "a\n"})
	dir, err := Add(ctx, r, "main", "conch/work")
	if err != nil {
		t.Fatal(err)
	}
	if err := Push(ctx, dir, "conch/work"); code(err) != shared.CodeConflict || !strings.Contains(err.Error(), "no remote origin") {
		t.Errorf("no origin: %v", err)
	}
	gittest.Git(t, r, "remote", "add", "origin", filepath.Join(t.TempDir(), strings.Repeat("missing", 300)))
	err = Push(ctx, dir, "conch/work")
	if code(err) != shared.CodeConflict || !strings.Contains(err.Error(), "pushing conch/work to origin failed: ") || len(err.Error()) > maxPushMessage+100 {
		t.Errorf("missing remote: %v", err)
	}
	gittest.Git(t, r, "remote", "set-url", "origin", "ext::sh -c touch% /tmp/x")
	if err := Push(ctx, dir, "conch/work"); code(err) != shared.CodeConflict || !strings.Contains(err.Error(), "transport 'ext' not allowed") {
		t.Errorf("ext remote: %v", err)
	}
	gittest.Git(t, r, "remote", "set-url", "origin", t.TempDir())
	gittest.Git(t, r, "remote", "set-url", "--add", "--push", "origin", t.TempDir())
	gittest.Git(t, r, "remote", "set-url", "--add", "--push", "origin", "git@127.0.0.1:r.git")
	if err := Push(ctx, dir, "conch/work"); code(err) != shared.CodeConflict || !strings.Contains(err.Error(), "one kind at a time") {
		t.Errorf("push URLs on this machine and by ssh: %v", err)
	}
	for url, want := range map[string]bool{"/srv/r.git": true, "file:///srv/r.git": true, "../r": true, "r": true,
		"host:r.git": false, "git@host:r.git": false, "ssh://host/r": false, "https://host/r": false, "./a:b": true} {
		if local(url) != want {
			t.Errorf("local(%q) = %v", url, !want)
		}
	}
}
