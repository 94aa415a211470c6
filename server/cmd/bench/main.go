// Command bench runs Conch's benchmarks against the real bin/conch on loopback and writes
// docs/BENCHMARKS.md (`make bench`). Nothing here passes or fails: it measures. Timings are
// given as median (min-max) over repeated runs and, where a baseline exists, as a ratio to
// a baseline measured in the same run.
package main

import (
	"context"
	"debug/buildinfo"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"conch/server/acp/acptest"
	"conch/server/cmd/loadgen/load"
)

type bench struct {
	conchBin   string
	compareBin string // an older conch the openloop step also measures, "" for none
	loadgenBin string
	runs       int
	dur        time.Duration
	trickle    time.Duration
	manyLive   time.Duration // how long each command of the many-live benchmark prints
	burstBytes int
	growth     []int
	browser    bool
	web        string // the folder holding app.wasm and its compressed copies
	postgres   string // a PostgreSQL server URL, "" to start a throwaway cluster
	tmp        string
	emitter    string // a copy of this program in tmp, which live commands run (`bench emit`; copySelf)
	head, r    report // the header, then the sections
	goals      targets
	notes      []string // problems met while measuring, listed at the end

	searchOutputMB int    // the command output, in MiB, the search benchmark stores
	searchOn       string // the databases the search benchmark measures, comma-separated
	searchKeep     string // a folder that keeps the search benchmark's SQLite database between runs, "" for none
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "emit" {
		return emit(ctx, args[1:], os.Stdout)
	}
	if len(args) > 0 && args[0] == "baseline" {
		return baseline(ctx, args[1:], os.Stdout)
	}
	if len(args) > 0 && args[0] == "agent" {
		return acptest.ServeHostile(ctx)
	}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	b := &bench{}
	fs.StringVar(&b.conchBin, "conch", "bin/conch", "the conch binary to measure")
	fs.StringVar(&b.loadgenBin, "loadgen", "bin/loadgen", "the load generator binary")
	fs.StringVar(&b.compareBin, "compare", "", "an older conch binary that the openloop benchmark also measures, at the same rates (before and after)")
	out := fs.String("out", "docs/BENCHMARKS.md", "where to write the report")
	fs.IntVar(&b.runs, "runs", 3, "repetitions of each timed run")
	fs.DurationVar(&b.dur, "d", 1500*time.Millisecond, "length of each load run")
	fs.DurationVar(&b.trickle, "trickle", 60*time.Second, "length of the line-every-10ms command")
	fs.DurationVar(&b.manyLive, "manylive-d", 20*time.Second, "how long each command of the many-live benchmark prints")
	burstMB := fs.Int("burst-mb", 50, "output of the fast command, MB")
	fs.IntVar(&b.searchOutputMB, "search-output-mb", 1024, "command output the search benchmark stores, MiB")
	fs.StringVar(&b.searchOn, "search-backends", "sqlite,postgresql", "databases the search benchmark measures (comma-separated: sqlite, postgresql)")
	fs.StringVar(&b.searchKeep, "search-keep", "", "a folder where the search benchmark keeps its SQLite database, seeded once and searched again by later runs (one file per -search-output-mb)")
	growth := fs.String("growth", "1000,10000,100000", "session sizes of the growth benchmark")
	fs.BoolVar(&b.browser, "browser", true, "run the headless Chromium benchmark")
	only := fs.String("only", "", "run only these benchmarks (comma-separated: payload,prompts,snapshot,openloop,growth,parts,live,crowd,manylive,startup,browser,tti,gobench,postgres,hostile,idle,changes,attempts,search,sandbox,runners,terminal)")
	fs.StringVar(&b.postgres, "postgres", os.Getenv("CONCH_BENCH_POSTGRES"),
		"PostgreSQL server URL whose user may create databases, for the SQLite-against-PostgreSQL benchmark (env CONCH_BENCH_POSTGRES; default: a throwaway cluster from Debian's postgresql package)")
	fs.StringVar(&b.web, "web", "web", "the folder holding app.wasm, app.wasm.gz and app.wasm.br")
	if err := fs.Parse(args); err != nil {
		return err
	}
	b.burstBytes = *burstMB * 1000 * 1000
	for _, f := range strings.Split(*growth, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2 {
			return fmt.Errorf("-growth: %q is not a session size", f)
		}
		b.growth = append(b.growth, n)
	}
	for _, bin := range []string{b.conchBin, b.loadgenBin, b.compareBin} {
		if _, err := os.Stat(bin); bin != "" && err != nil {
			return fmt.Errorf("%w (run make build first, or make bench)", err)
		}
	}
	tmp, err := os.MkdirTemp("", "conch-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	b.tmp = tmp
	if b.emitter, err = copySelf(tmp); err != nil {
		return err
	}

	started := time.Now()
	b.header(args)
	type section struct {
		name string
		fn   func(context.Context) error
	}
	sections := []section{
		{"payload", b.payload},
		{"prompts", b.prompts},
		{"snapshot", b.snapshot},
		{"openloop", b.openLoop},
		{"growth", b.growthBench},
		{"parts", b.parts},
		{"live", b.live},
		{"crowd", b.crowd},
		{"startup", b.startup},
		{"browser", b.browserBench},
		{"tti", b.tti},
		{"gobench", b.goBench},
		{"postgres", b.postgresBench},
		{"hostile", b.hostile},
		{"idle", b.idle},
		{"changes", b.changes},
		{"attempts", b.attempts},
		{"search", b.searchBench},
		{"sandbox", b.sandboxBench},
		{"runners", b.runnersBench},
		{"manylive", b.manyLiveBench},
		{"terminal", b.terminalBench},
	}
	var chosen []string
	if *only != "" {
		chosen = strings.Split(*only, ",")
	}
	for _, name := range chosen {
		if !slices.ContainsFunc(sections, func(s section) bool { return s.name == name }) {
			return fmt.Errorf("-only: no benchmark is called %q", name)
		}
	}
	for _, s := range sections {
		if chosen != nil && !slices.Contains(chosen, s.name) {
			continue
		}
		t := time.Now()
		progress("== %s", s.name)
		if err := s.fn(ctx); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			b.r.p("**Not measured:** %s", err)
			b.notes = append(b.notes, fmt.Sprintf("%s: %v", s.name, err))
		}
		progress("   %s took %s", s.name, time.Since(t).Round(time.Second))
	}
	b.r.h(2, "Run")
	b.r.p("The whole run took %s; the load average at the end was %s. Other work on the machine during the run "+
		"shows as spread and moves every timing; byte counts do not move.", time.Since(started).Round(time.Second), loadAverage())
	b.goals.render(&b.head)
	if err := os.WriteFile(*out, []byte(b.head.String()+b.r.String()), 0o644); err != nil {
		return err
	}
	progress("wrote %s in %s", *out, time.Since(started).Round(time.Second))
	if len(b.notes) > 0 {
		return fmt.Errorf("some benchmarks did not run:\n  %s", strings.Join(b.notes, "\n  "))
	}
	return nil
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}

