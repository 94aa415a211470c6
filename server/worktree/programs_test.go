package worktree

import (
	"context"
	"fmt"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"conch/server/worktree/gittest"
	"conch/shared"
)

// programKeys are the configuration keys that name a program for git to run: every one
// that git 2.39 (the project's machines') documents in git-config(1), gitattributes(5)
// (filter.<driver>.process) and git-interpret-trailers(1). The value is what the key is
// set to: "" for the path of a script that leaves a mark named after the key, HOOKS for a
// directory of such scripts, one per hook. A <name> part is "evil", the name that
// .gitattributes, origin and triggerKeys use.
var programKeys = []struct{ key, value string }{
	// Programs git runs as it works in a repository.
	{"core.fsmonitor", ""},            // a hook asked which files changed, whenever the index is read
	{"core.hooksPath", "HOOKS"},       // where the hooks of githooks(5) are
	{"core.alternateRefsCommand", ""}, // lists an alternate's refs when receive-pack or upload-pack advertises them
	{"filter.evil.clean", ""},         // filter=evil: converts a file as it is added
	{"filter.evil.smudge", ""},        // converts a file as it is checked out
	{"filter.evil.process", ""},       // the long-running filter, in place of clean and smudge
	{"merge.evil.driver", ""},         // merge=evil: merges a file both sides changed
	{"diff.evil.command", ""},         // diff=evil: makes the file's diff
	{"diff.evil.textconv", ""},        // diff=evil: the text to diff of the file
	{"diff.external", ""},             // makes every diff
	{"gpg.program", ""},               // signs and verifies (commit.gpgSign, merge.verifySignatures...)
	{"gpg.openpgp.program", ""},       // gpg.<format>.program, for each format
	{"gpg.x509.program", ""},
	{"gpg.ssh.program", ""},
	{"gpg.ssh.defaultKeyCommand", ""}, // finds the key to sign with
	{"trailer.evil.command", ""},      // makes a trailer's value (interpret-trailers, commit --trailer)
	{"trailer.evil.cmd", ""},
	{"tar.evil.command", ""},           // compresses git archive's output
	{"uploadpack.packObjectsHook", ""}, // makes the pack upload-pack sends
	// Programs of the transports a push uses.
	{"core.gitProxy", ""},             // connects git://
	{"core.sshCommand", ""},           // connects ssh://
	{"core.askPass", ""},              // asks for a user name or password
	{"credential.helper", ""},         // gives credentials
	{"remote.evil.receivepack", ""},   // what a push to evil starts on the remote side
	{"remote.evil.uploadpack", ""},    // what a fetch from evil starts there (push.negotiate fetches)
	{"remote.origin.receivepack", ""}, // and for origin, which Push pushes to
	{"remote.origin.uploadpack", ""},
	// Programs for a person at a terminal.
	{"core.editor", ""},
	{"sequence.editor", ""},
	{"core.pager", ""},
	{"pager.status", ""}, // pager.<cmd>, for some of the commands this package runs
	{"pager.diff", ""},
	{"pager.push", ""},
	{"pager.worktree", ""},
	{"interactive.diffFilter", ""},
	{"alias.push", "!"},                 // an alias is ignored for a built-in command's name
	{"submodule.evil.update", "!"},      // git submodule update's command
	{"difftool.evil.cmd", ""},           // diff.tool and difftool.<tool>.path
	{"difftool.evil.path", ""},          //
	{"mergetool.evil.cmd", ""},          // merge.tool
	{"mergetool.evil.path", ""},         //
	{"browser.evil.cmd", ""},            // web.browser, help.browser, instaweb.browser
	{"browser.evil.path", ""},           //
	{"man.evil.cmd", ""},                // man.viewer
	{"man.evil.path", ""},               //
	{"guitool.evil.cmd", ""},            // git gui's tools
	{"instaweb.httpd", ""},              // git instaweb's server
	{"imap.tunnel", ""},                 // git imap-send's connection
	{"sendemail.smtpServer", ""},        // an absolute path is a sendmail program
	{"sendemail.tocmd", ""},             //
	{"sendemail.ccCmd", ""},             //
	{"remote.evil.vcs", "ext"},          // the remote helper of evil (ext runs the URL)
	{"url.ext::/.pushInsteadOf", "/x/"}, // url.<base>.insteadOf: rewrites a URL to ext::, which runs a program
}

