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
var goBenchPackages = []string{"./server/api"}

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
	b.r.p("The benchmarks their owners keep beside the code, run in process without a network (`go %s`):",
		strings.Join(args, " "))
	b.r.code(strings.Join(lines, "\n"))
	return nil
}
