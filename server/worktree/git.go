// Package worktree gives a task on a git repository its own worktree and branch, and
// reads what the task changed. It runs the real git (the one on the server's PATH) as a
// child process, never through a shell, with a bounded, clean environment and time limit.
//
// A repository is hostile input: its configuration may be written by the agent working in
// it (a worktree shares it), so no command configured there runs in the server's process.
// Hooks, fsmonitor, external diff and textconv programs, clean/smudge filters and every
// other program a configuration may name are switched off for every git command this
// package runs, and for the receive-pack a push starts in a repository on this machine
// (docs/SECURITY.md; programs_test.go lists the keys).
package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"conch/shared"
)

// Timeout bounds one git command.
const Timeout = 30 * time.Second

// OpTimeout bounds an Op asked of another machine (a runner's commit and push, a removal):
// its few git commands, each within Timeout.
const OpTimeout = 4 * Timeout

// maxOutput bounds what one git command may print before it is stopped (a file list of
// a very large change, one side of a diff is bounded lower by its caller).
const maxOutput = 64 << 20

// safety is the configuration every git command runs with, given through GIT_CONFIG_*
// variables (which take precedence over the repository's files and need no quoting), and
// on the command line of a receive-pack in a repository on this machine (receivePack):
// no hooks, no fsmonitor, signing, signature checking, ssh, credential, password, editor
// or alternate-refs program of the repository's choosing, no automatic gc or maintenance.
// A push neither fetches first (push.negotiate: an upload-pack in the remote) nor pushes
// submodules (their remotes' receive-packs), and a remote on this machine never checks
// out what it receives (updateInstead: its filters and fsmonitor).
var safety = [][2]string{
	{"core.hooksPath", os.DevNull},
	{"core.fsmonitor", "false"},
	{"core.alternateRefsCommand", "true"}, // lists no alternate's refs (an empty value is an error)
	{"core.editor", ":"},                  // ":" is git's word for no editor
	{"sequence.editor", ":"},
	{"commit.gpgSign", "false"},
	{"push.gpgSign", "false"},
	{"merge.verifySignatures", "false"},
	{"core.sshCommand", "ssh"},
	{"credential.helper", ""}, // an empty value empties the list of helpers
	{"core.askPass", ""},
	{"core.pager", "cat"},
	{"push.negotiate", "false"},
	{"push.recurseSubmodules", "no"},
	{"receive.denyCurrentBranch", "refuse"},
	{"gc.auto", "0"},
	{"maintenance.auto", "false"},
	{"advice.detachedHead", "false"},
}

// git runs git with args in dir and returns its standard output. stdout bounds the
// output (0: maxOutput); past it the command is stopped and errTooLarge returned.
// extraEnv adds variables (GIT_INDEX_FILE).
func git(ctx context.Context, dir string, limit int, extraEnv []string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	filters, err := filterOverrides(ctx, dir)
	if err != nil {
		return nil, err
	}
	return run(ctx, dir, limit, append(env(append(safety, filters...)), extraEnv...), args...)
}

// env is the whole environment of a git command: nothing of the server's but PATH (to
// find git), so no GIT_* variable of the server's own reaches it. Transports are those a
// push may use; not git:// (unauthenticated, and its connection is a program the
// repository may name, core.gitProxy, whose first setting wins over ours), nor ext:: or
// another remote helper. An empty GIT_PROXY_COMMAND, which outranks core.gitProxy, says
// no proxy all the same.
func env(config [][2]string) []string {
	e := []string{
		"PATH=" + os.Getenv("PATH"),
		"LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"GIT_PAGER=cat",
		"GIT_OPTIONAL_LOCKS=0",    // reading never rewrites the index the agent is using
		"GIT_LITERAL_PATHSPECS=1", // a file name is a name, never a pattern
		"GIT_ALLOW_PROTOCOL=file:http:https:ssh",
		"GIT_PROXY_COMMAND=",
		"GIT_CONFIG_COUNT=" + strconv.Itoa(len(config)),
	}
	for i, kv := range config {
		n := strconv.Itoa(i)
		e = append(e, "GIT_CONFIG_KEY_"+n+"="+kv[0], "GIT_CONFIG_VALUE_"+n+"="+kv[1])
	}
	return e
}

// filterOverrides empties every clean/smudge/process filter the repository's
// configuration names (git would run them on checkout and when it reads changed files),
// and makes every merge driver it names the command false, so that a file merged by one
// is a conflict rather than a program of the repository's run by the server.
func filterOverrides(ctx context.Context, dir string) ([][2]string, error) {
	out, err := run(ctx, dir, 0, env(safety), "config", "--null", "--name-only", "--get-regexp", `^(filter|merge)\.`)
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 { // none
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var kv [][2]string
	seen := map[string]bool{}
	for _, name := range strings.Split(string(out), "\x00") {
		i, j := strings.Index(name, "."), strings.LastIndex(name, ".")
		if i < 0 || j <= i || seen[name[:j]] {
			continue
		}
		seen[name[:j]] = true
		if kind, driver := name[:i], name[:j]; kind == "merge" {
			kv = append(kv, [2]string{driver + ".driver", "false"})
		} else {
			for _, k := range []string{"clean", "smudge", "process"} {
				kv = append(kv, [2]string{driver + "." + k, ""})
			}
		}
	}
	return kv, nil
}

// errTooLarge says a command printed more than its caller takes.
var errTooLarge = errors.New("git output over its bound")

func run(ctx context.Context, dir string, limit int, environ []string, args ...string) ([]byte, error) {
	if limit <= 0 {
		limit = maxOutput
	}
	cmd := exec.CommandContext(ctx, "git", append([]string{"--no-pager"}, args...)...)
	cmd.Dir, cmd.Env = dir, environ
	cmd.WaitDelay = time.Second
	out := &bounded{limit: limit}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = out, &limitedBuffer{b: &stderr, n: 4096}
	err := cmd.Run()
	switch {
	case out.over:
		return nil, errTooLarge
	case ctx.Err() != nil:
		return nil, shared.Errorf(shared.CodeTimeout, "git %s took longer than %s", args[0], Timeout)
	case err != nil:
		return out.b.Bytes(), &Error{Args: args, Stderr: strings.TrimSpace(stderr.String()), err: err}
	}
	return out.b.Bytes(), nil
}

// Error is a git command that failed, with what it said.
type Error struct {
	Args   []string
	Stderr string
	err    error
}

func (e *Error) Error() string {
	return fmt.Sprintf("git %s: %v: %s", e.Args[0], e.err, e.Stderr)
}

func (e *Error) Unwrap() error { return e.err }

// bounded keeps up to limit bytes and then refuses more, which stops the command.
type bounded struct {
	b     bytes.Buffer
	limit int
	over  bool
}

func (w *bounded) Write(p []byte) (int, error) {
	if w.b.Len()+len(p) > w.limit {
		w.over = true
		return 0, errTooLarge
	}
	return w.b.Write(p)
}

// limitedBuffer keeps the first n bytes and drops the rest without failing the command.
type limitedBuffer struct {
	b *bytes.Buffer
	n int
}

func (w *limitedBuffer) Write(p []byte) (int, error) {
	if room := w.n - w.b.Len(); room > 0 {
		w.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
