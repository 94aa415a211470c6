package acp

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// No orphans: every agent and every command runs in a PID namespace of its own, whose
// first process is the conch binary itself (RunNamespaceInit). The server starts that
// process with Pdeathsig, so when the server dies, even by kill -9, the kernel kills it,
// and with it every process of the namespace: background children, double forks and
// setsid daemons included. The same happens when the command ends: what it left running
// in the background ends with it. The command itself is the init's child, not the init,
// so it takes signals as usual (kill $$ works).
//
// Limits: a PID namespace needs CAP_SYS_ADMIN or unprivileged user namespaces (a
// non-root server adds a user namespace mapping only its own uid and gid, so setuid
// programs such as sudo do not gain privileges inside). Where the kernel refuses (some
// containers), commands run in a process group with Pdeathsig as before, and a
// background child can then outlive a crashed server; the server logs this once.
// Inside, $$ and $! are the namespace's numbers and /proc still shows the host's.

// NamespaceInitArg is the first argument by which the conch binary runs as
// RunNamespaceInit: conch ns-init -- PROGRAM ARGS...
const NamespaceInitArg = "ns-init"

// statusFD is where the init writes how the command ended ("exit N" or "signal NAME"):
// its exit status cannot say it, since the init of a namespace cannot be killed by a
// signal sent from inside it.
const statusFD = 3

// RunNamespaceInit is the first process of a command's PID namespace: it runs the
// command as its child with the same stdio, reaps every process orphaned inside, writes
// how the command ended to fd 3, and returns the exit code for the process; when it
// exits, the kernel kills whatever is left in the namespace. With "--probe" it only
// exits 0 (the server's check that namespaces work).
func RunNamespaceInit(args []string) int {
	if len(args) == 1 && args[0] == "--probe" {
		return 0
	}
	if len(args) < 2 || args[0] != "--" {
		fmt.Fprintln(os.Stderr, "usage: conch", NamespaceInitArg, "-- PROGRAM [ARGS...]")
		return 2
	}
	status := os.NewFile(statusFD, "status")
	proc, err := os.StartProcess(args[1], args[1:], &os.ProcAttr{Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "conch:", err)
		fmt.Fprintln(status, "exit 127")
		return 127
	}
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "conch:", err)
			return 1
		}
		if pid != proc.Pid {
			continue // an orphan of the namespace, reaped
		}
		if ws.Signaled() {
			fmt.Fprintln(status, "signal", signalName(ws.Signal()))
		} else {
			fmt.Fprintln(status, "exit", ws.ExitStatus())
		}
		return 0
	}
}

// namespaces reports, once per server, whether PID namespaces can be made here.
var namespaces struct {
	once sync.Once
	ok   bool
}

func namespaceAttr() *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Cloneflags: syscall.CLONE_NEWPID}
	if uid, gid := os.Getuid(), os.Getgid(); uid != 0 {
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	}
	return attr
}

func namespacesWork(initExe string) bool {
	namespaces.once.Do(func() {
		probe := exec.Command(initExe, NamespaceInitArg, "--probe")
		probe.SysProcAttr = namespaceAttr()
		err := probe.Run()
		namespaces.ok = err == nil
		if err != nil {
			slog.Warn("commands run without a PID namespace: a background child of a command may outlive a crashed server", "err", err)
		}
	})
	return namespaces.ok
}

// readEnding reads what the init wrote to the status pipe; ok is false when it wrote
// nothing (it was killed, or there was no init).
func readEnding(r *os.File) (exitStatus, bool) {
	line, _ := bufio.NewReader(r).ReadString('\n')
	r.Close()
	kind, value, _ := strings.Cut(strings.TrimSpace(line), " ")
	switch kind {
	case "exit":
		if code, err := strconv.Atoi(value); err == nil {
			return exitStatus{Code: &code}, true
		}
	case "signal":
		return exitStatus{Signal: value}, true
	}
	return exitStatus{}, false
}
