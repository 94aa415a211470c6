package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"conch/server/servetest"
)

// conchBin runs the built binary with args and returns its streams and exit status.
func conchBin(t *testing.T, env []string, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	c := exec.Command(servetest.Bin(t), args...)
	c.Env = append(os.Environ(), env...)
	var out, errs bytes.Buffer
	c.Stdout, c.Stderr = &out, &errs
	if err := c.Run(); c.ProcessState == nil {
		t.Fatalf("conch %v: %v", args, err)
	}
	return out.String(), errs.String(), c.ProcessState.ExitCode()
}

// Help asked for, in each of its spellings, is printed to stdout with status 0; a command
// line conch does not know still gets the usage on stderr and a status that is not 0.
func TestHelp(t *testing.T) {
	usage, _, _ := conchBin(t, nil, "help")
	for _, args := range [][]string{{"-h"}, {"--help"}, {"-help"}} {
		if out, errs, status := conchBin(t, nil, args...); status != 0 || out != usage || errs != "" {
			t.Errorf("conch %v: status %d, stdout %q, stderr %q; want 0 and the usage on stdout", args, status, out, errs)
		}
	}
	for _, c := range commands {
		if !strings.Contains(usage, "conch "+c.Name+" ") {
			t.Errorf("the usage does not list %s:\n%s", c.Name, usage)
		}
		// The flag defaults come from the environment: a token there stays out of the help.
		help, errs, status := conchBin(t, []string{"CONCH_TOKEN=not-for-the-help-text"}, "help", c.Name)
		if status != 0 || !strings.HasPrefix(help, "usage:\n  conch "+c.Name+" ") || errs != "" || strings.Contains(help, "not-for") {
			t.Errorf("conch help %s: status %d, stdout %q, stderr %q", c.Name, status, help, errs)
		}
		for _, flag := range []string{"-h", "--help"} {
			if out, errs, status := conchBin(t, []string{"CONCH_TOKEN=not-for-the-help-text"}, c.Name, flag); status != 0 || out != help || errs != "" {
				t.Errorf("conch %s %s: status %d, stdout %q, stderr %q; want 0 and conch help %[1]s on stdout", c.Name, flag, status, out, errs)
			}
		}
	}
	if out, _, status := conchBin(t, nil, "agent", "shell", "-h"); status != 0 || !strings.HasPrefix(out, "usage:\n  conch agent shell") {
		t.Errorf("conch agent shell -h: status %d, stdout %q", status, out)
	}
	for _, args := range [][]string{{}, {"frob"}, {"help", "frob"}, {"help", "serve", "prune"}, {"serve", "--frob"}, {"agent", "frob"}, {"tasks", "extra"}} {
		out, errs, status := conchBin(t, nil, args...)
		if status == 0 || out != "" || !strings.Contains(errs, "usage:") {
			t.Errorf("conch %v: status %d, stdout %q, stderr %q; want the usage on stderr and a failure", args, status, out, errs)
		}
	}
}