// header describes the machine and the command, so that figures can be compared.
func (b *bench) header(args []string) {
	b.head.b.WriteString("# Conch benchmarks\n\n")
	b.head.p("Generated by `make bench` (`%s`) on %s. Do not edit by hand: run `make bench` again.",
		strings.Join(append([]string{os.Args[0]}, args...), " "), time.Now().UTC().Format("2006-01-02 15:04 MST"))
	b.head.p("Figures are the median over %d runs with the spread (min-max) in parentheses; ratios compare medians "+
		"with a baseline measured in the same run. Everything runs on 127.0.0.1: the server is the real `%s` "+
		"with a temporary SQLite database, the load comes from `%s` in a second process.", b.runs, b.conchBin, b.loadgenBin)
	goVersion := runtime.Version()
	if info, err := buildinfo.ReadFile(b.conchBin); err == nil {
		goVersion = info.GoVersion
	}
	rev := "unknown"
	if out, err := exec.Command("git", "describe", "--always", "--dirty").Output(); err == nil {
		rev = strings.TrimSpace(string(out))
	}
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	b.head.table([]string{"Machine", ""}, [][]string{
		{"CPU", cpuModel()},
		{"Cores (nproc)", strconv.Itoa(runtime.NumCPU())},
		{"Memory", memTotal()},
		{"Kernel", strings.TrimSpace(string(kernel))},
		{"Go (bin/conch)", goVersion},
		{"Commit", rev},
		{"Load average at the start (1, 5, 15 min)", loadAverage()},
	})
}

