package acp

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"conch/app/client"
	"conch/server/servetest"
	"conch/server/waittest"
	"conch/shared"
)

// A command an agent runs cannot read the server's environment, where the token is, nor
// open its memory: the command runs in a user namespace of its own (also under a root
// server, as in this machine's tests), and the server is not dumpable.
func TestBinaryCommandCannotReadServer(t *testing.T) {
	t.Parallel()
	token := rand.Text()
	srv := startServerAs(t, filepath.Join(t.TempDir(), "conch.db"), func(cmd *exec.Cmd) {
		cmd.Env = append(os.Environ(), "CONCH_TOKEN="+token)
	})
	c := client.New(srv.base).WithToken(token)
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Limit(t))
	defer cancel()
	sess := startShell(t, c)
	proc := "/proc/" + strconv.Itoa(srv.cmd.Process.Pid)
	o := runUntil(ctx, t, c, sess.ID, "cat "+proc+"/environ; exec 3<"+proc+"/mem && echo mem-opened", "ended",
		func(m shared.Message, _ shared.ShellOutput) bool { return m.Metadata.Status.IsTerminal() })
	if strings.Contains(o.Stdout, token) || strings.Contains(o.Stdout, "mem-opened") || !strings.Contains(o.Stderr, "denied") {
		t.Errorf("the command read the server: stdout %q, stderr %q", o.Stdout, o.Stderr)
	}
}

// A process of the server's own user outside any namespace, without CAP_SYS_PTRACE (the
// fallback where the kernel makes no user namespace), cannot read the server's
// environment either: the server is not dumpable. Run as root, the test runs the server
// and the reader as nobody, and the server from a copy of CONCH_BIN in nobody's folder:
// a checkout under a folder only root may enter (/root) is no path nobody can run.
func TestBinaryServerNotDumpable(t *testing.T) {
	t.Parallel()
	token := rand.Text()
	dir := t.TempDir()
	var cred *syscall.Credential
	if os.Getuid() == 0 {
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
		dir = filepath.Join(dir, "nobody")
		if err := os.Mkdir(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		// t.TempDir's folders are 0700: let nobody through to its own.
		for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
			if err := os.Chmod(d, 0o777); err != nil {
				t.Fatal(err)
			}
		}
		bin, err := os.ReadFile(servetest.Bin(t))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "conch"), bin, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	srv := startServerAs(t, filepath.Join(dir, "conch.db"), func(cmd *exec.Cmd) {
		if cred != nil {
			cmd.Path, cmd.Args[0], cmd.Dir = filepath.Join(dir, "conch"), filepath.Join(dir, "conch"), dir
		}
		cmd.Env = append(os.Environ(), "CONCH_TOKEN="+token)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	})
	read := exec.Command("cat", "/proc/"+strconv.Itoa(srv.cmd.Process.Pid)+"/environ")
	read.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	out, err := read.Output()
	var exit *exec.ExitError
	if strings.Contains(string(out), token) || !errors.As(err, &exit) || !strings.Contains(string(exit.Stderr), "denied") {
		t.Errorf("a process of the server's user read its environment: %v, %.100q", err, out)
	}
}

// Everything an agent or command starts runs under processLimit (RLIMIT_NPROC), set by
// its namespace's init. A fork bomb is not tried: this machine is shared.
func TestProcessLimitApplied(t *testing.T) {
	t.Parallel()
	limits := run(t, "cat /proc/self/limits", nil).shellOutput().Stdout
	for _, line := range strings.Split(limits, "\n") {
		if strings.HasPrefix(line, "Max processes") {
			if f := strings.Fields(line); len(f) < 4 || f[2] != strconv.Itoa(processLimit) || f[3] != strconv.Itoa(processLimit) {
				t.Errorf("limits: %q", line)
			}
			return
		}
	}
	t.Fatalf("no Max processes in %q", limits)
}

// Without a token, the API on loopback is open to the host's processes but not to the
// agents' own: a command's write is refused, so an agent cannot answer its own permission
// requests. The test process, a process outside the agents, is served (it created the
// task and session).
func TestBinaryAgentCannotUseTheAPI(t *testing.T) {
	t.Parallel()
	srv := startServerAs(t, filepath.Join(t.TempDir(), "conch.db"), func(*exec.Cmd) {})
	c := client.New(srv.base)
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Limit(t))
	defer cancel()
	sess := startShell(t, c)
	port := srv.base[strings.LastIndex(srv.base, ":")+1:]
	body := `{"title":"from agent"}`
	request := `printf 'POST /api/v1/tasks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ` +
		strconv.Itoa(len(body)) + `\r\nConnection: close\r\n\r\n` + body + `' >&3`
	command := "bash -c 'exec 3<>/dev/tcp/127.0.0.1/" + port + "; " + strings.ReplaceAll(request, "'", `'\''`) + "; cat <&3'"
	o := runUntil(ctx, t, c, sess.ID, command, "ended", func(m shared.Message, _ shared.ShellOutput) bool { return m.Metadata.Status.IsTerminal() })
	if !strings.Contains(o.Stdout, "403 Forbidden") || !strings.Contains(o.Stdout, "may not use") {
		t.Errorf("the agent's request was answered: %q (stderr %q)", o.Stdout, o.Stderr)
	}
	tasks, err := c.ListTasks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 1 {
		t.Errorf("the agent created tasks: %+v", tasks)
	}
}
