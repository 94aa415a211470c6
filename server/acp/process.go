package acp

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

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

// Launcher starts an agent for a profile in a directory.
type Launcher func(p Profile, cwd string) (*Process, error)

// stderrTail is how much of an agent's stderr is kept for its error.
const stderrTail = 4 << 10

// ExecLauncher starts profiles as real processes, each in its own process group, with
// the profile's env added to the server's. A profile without a command runs executable
// (the conch binary) with the profile's args.
func ExecLauncher(executable string) Launcher {
	return func(p Profile, cwd string) (*Process, error) {
		command := p.Command
		if command == "" {
			command = executable
		}
		cmd := exec.Command(command, p.Args...)
		cmd.Dir = cwd
		cmd.Env = childEnv()
		for k, v := range p.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		outR, errR, err := startGroup(cmd)
		if err != nil {
			return nil, fmt.Errorf("start %s: %w", command, err)
		}
		var (
			mu      sync.Mutex
			tail    = tailBuffer{max: stderrTail}
			exitErr error
		)
		stderrDone := make(chan struct{})
		go func() {
			defer close(stderrDone)
			buf := make([]byte, 4096)
			for {
				n, err := errR.Read(buf)
				mu.Lock()
				tail.write(buf[:n])
				mu.Unlock()
				if err != nil {
					errR.Close()
					return
				}
			}
		}()
		exited := make(chan struct{})
		go func() {
			err := cmd.Wait()
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
		pid := cmd.Process.Pid
		return &Process{
			Stdin: stdin, Stdout: outR, Exited: exited,
			ExitErr: func() error { mu.Lock(); defer mu.Unlock(); return exitErr },
			Stderr: func() string {
				mu.Lock()
				defer mu.Unlock()
				raw, cut := tail.tail()
				s, _ := shared.Bound(tailText(raw, cut, false), stderrTail)
				return s
			},
			Kill: func() { _ = syscall.Kill(-pid, syscall.SIGKILL) },
		}, nil
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

// startGroup starts cmd in its own process group, so that a kill reaches its children,
// with Pdeathsig, so that a crashed server leaves no orphan behind (graceful stops kill
// the whole group). It returns the read ends of stdout and stderr: our own pipes, not
// StdoutPipe, because Wait must not close them before everything has been read.
func startGroup(cmd *exec.Cmd) (stdout, stderr *os.File, err error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, nil, err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, nil, err
	}
	return outR, errR, nil
}
