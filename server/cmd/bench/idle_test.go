package main

import (
	"os"
	"os/exec"
	"testing"
)

// treePSS counts a process and the processes under it, with their memory.
func TestTreePSS(t *testing.T) {
	alone, procs, err := treePSS(os.Getpid())
	if err != nil || procs < 1 || alone <= 0 {
		t.Fatalf("this process: %d KiB in %d processes, %v", alone, procs, err)
	}
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	with, procsWith, err := treePSS(os.Getpid())
	if err != nil || procsWith != procs+1 || with <= 0 {
		t.Errorf("with a child: %d KiB in %d processes (%d before), %v", with, procsWith, procs, err)
	}
	if _, _, err := treePSS(1 << 30); err == nil {
		t.Error("no such process: no error")
	}
}