func loadAverage() string {
	raw, _ := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(raw)); len(f) >= 3 {
		return strings.Join(f[:3], ", ")
	}
	return "unknown"
}

func cpuModel() string {
	raw, _ := os.ReadFile("/proc/cpuinfo")
	for line := range strings.Lines(string(raw)) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func memTotal() string {
	raw, _ := os.ReadFile("/proc/meminfo")
	for line := range strings.Lines(string(raw)) {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kib, _ := strconv.ParseFloat(strings.Fields(v)[0], 64)
			return fmt.Sprintf("%.1f GiB", kib/(1<<20))
		}
	}
	return "unknown"
}

// load runs the load generator in its own process against urls on c connections for the
// run's duration.
func (b *bench) load(ctx context.Context, srv *conch, conns int, urls ...string) (load.Result, error) {
	return b.loadFor(ctx, srv, b.dur, conns, urls...)
}

// loadFor is load for a duration d. A run with failed requests answers its figures and
// an error.
func (b *bench) loadFor(ctx context.Context, srv *conch, d time.Duration, conns int, urls ...string) (load.Result, error) {
	return b.loadgen(ctx, srv, []string{"-c", strconv.Itoa(conns), "-d", d.String()}, urls)
}

// loadgen runs the load generator with args against urls of srv, sampling srv.
func (b *bench) loadgen(ctx context.Context, srv *conch, args, urls []string) (load.Result, error) {
	args = append([]string{"-json", "-pid", strconv.Itoa(srv.PID)}, args...)
	out, err := exec.CommandContext(ctx, b.loadgenBin, append(args, urls...)...).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return load.Result{}, fmt.Errorf("loadgen: %v: %s", err, ee.Stderr)
		}
		return load.Result{}, err
	}
	var res load.Result
	if err := json.Unmarshal(out, &res); err != nil {
		return load.Result{}, fmt.Errorf("loadgen output: %w", err)
	}
	if res.Errors > 0 {
		return res, fmt.Errorf("loadgen: %d of %d requests failed", res.Errors, res.Errors+res.Requests)
	}
	return res, nil
}

// loadRuns repeats a load run b.runs times and gathers its figures.
type loadFigures struct{ rps, p50, p99, rss, cpu, reqs, bytes dist }

// cpuPerRequest is the server's CPU time per request, in microseconds.
func (f loadFigures) cpuPerRequest() dist {
	d := make(dist, len(f.cpu))
	for i := range f.cpu {
		d[i] = f.cpu[i] * 1e6 / max(f.reqs[i], 1)
	}
	return d
}

func (b *bench) loadRuns(ctx context.Context, srv *conch, conns int, urls ...string) (loadFigures, error) {
	var f loadFigures
	for range b.runs {
		res, err := b.load(ctx, srv, conns, urls...)
		if err != nil {
			return f, err
		}
		f.add(res)
	}
	return f, nil
}

func (f *loadFigures) add(res load.Result) {
	f.rps = append(f.rps, res.RPS)
	f.p50 = append(f.p50, res.P50us)
	f.p99 = append(f.p99, res.P99us)
	f.reqs = append(f.reqs, float64(res.Requests))
	f.bytes = append(f.bytes, float64(res.BodyBytes)/float64(max(res.Requests, 1)))
	if res.Proc != nil {
		f.rss = append(f.rss, float64(res.Proc.RSSMaxKiB)*1024)
		f.cpu = append(f.cpu, res.Proc.CPUSeconds)
	}
}

// copySelf copies this program into dir, for the live steps' commands to run as `bench
// emit`: the built-in agent's sandbox runs only the system's programs and what is under its
// session's folder (the temporary folder here), not a bench binary in a checkout elsewhere.
func copySelf(dir string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	in, err := os.Open(self)
	if err != nil {
		return "", err
	}
	defer in.Close()
	path := filepath.Join(dir, "bench")
	out, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return "", err
	}
	return path, out.Close()
}
