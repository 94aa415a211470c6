package acp

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"conch/server/egress"
	"conch/shared"
)

// Process is a running agent as the runtime sees it: its stdio and how to end it.
// Launch starts real processes; tests may supply agents joined by io.Pipe.
type Process struct {
	Stdin  io.WriteCloser
	Stdout io.ReadCloser
	Exited <-chan struct{} // closed when the agent is gone
	// ExitErr says how it ended (valid once Exited is closed); Stderr is the tail of its
	// log output, for the session's error.
	ExitErr func() error
	Stderr  func() string
	Kill    func() // ends the agent and its whole process group
}

// Launcher starts an agent for a profile in a directory, in its session's sandbox.
type Launcher func(p Profile, cwd string, box *Box) (*Process, error)

// stderrTail is how much of an agent's stderr is kept for its error.
const stderrTail = 4 << 10

// ExecLauncher starts profiles as real processes, each in its own process group, PID
// namespace (nsinit.go) and sandbox (sandbox.go), with the box's environment. A profile
// without a command runs executable (the conch binary) with the profile's args.
func ExecLauncher(executable string) Launcher {
	return func(p Profile, cwd string, box *Box) (*Process, error) {
		proc, err := startProc(agentCommand(p, cwd), executable, box)
		if err != nil {
			return nil, fmt.Errorf("start %s: %w", cmp.Or(p.Command, executable), err)
		}
		return agentProcess(proc), nil
	}
}

// agentProcess is an agent started on a machine as the runtime sees it: its stderr kept
// as a bounded tail, its end as an error.
func agentProcess(proc Proc) *Process {
	var (
		mu      sync.Mutex
		tail    = tailBuffer{max: stderrTail}
		exitErr error
	)
	stderr := proc.Stderr()
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		buf := make([]byte, 4096)
		for {
			n, err := stderr.Read(buf)
			mu.Lock()
			tail.write(buf[:n])
			mu.Unlock()
			if err != nil {
				stderr.Close()
				return
			}
		}
	}()
	exited := make(chan struct{})
	go func() {
		st, err := proc.Wait()
		if st.Code != nil && *st.Code != 0 {
			err = fmt.Errorf("exit status %d", *st.Code)
		} else if st.Signal != "" {
			err = fmt.Errorf("signal: %s", st.Signal)
		}
		// The last words on stderr belong in the session's error: wait for them, but
		// not for a child that keeps stderr open.
		grace := time.NewTimer(drainGrace)
		select {
		case <-stderrDone:
		case <-grace.C:
		}
		grace.Stop()
		mu.Lock()
		exitErr = err
		mu.Unlock()
		close(exited)
	}()
	return &Process{
		Stdin: proc.Stdin(), Stdout: proc.Stdout(), Exited: exited,
		ExitErr: func() error { mu.Lock(); defer mu.Unlock(); return exitErr },
		Stderr: func() string {
			mu.Lock()
			defer mu.Unlock()
			text, _, _ := tail.text(false)
			s, _ := shared.Bound(text, stderrTail)
			return s
		},
		Kill: func() { proc.Signal(syscall.SIGKILL) },
	}
}

// childEnv is the server's environment for agents and their commands, less the server's
// own secret: an agent has no business with the API token.
func childEnv() []string {
	env := os.Environ()
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "CONCH_TOKEN=") {
			out = append(out, kv)
		}
	}
	return out
}

// group is a started process: the leader of a process group of its own, in a PID
// namespace of its own when the kernel allows (nsinit.go), and the read ends of its
// stdout and stderr (our own pipes, not StdoutPipe: Wait must not close them before
// everything has been read).
type group struct {
	cmd            *exec.Cmd
	stdout, stderr *os.File
	status         *os.File      // the namespace init's report; nil without one
	egress         *os.File      // the server's end of the egress proxy's control socket (network hosts)
	report         *bufio.Reader // reads status

	mu     sync.Mutex
	reaped bool // the leader's pid, and so the group's number, may belong to another process
}