// triggerKeys make git reach for the programs above where it otherwise would not.
var triggerKeys = [][2]string{
	{"commit.gpgSign", "true"}, {"tag.gpgSign", "true"}, {"push.gpgSign", "true"},
	{"merge.verifySignatures", "true"}, {"log.showSignature", "true"},
	{"push.negotiate", "true"}, {"push.recurseSubmodules", "on-demand"}, {"submodule.recurse", "true"},
	{"protocol.allow", "always"}, {"protocol.ext.allow", "always"},
	{"receive.autogc", "true"}, {"gc.auto", "1"}, {"gc.autoDetach", "false"}, {"maintenance.auto", "true"},
	{"rebase.backend", "apply"}, {"diff.tool", "evil"}, {"merge.tool", "evil"}, {"man.viewer", "evil"},
	{"web.browser", "evil"}, {"help.browser", "evil"}, {"instaweb.browser", "evil"},
}

// gitHooks are the hooks of githooks(5).
var gitHooks = []string{"applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
	"prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge", "pre-push",
	"pre-receive", "update", "proc-receive", "post-receive", "post-update", "reference-transaction",
	"push-to-checkout", "pre-auto-gc", "post-rewrite", "sendemail-validate", "fsmonitor-watchman",
	"p4-changelist", "p4-prepare-changelist", "p4-post-changelist", "p4-pre-submit", "post-index-change"}

