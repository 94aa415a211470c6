package worktree

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"conch/server/worktree/gittest"
	"conch/shared"
)

// A task's repo_url is a URL git clones with the transports Conch allows, or a path on
// the runner's disk; nothing git or ssh would read as an option, and no remote helper.
func TestCheckURL(t *testing.T) {
	for _, ok := range []string{
		"https://github.com/example/repo.git",
		"ssh://git@example.com:2222/repo.git",
		"git@example.com:example/repo.git",
		"example.com:repo",
		"file:///srv/git/repo.git",
		"file://localhost/srv/git/repo.git",
		"/srv/git/repo.git",
	} {
		if err := CheckURL(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for url, why := range map[string]string{
		"":                                     "is empty",
		"-uhttps://example.com/r":              "starts with -",
		"--upload-pack=touch /tmp/x":           "starts with -",
		"ext::sh -c id":                        "whitespace",
		"ext::sh":                              "remote helper",
		"fd::3":                                "remote helper",
		"https://example.com/a::b":             "remote helper",
		"git://example.com/r.git":              "is not https://",
		"http://example.com/r.git":             "is not https://",
		"HTTPS://example.com/r.git":            "is not https://",
		"ssh://-oProxyCommand=id/r":            "starts with -",
		"ssh://-oProxyCommand@host/r":          "starts with -",
		"-oProxyCommand=id:r":                  "starts with -",
		"git@-oProxyCommand=id:r":              "starts with -",
		"@host:r":                              "starts with -",
		"https:///no-host":                     "names no host",
		"file://other/srv/r.git":               "is not file:///",
		"relative/path":                        "is not a URL git can clone",
		"/srv/../etc/r.git":                    "not a clean absolute path",
		"https://example.com/r\n.git":          "control character",
		"https://example.com/\x00":             "NUL",
		"https://example.com/\xff":             "not valid UTF-8",
		"/" + strings.Repeat("a", MaxURLBytes): "longer than",
	} {
		err := CheckURL(url)
		if shared.ErrorCode(err) != shared.CodeInvalid || !strings.Contains(err.Error(), why) {
			t.Errorf("%q: %v, want invalid with %q", url, err, why)
		}
	}
}

// A task's worktree made from its repo_url, on the machine that holds it: a bare clone
// per URL, the worktree of the task's branch from the base, its work committed and
// pushed back; another machine (another data directory) then continues from the pushed branch,
// and the first one's worktree is reused as it is.
func TestDo(t *testing.T) {
	ctx := context.Background()
	origin := gittest.Bare(t, map[string]string{"a.txt": "one\n"})
	url := "file://" + origin
	op := Op{Op: OpMake, URL: url, Base: "main", Branch: "conch/0192abcd-fix"}
	host := Host{Dir: t.TempDir()}
	made, err := Do(ctx, host, op)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(made.Dir, host.Dir+"/repos/") || gittest.Git(t, made.Dir, "branch", "--show-current") != op.Branch ||
		gittest.Git(t, made.Dir, "rev-parse", "HEAD") != gittest.Git(t, origin, "rev-parse", "main") {
		t.Fatalf("made %+v", made)
	}
	gittest.Write(t, made.Dir, map[string]string{"b.txt": "two\n"})
	changes, err := Do(ctx, host, Op{Op: OpChanges, URL: url, Base: "main", Branch: op.Branch})
	if err != nil || changes.Dir != made.Dir || len(changes.Changes.Files) != 1 || changes.Changes.Files[0].Path != "b.txt" {
		t.Fatalf("changes: %+v %v", changes, err)
	}
	if _, err := Do(ctx, host, Op{Op: OpCommit, URL: url, Base: "main", Branch: op.Branch, Message: "b"}); err != nil {
		t.Fatal(err)
	}
	pushed, err := Do(ctx, host, Op{Op: OpPush, URL: url, Base: "main", Branch: op.Branch})
	if err != nil || pushed.Changes.Ahead != 1 {
		t.Fatalf("push: %+v %v", pushed, err)
	}
	if got := gittest.Git(t, origin, "show", op.Branch+":b.txt"); got != "two" {
		t.Fatalf("pushed b.txt: %q", got)
	}
	gittest.Write(t, made.Dir, map[string]string{"c.txt": "kept\n"})
	if again, err := Do(ctx, host, op); err != nil || again.Dir != made.Dir {
		t.Fatalf("made again: %+v %v", again, err)
	}
	if _, err := os.Stat(filepath.Join(made.Dir, "c.txt")); err != nil {
		t.Fatalf("the worktree made again lost its uncommitted work: %v", err)
	}

	elsewhere, err := Do(ctx, Host{Dir: t.TempDir()}, op)
	if err != nil || gittest.Git(t, elsewhere.Dir, "branch", "--show-current") != op.Branch {
		t.Fatalf("made elsewhere: %+v %v", elsewhere, err)
	}
	if b, err := os.ReadFile(filepath.Join(elsewhere.Dir, "b.txt")); err != nil || string(b) != "two\n" {
		t.Fatalf("elsewhere, b.txt is %q, %v: not the pushed branch", b, err)
	}

	for _, bad := range []Op{
		{Op: OpMake, URL: url, Base: "dev", Branch: "conch/x"},
		{Op: OpMake, URL: "ext::sh", Base: "main", Branch: "conch/x"},
		{Op: OpMake, URL: url, Base: "main", Branch: "-x"},
		{Op: OpPush, URL: url, Base: "main", Branch: "conch/never-made"},
		{Op: "frob", URL: url, Base: "main", Branch: op.Branch},
	} {
		if _, err := Do(ctx, host, bad); err == nil {
			t.Errorf("%+v done", bad)
		}
	}
	if got := gittest.Git(t, origin, "branch", "--list"); got != op.Branch+"\n* main" {
		t.Errorf("origin's branches after refusals: %q", got)
	}

	clone := gittest.Git(t, made.Dir, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if removed, err := Do(ctx, host, Op{Op: OpRemove, URL: url, Base: "main", Branch: op.Branch}); err != nil || removed.Dir != made.Dir {
		t.Fatalf("remove: %+v %v", removed, err)
	}
	if _, err := os.Stat(made.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the removed worktree: %v", err)
	}
	if got := gittest.Git(t, clone, "show", op.Branch+":c.txt"); got != "kept" {
		t.Errorf("c.txt on the branch the clone keeps: %q", got)
	}
}

// A machine takes no repo_url in its own directory (its clones, worktrees and sessions'
// directories belong to other tasks), however it is named, and, given patterns, only the
// URLs they match; a refusal changes nothing there.
func TestDoRefusesWhatTheMachineDoesNotTake(t *testing.T) {
	ctx := context.Background()
	origin := gittest.Bare(t, map[string]string{"a.txt": "one\n"})
	host := Host{Dir: t.TempDir()}
	if _, err := Do(ctx, host, Op{Op: OpMake, URL: "file://" + origin, Base: "main", Branch: "conch/a"}); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(host.Dir, "repos"))
	if err != nil || len(entries) != 1 {
		t.Fatalf("clones: %v %v", entries, err)
	}
	clone := filepath.Join(host.Dir, "repos", entries[0].Name())
	link := filepath.Join(t.TempDir(), "link.git")
	if err := os.Symlink(clone, link); err != nil {
		t.Fatal(err)
	}
	for _, url := range []string{clone, "file://" + clone, "file://localhost" + clone, host.Dir, link, "file://" + link} {
		_, err := Do(ctx, host, Op{Op: OpMake, URL: url, Base: "main", Branch: "conch/b"})
		if shared.ErrorCode(err) != shared.CodeInvalid || !strings.Contains(err.Error(), "this machine's own directory") {
			t.Errorf("%s: %v, want it refused as this machine's own", url, err)
		}
	}

	host.Repos = []string{"https://git.example.com/acme/*", "file://" + filepath.Dir(origin) + "/*"}
	if _, err := Do(ctx, host, Op{Op: OpMake, URL: "file://" + origin, Base: "main", Branch: "conch/a"}); err != nil {
		t.Errorf("a URL a pattern matches: %v", err)
	}
	for _, url := range []string{origin, "https://git.example.com/acme/app/more", "https://git.example.com/other/app", "git@git.example.com:acme/app"} {
		_, err := Do(ctx, host, Op{Op: OpMake, URL: url, Base: "main", Branch: "conch/b"})
		if shared.ErrorCode(err) != shared.CodeInvalid || !strings.Contains(err.Error(), "not one of the repositories this machine takes") {
			t.Errorf("%s: %v, want it refused by the patterns", url, err)
		}
	}
	if entries, err := os.ReadDir(filepath.Join(host.Dir, "repos")); err != nil || len(entries) != 1 {
		t.Errorf("clones after the refusals: %v %v", entries, err)
	}
}