// startGroup starts cmd in its own process group with Pdeathsig, so that a kill reaches
// its children and a crashed server leaves no orphan behind. With initExe (the conch
// binary) it runs under RunNamespaceInit in a PID namespace of its own, confined to box
// unless the box is off (--no-sandbox). With tty, cmd's stdio is a terminal (a console's
// PTY), which becomes the controlling terminal of a session of its own rather than a
// process group, so that the shell's job control and Ctrl-C work; its output is read
// from the PTY.
func startGroup(cmd *exec.Cmd, initExe string, box *Box, tty bool) (*group, error) {
	if cmd.Err != nil {
		return nil, cmd.Err
	}
	if _, err := exec.LookPath(cmd.Path); err != nil { // here, not in the init, so the caller hears of it
		return nil, err
	}
	g := &group{cmd: cmd}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var ends []*os.File // the child's ends, closed once it has them
	defer func() {
		for _, f := range ends {
			f.Close()
		}
	}()
	confined := !box.off
	attr := isolate(initExe)
	if confined {
		if err := sandboxReady(initExe); err != nil {
			return nil, err
		}
	}
	if attr != nil {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		g.status, ends = r, append(ends, w)
		init := []string{initExe, NamespaceInitArg}
		cmd.ExtraFiles = []*os.File{w} // fd 3: statusFD
		if confined {
			init = append(init, box.spec.args()...)
			if box.spec.Network != shared.NetworkAll {
				attr.Cloneflags |= syscall.CLONE_NEWNET
			}
			if box.spec.Network == shared.NetworkHosts {
				srv, sandbox, err := egress.Pair()
				if err != nil {
					g.closeReads()
					return nil, err
				}
				g.egress, ends = srv, append(ends, sandbox)
				cmd.ExtraFiles = append(cmd.ExtraFiles, sandbox) // fd 4: egressFD
			}
		}
		cmd.Args = append(append(init, "--", cmd.Path), cmd.Args[1:]...)
		cmd.Path = initExe
		cmd.SysProcAttr = attr
	}
	if tty {
		attr := *cmd.SysProcAttr
		attr.Setpgid, attr.Setsid, attr.Setctty, attr.Ctty = false, true, true, 0
		cmd.SysProcAttr = &attr
	}
	for _, into := range []*io.Writer{&cmd.Stdout, &cmd.Stderr} {
		if tty {
			break
		}
		r, w, err := os.Pipe()
		if err != nil {
			g.closeReads()
			return nil, err
		}
		*into, ends = w, append(ends, w)
		if into == &cmd.Stdout {
			g.stdout = r
		} else {
			g.stderr = r
		}
	}
	if err := cmd.Start(); err != nil {
		g.closeReads()
		return nil, err
	}
	if g.egress != nil { // it ends when the sandbox's last process has closed its end
		go egress.Serve(context.Background(), g.egress, box.hosts, nil, box.log)
	}
	addLeader(cmd.Process.Pid) // peer.go: what it starts is an agent's
	if g.status != nil {
		// Wait until the init says the command runs (or has ended): from then on a stop's
		// signals reach the command and the init stays to report how it ended (nsinit.go).
		g.report = bufio.NewReader(g.status)
		_, _ = g.report.Peek(1)
	}
	return g, nil
}

func (g *group) closeReads() {
	for _, f := range []*os.File{g.stdout, g.stderr, g.status, g.egress} {
		if f != nil {
			f.Close()
		}
	}
}

// signal sends sig to the whole group (SIGKILL ends its namespace with it), unless the
// leader has been reaped: its number may belong to someone else by then. It reports
// whether it sent the signal.
func (g *group) signal(sig syscall.Signal) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.reaped {
		return false
	}
	_ = syscall.Kill(-g.cmd.Process.Pid, sig) // ESRCH: the group is already gone
	return true
}

// wait waits until the leader has ended, ends what is left of its group (a command's
// background children end with it), reaps the leader and says how the command ended.
// The leader is waited for without being reaped (WNOWAIT): until it is reaped its pid,
// and so its group's number, cannot be reused, so kill can never reach a stranger.
func (g *group) wait() (exitStatus, error) {
	pid := g.cmd.Process.Pid
	var info unix.Siginfo
	for unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
	}
	g.mu.Lock()
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	g.reaped = true
	g.mu.Unlock()
	removeLeader(pid)
	err := g.cmd.Wait()
	if g.status != nil {
		st, ok := readEnding(g.report)
		g.status.Close()
		if ok {
			return st, nil
		}
	}
	return statusOf(g.cmd.ProcessState), err
}
