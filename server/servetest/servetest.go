// Package servetest runs the built server, $CONCH_BIN, for the tests that need the real
// binary: `conch serve` on a loopback port of its own, found from its "listening on" line.
// It lives beside the server rather than in server/internal because app/e2e, outside
// server/, runs the binary too.
package servetest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Bin is $CONCH_BIN, the built server under test; the test is skipped when it is not set
// (make test sets it to bin/conch).
func Bin(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("CONCH_BIN")
	if bin == "" {
		t.Skip("CONCH_BIN is not set (make test sets it to bin/conch)")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("CONCH_BIN: %v", err)
	}
	return bin
}

// Start starts cmd, a `conch serve` the caller set up (arguments, environment, stderr),
// and returns the address it prints once it listens; stopping it is the caller's. The
// test fails when the server exits first or says nothing within wait (the server is
// killed and waited for then); logs (its stderr, or nil) is shown.
func Start(t testing.TB, cmd *exec.Cmd, wait time.Duration, logs interface{ String() string }) string {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	listening, ended := make(chan string, 1), make(chan struct{})
	go func() {
		defer close(ended)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				select {
				case listening <- a:
				default:
				}
			}
		}
	}()
	fail := func(why string) {
		t.Helper()
		_ = cmd.Process.Kill()
		_ = cmd.Wait() // its stderr is all copied into logs then
		if logs != nil {
			why += ":\n" + logs.String()
		}
		t.Fatal(why)
	}
	select {
	case a := <-listening:
		return a
	case <-ended:
		select {
		case a := <-listening: // printed just before it ended
			return a
		default:
		}
		fail("the server exited before listening")
	case <-time.After(wait):
		fail(fmt.Sprintf("the server did not print its address within %s", wait))
	}
	return ""
}
