package acp

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// No orphans: every agent and every command runs in a PID namespace of its own, whose
// first process is the conch binary itself (RunNamespaceInit). The server starts that
// process with Pdeathsig, so when the server dies, even by kill -9, the kernel kills it,
// and with it every process of the namespace: background children, double forks and
// setsid daemons included. The same happens when the command ends: what it left running
// in the background ends with it. The command itself is the init's child, not the init,
// so it takes signals as usual (kill $$ works). Inside, $$ and $! are the namespace's
// numbers and /proc still shows the host's.
//
// No reading the server: the namespace is in a user namespace of its own too, also when
// the server runs as root. Capabilities held there do not reach processes outside it,
// so an agent or command can neither read the server's memory nor its environment
// (/proc/PID/mem, /proc/PID/environ: where the token may be), not even as root with
// CAP_SYS_PTRACE; the server also makes itself non-dumpable (conch serve), which stops a
// process of the same non-root user that is outside any namespace. A non-root server maps
// only its own uid and gid, so setuid programs such as sudo gain nothing inside; a root
// server maps every id to itself, so commands keep root's power over files (apt-get,
// chown) but lose it over the server.
//
// Where the kernel refuses a user namespace (some containers), a root server uses a PID
// namespace alone, and where it refuses that too, commands run in a process group with
// Pdeathsig as before (a background child can then outlive a crashed server). The server
// logs each fallback once, with what it gives up.
//
// A process limit: the init sets RLIMIT_NPROC (processLimit) for everything it starts.
// In a user namespace the kernel counts a user's processes per namespace, so the limit is
// one agent's or command's, not the user's across the host. The kernel never applies it
// to uid 0, so under a root server it does nothing: a fork bomb there is stopped only by
// the host's own limits (pid_max, the container's pids cgroup).

// NamespaceInitArg is the first argument by which the conch binary runs as
// RunNamespaceInit: conch ns-init -- PROGRAM ARGS...
const NamespaceInitArg = "ns-init"

// statusFD is where the init writes how the command ended ("exit N" or "signal NAME"):
// its exit status cannot say it, since the init of a namespace cannot be killed by a
// signal sent from inside it. Before that it writes startedLine once the command runs.
const statusFD = 3

// startedLine tells the server that the init is ready for a stop's signals (see
// RunNamespaceInit) and the command has started: a signal sent earlier would end the
// init, and with it the command, or be lost.
const startedLine = "started"

// RunNamespaceInit is the first process of a command's PID namespace: it runs the
// command as its child with the same stdio, reaps every process orphaned inside, writes
// how the command ended to fd 3, and returns the exit code for the process; when it
// exits, the kernel kills whatever is left in the namespace. With "--probe" it only
// exits 0 (the server's check that namespaces work).
func RunNamespaceInit(args []string) int {
	var (
		spec  *sandboxSpec
		probe bool
	)
	for len(args) > 0 && args[0] != "--" {
		switch {
		case args[0] == "--probe":
			probe, args = true, args[1:]
		case args[0] == "--sandbox" && len(args) > 1:
			s, err := decodeSpec(args[1])
			if err != nil {
				fmt.Fprintln(os.Stderr, "conch:", err)
				return 2
			}
			spec, args = &s, args[2:]
		default:
			args = nil
		}
	}
	if probe {
		if spec != nil {
			if err := confine(*spec); err != nil {
				fmt.Fprintln(os.Stderr, "conch:", err)
				return 1
			}
		}
		return 0
	}
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: conch", NamespaceInitArg, "[--sandbox SPEC] -- PROGRAM [ARGS...]")
		return 2
	}
	status := os.NewFile(statusFD, "status")
	// A stop's SIGINT and SIGTERM go to the whole process group, the command included,
	// which decides itself how to end. The init must outlive it to report that: Go's
	// default for these signals would exit it, and the kernel then kills the command.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGINT, syscall.SIGTERM)
	limit := unix.Rlimit{Cur: processLimit, Max: processLimit}
	if err := unix.Setrlimit(unix.RLIMIT_NPROC, &limit); err != nil {
		fmt.Fprintln(os.Stderr, "conch: process limit:", err)
	}
	// The status pipe and the egress proxy's socket are the init's, not the command's.
	unix.CloseOnExec(statusFD)
	unix.CloseOnExec(egressFD)
	env, err := sandboxed(spec)
	if err != nil {
		fmt.Fprintln(os.Stderr, "conch:", err)
		fmt.Fprintln(status, "exit 126")
		return 126
	}
	proc, err := os.StartProcess(args[1], args[1:], &os.ProcAttr{Env: env, Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "conch:", err)
		fmt.Fprintln(status, "exit 127")
		return 127
	}
	fmt.Fprintln(status, startedLine)
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

// processLimit is the RLIMIT_NPROC of an agent's or a command's namespace. The kernel
// counts threads too: a JVM or a browser under test takes hundreds, a parallel build on
// many cores a few thousand; a fork bomb stops at this many, far below pid_max.
const processLimit = 4096

// isolation is how this server starts commands, found once (isolate).
var isolation struct {
	once sync.Once
	attr *syscall.SysProcAttr // nil: a process group only
}

// way is one way to start a command, and what a fallback to the next one gives up.
type way struct {
	attr *syscall.SysProcAttr
	lost string
}

// ways are the ways to start a command here, strongest first.
func ways() []way {
	const noPID = "commands run without a PID namespace: a background child of a command may outlive a crashed server"
	userns := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWUSER}
	uid, gid := os.Getuid(), os.Getgid()
	if uid != 0 {
		userns.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		userns.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		return []way{{userns, noPID}}
	}
	all := []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1<<32 - 1}}
	userns.UidMappings, userns.GidMappings, userns.GidMappingsEnableSetgroups = all, all, true
	return []way{
		{userns, "commands run without a user namespace: as root, an agent or command can read the server's memory and environment, the token included"},
		{&syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Cloneflags: syscall.CLONE_NEWPID}, noPID}, // needs CAP_SYS_ADMIN
	}
}

// isolate returns how to start a command here (a copy: the caller sets it on one command),
// nil without initExe or when no namespace can be made. The first call tries each way
// with a probe.
func isolate(initExe string) *syscall.SysProcAttr {
	if initExe == "" {
		return nil
	}
	isolation.once.Do(func() {
		for _, w := range ways() {
			probe := exec.Command(initExe, NamespaceInitArg, "--probe")
			probe.SysProcAttr = w.attr
			err := probe.Run()
			if err == nil {
				isolation.attr = w.attr
				return
			}
			slog.Warn(w.lost, "err", err)
		}
	})
	if isolation.attr == nil {
		return nil
	}
	attr := *isolation.attr
	return &attr
}

// readEnding reads how the command ended from what the init wrote to the status pipe;
// ok is false when it did not say (it was killed).
func readEnding(r *bufio.Reader) (exitStatus, bool) {
	line, _ := r.ReadString('\n')
	if strings.TrimSpace(line) == startedLine {
		line, _ = r.ReadString('\n')
	}
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
