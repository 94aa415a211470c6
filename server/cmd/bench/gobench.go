package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// goBenchPackages hold `go test -bench` benchmarks of their own (written by their owners).
// ./server/replica measures the cross-replica notice latency on a throwaway PostgreSQL.
var goBenchPackages = []string{"./server/api", "./server/replica"}

// goBench runs the packages' Go benchmarks and includes their figures.
func (b *bench) goBench(ctx context.Context) error {
	goBin := os.Getenv("GO")
	if goBin == "" {
		goBin = "go"
	}
	args := append([]string{"test", "-run", "^$", "-bench", ".", "-benchmem", "-count", strconv.Itoa(b.runs)}, goBenchPackages...)
	cmd := exec.CommandContext(ctx, goBin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %v\n%s", goBin, strings.Join(args, " "), err, out.String())
	}
	var lines []string
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "Benchmark") || strings.HasPrefix(l, "pkg:") {
			lines = append(lines, l)
		}
	}
	b.r.h(2, "Go benchmarks")
	b.r.p("The benchmarks their owners keep beside the code, run in process (`go %s`; ./server/replica's over "+
		"loopback to a throwaway PostgreSQL: p50-µs and p99-µs are from a change's commit on one replica to its frame "+
		"queued for a WebSocket client of another; changes/s are changes committed back to back and delivered to a "+
		"watching client, on SQLite and on PostgreSQL):",
		strings.Join(args, " "))
	b.r.code(strings.Join(lines, "\n"))
	return nil
}
