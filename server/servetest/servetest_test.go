package servetest

import (
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fatalRecorder is a test whose Fatal is recorded and ends only its goroutine.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatal(args ...any) {
	f.msg = args[0].(string)
	runtime.Goexit()
}

// start runs Start for cmd in a goroutine of its own and returns its address and the
// message it failed with.
func start(t *testing.T, cmd *exec.Cmd, wait time.Duration, logs interface{ String() string }) (string, string) {
	f := &fatalRecorder{TB: t}
	var addr string
	done := make(chan struct{})
	go func() {
		defer close(done)
		addr = Start(f, cmd, wait, logs)
	}()
	<-done
	return addr, f.msg
}

func TestStart(t *testing.T) {
	listening := exec.Command("sh", "-c", "echo starting; echo listening on http://127.0.0.1:1234; sleep 30")
	addr, msg := start(t, listening, time.Minute, nil)
	t.Cleanup(func() { _ = listening.Process.Kill(); _ = listening.Wait() })
	if addr != "http://127.0.0.1:1234" || msg != "" {
		t.Errorf("a server that listens: %q, failure %q", addr, msg)
	}

	var logs strings.Builder
	exits := exec.Command("sh", "-c", "echo no database >&2; exit 1")
	exits.Stderr = &logs
	if addr, msg := start(t, exits, time.Minute, &logs); addr != "" || msg != "the server exited before listening:\nno database\n" {
		t.Errorf("a server that exits: %q, failure %q", addr, msg)
	}

	silent := exec.Command("sleep", "30")
	if addr, msg := start(t, silent, 50*time.Millisecond, nil); addr != "" || msg != "the server did not print its address within 50ms" {
		t.Errorf("a silent server: %q, failure %q", addr, msg)
	}
	if silent.ProcessState == nil || silent.ProcessState.String() != "signal: killed" {
		t.Errorf("the silent server was not killed: %v", silent.ProcessState)
	}
}