// Every program key and hook is set, in the task's repository and in each remote on this
// machine it pushes to, to a script that leaves a mark; every operation of the package
// runs, and none leaves a mark (docs/SECURITY.md: no repository program runs).
func TestNoRepositoryProgramRuns(t *testing.T) {
	ctx := context.Background()
	marks, programs := t.TempDir(), t.TempDir()
	script := func(name string) string {
		name = strings.NewReplacer("/", "_", ":", "_").Replace(name)
		p := filepath.Join(programs, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\ntouch '"+filepath.Join(marks, name)+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hooksDir := filepath.Join(programs, "hooks")
	if err := os.Mkdir(hooksDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, h := range gitHooks {
		if err := os.Rename(script("hook "+h), filepath.Join(hooksDir, h)); err != nil {
			t.Fatal(err)
		}
	}
	// evil.config sets every key; each repository includes it, which reads as its own
	// configuration (git config, one key at a time, would take seconds).
	var text strings.Builder
	quote := strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace
	set := func(key, value string) {
		i, j := strings.Index(key, "."), strings.LastIndex(key, ".")
		section := key[:i]
		if j > i {
			section += ` "` + quote(key[i+1:j]) + `"`
		}
		fmt.Fprintf(&text, "[%s]\n\t%s = \"%s\"\n", section, key[j+1:], quote(value))
	}
	for _, k := range programKeys {
		switch k.value {
		case "HOOKS": // set repository by repository: a bare remote below keeps its own hooks directory
		case "", "!":
			set(k.key, k.value+script(k.key))
		default:
			set(k.key, k.value)
		}
	}
	for _, kv := range triggerKeys {
		set(kv[0], kv[1])
	}
	gittest.Write(t, programs, map[string]string{"evil.config": text.String()})
	// configure makes repo (its git directory gitDir) include evil.config, and puts the
	// hooks in its own hooks directory too, which it uses when hooksPath is unset.
	configure := func(repo, gitDir string, extra ...[2]string) {
		for _, h := range gitHooks {
			b, _ := os.ReadFile(filepath.Join(hooksDir, h))
			if err := os.WriteFile(filepath.Join(gitDir, "hooks", h), b, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		gittest.Git(t, repo, "config", "include.path", filepath.Join(programs, "evil.config"))
		for _, kv := range extra {
			gittest.Git(t, repo, "config", kv[0], kv[1])
		}
	}
	ran := func(op string) {
		t.Helper()
		entries, _ := os.ReadDir(marks)
		for _, e := range entries {
			t.Errorf("%s ran the repository's %s", op, e.Name())
			os.Remove(filepath.Join(marks, e.Name()))
		}
	}
	forget := func() {
		entries, _ := os.ReadDir(marks)
		for _, e := range entries {
			os.Remove(filepath.Join(marks, e.Name()))
		}
	}
	// setup runs git for the test's own ends, without the programs that would stop it.
	setup := func(dir string, args ...string) string {
		t.Helper()
		defer forget()
		return gittest.Git(t, dir, append([]string{"-c", "core.hooksPath=" + os.DevNull, "-c", "core.fsmonitor=false",
			"-c", "filter.evil.process=", "-c", "protocol.file.allow=always"}, args...)...)
	}

	// The task's repository, and the remotes it pushes to. On this machine: bare ones that
	// share objects with another (so receive-pack lists the alternate's refs), one with
	// the task's branch checked out (updateInstead: a push checks it out), one that hands
	// refs to the proc-receive hook, one for a submodule. Over HTTP: one served by git
	// http-backend (a program of git's, not of a repository's), and on any other path a
	// server that asks for a password.
	start := map[string]string{"a.txt": "a\n", "m.txt": "m\n", "c.txt": "c\n", ".gitattributes": "*.txt filter=evil diff=evil merge=evil\n"}
	r := gittest.Repo(t, start)
	remote := func() string {
		dir := filepath.Join(t.TempDir(), "remote.git")
		gittest.Git(t, r, "init", "-q", "--bare", "-b", "main", dir)
		alt := filepath.Join(t.TempDir(), "alt.git")
		gittest.Git(t, r, "init", "-q", "--bare", alt)
		gittest.Write(t, dir, map[string]string{"objects/info/alternates": filepath.Join(alt, "objects") + "\n"})
		configure(dir, dir)
		return dir
	}
	bareRemote := remote()
	checkedOut := filepath.Join(t.TempDir(), "checked-out")
	gittest.Git(t, r, "clone", "-q", r, checkedOut)
	gittest.Git(t, checkedOut, "checkout", "-q", "-b", "conch/evil")
	configure(checkedOut, filepath.Join(checkedOut, ".git"), [2]string{"core.hooksPath", hooksDir}, [2]string{"receive.denyCurrentBranch", "updateInstead"})
	procReceive := remote()
	gittest.Git(t, procReceive, "config", "receive.procReceiveRefs", "refs/heads")
	fileRemote, lastRemote, subRemote := remote(), remote(), remote()
	gittest.Git(t, r, "push", "-q", subRemote, "main")
	served := filepath.Join(t.TempDir(), "served.git")
	gittest.Git(t, r, "init", "-q", "--bare", served)
	gittest.Git(t, served, "config", "http.receivepack", "true")
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	backend := &cgi.Handler{Path: gitPath, Args: []string{"http-backend"}, Env: []string{"GIT_PROJECT_ROOT=" + filepath.Dir(served),
		"GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasPrefix(req.URL.Path, "/served.git/") {
			backend.ServeHTTP(w, req)
			return
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="conch"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer srv.Close()
	configure(r, filepath.Join(r, ".git"), [2]string{"core.hooksPath", hooksDir})
	// The bait works: git left to itself runs the repository's programs (but for the
	// process filter, which fails without speaking its protocol).
	gittest.Git(t, r, "-c", "filter.evil.process=", "status")
	if _, err := os.Stat(filepath.Join(marks, "core.fsmonitor")); err != nil {
		t.Fatalf("git status ran no fsmonitor: %v", err)
	}
	forget()

	if _, _, err := Repo(ctx, r, "main"); err != nil {
		t.Fatal(err)
	}
	ran("Repo")
	if got, err := Inspect(ctx, r); err != nil || got.Top != r || got.Branch != "main" {
		t.Fatalf("Inspect: %+v, %v", got, err)
	}
	ran("Inspect")
	dir, err := Add(ctx, r, "main", "conch/evil")
	if err != nil {
		t.Fatal(err)
	}
	ran("Add")
	gittest.Write(t, dir, map[string]string{"a.txt": "task\n", "m.txt": "task\n", "new.txt": "new\n"})
	if _, err := Changes(ctx, dir, "main", "conch/evil"); err != nil {
		t.Error(err)
	}
	ran("Changes")
	for _, p := range []string{"a.txt", "new.txt"} {
		if _, err := Diff(ctx, dir, "main", "conch/evil", p); err != nil {
			t.Error(err)
		}
	}
	ran("Diff")
	if err := Commit(ctx, dir, "task"); err != nil {
		t.Fatal(err)
	}
	ran("Commit")

	// Both sides change m.txt: its merge driver would merge it; a conflict instead.
	baseCommit := func(files map[string]string) {
		t.Helper()
		gittest.Write(t, r, files)
		if err := Commit(ctx, r, "base"); err != nil {
			t.Fatal(err)
		}
		ran("Commit on the base")
	}
	baseCommit(map[string]string{"m.txt": "base\n"})
	for _, mode := range []string{ModeMerge, ModeRebase} {
		if err := Land(ctx, r, dir, "main", "conch/evil", mode); !slices.Equal(shared.ConflictPaths(err), []string{"m.txt"}) {
			t.Errorf("landing (%s) a file with a merge driver: %v", mode, err)
		}
		ran("Land (" + mode + ", a conflict)")
	}
	// The base takes its change back and moves on: each mode lands a real merge or rebase.
	baseCommit(map[string]string{"m.txt": start["m.txt"], "c.txt": "base\n"})
	if err := Land(ctx, r, dir, "main", "conch/evil", ModeMerge); err != nil {
		t.Error(err)
	}
	ran("Land (merge)")
	gittest.Write(t, dir, map[string]string{"b.txt": "b\n"})
	if err := Commit(ctx, dir, "more"); err != nil {
		t.Fatal(err)
	}
	baseCommit(map[string]string{"c.txt": "base again\n"})
	if err := Land(ctx, r, dir, "main", "conch/evil", ModeRebase); err != nil {
		t.Error(err)
	}
	ran("Land (rebase)")
	// A signed commit the base fast-forwards to: merge.verifySignatures would verify it.
	gittest.Write(t, dir, map[string]string{"s.txt": "s\n"})
	if err := Commit(ctx, dir, "signed"); err != nil {
		t.Fatal(err)
	}
	commit := gittest.Git(t, dir, "cat-file", "commit", "HEAD")
	commit = strings.Replace(commit, "\n\n", "\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n -----END PGP SIGNATURE-----\n\n", 1)
	gittest.Write(t, programs, map[string]string{"commit": commit + "\n"})
	signed := setup(dir, "hash-object", "-t", "commit", "-w", "--no-filters", filepath.Join(programs, "commit"))
	setup(dir, "update-ref", "refs/heads/conch/evil", signed)
	if err := Land(ctx, r, dir, "main", "conch/evil", ModeRebase); err != nil {
		t.Error(err)
	}
	ran("Land (a signed commit)")

	// The task adds a submodule with a commit its remote (on this machine) lacks:
	// push.recurseSubmodules would push it there, by that remote's receive-pack.
	setup(dir, "submodule", "add", "-q", subRemote, "sub")
	gittest.Write(t, filepath.Join(dir, "sub"), map[string]string{"s.txt": "s\n"})
	setup(filepath.Join(dir, "sub"), "checkout", "-q", "-b", "conch/evil") // the refspec a submodule's push is given
	setup(filepath.Join(dir, "sub"), "add", ".")
	setup(filepath.Join(dir, "sub"), "commit", "-q", "-m", "sub")
	if err := Commit(ctx, dir, "submodule"); err != nil {
		t.Fatal(err)
	}
	ran("Commit (a submodule)")

	// Push, to each remote on this machine and by each transport.
	gittest.Git(t, r, "config", "credential."+srv.URL+".helper", script("credential.<url>.helper"))
	for _, p := range []struct {
		name string
		urls []string // origin's URL, then its push URLs
		ok   bool
	}{
		{"a bare remote on this machine", []string{bareRemote}, true},
		{"a remote on this machine by file://", []string{"file://" + fileRemote}, true},
		{"a remote with the branch checked out", []string{checkedOut}, false},
		{"a remote with proc-receive refs", []string{procReceive}, false},
		{"a remote by git://", []string{"git://127.0.0.1:1/r.git"}, false},
		{"a remote by ssh://", []string{"ssh://127.0.0.1:1/r.git"}, false},
		{"a remote by http:// asking for a password", []string{srv.URL + "/r.git"}, false},
		{"a remote by ext::", []string{"ext::" + script("ext-URL")}, false},
		{"a remote whose URL becomes ext::", []string{"/x" + script("ext-URL")}, false},
		{"a remote by http://", []string{srv.URL + "/served.git"}, true},
		// Last: the push URLs stay.
		{"a local push URL after a remote one", []string{bareRemote, srv.URL + "/served.git", lastRemote}, true},
	} {
		gittest.Git(t, r, "config", "remote.origin.url", p.urls[0])
		for _, u := range p.urls[1:] {
			gittest.Git(t, r, "config", "--add", "remote.origin.pushurl", u)
		}
		if err := Push(ctx, dir, "conch/evil"); (err == nil) != p.ok {
			t.Errorf("push to %s: %v", p.name, err)
		}
		ran("Push to " + p.name)
	}
	// origin by a remote helper that runs its URL.
	gittest.Git(t, r, "config", "--replace-all", "remote.origin.pushurl", script("remote-helper-URL"))
	gittest.Git(t, r, "config", "remote.origin.vcs", "ext")
	if err := Push(ctx, dir, "conch/evil"); err == nil {
		t.Error("push by the ext remote helper worked")
	}
	ran("Push by a remote helper")

	gittest.Write(t, dir, map[string]string{"u.txt": "uncommitted\n"})
	if err := Remove(ctx, r, dir); err != nil {
		t.Error(err)
	}
	ran("Remove")
}
