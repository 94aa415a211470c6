package acp

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"conch/shared"
)

// BenchmarkCommandStart times a command from its start to its exit, as an agent's
// terminal/create runs it: `true` under ns-init in a PID and user namespace, unconfined (a
// server run with --no-sandbox), sandboxed with network all (Landlock), and sandboxed with
// network none (Landlock and a network namespace), and on a runner (Remote over yamux on
// loopback, served by ServeMachine with a sandbox of network all). The machine builds
// the box for each command from its Work, as a session's are; what the first sandbox of
// a server pays once (sandboxReady's probe, the /etc walk) is paid before the timer starts. Besides ns/op (the mean) it reports the median and p90.
// ns-init is this test binary (TestMain), or the conch binary CONCH_BENCH_INIT names
// (make bench passes bin/conch).
//
//	go test ./server/acp/ -run '^$' -bench CommandStart -benchtime 200x
func BenchmarkCommandStart(b *testing.B) {
	exe := os.Getenv("CONCH_BENCH_INIT")
	if exe == "" {
		exe = testExe(b)
	}
	if isolate(exe) == nil {
		b.Skip("the kernel makes no PID namespace here")
	}
	if err := sandboxReady(exe); err != nil {
		b.Skip(err)
	}
	for _, c := range []struct {
		name    string
		network string // "": unconfined
		runner  bool
	}{{"unconfined", "", false}, {"network=all", shared.NetworkAll, false}, {"network=none", shared.NetworkNone, false},
		{"runner,network=all", shared.NetworkAll, true}} {
		b.Run(c.name, func(b *testing.B) {
			dir := b.TempDir()
			mach := Local(LocalConfig{DataDir: b.TempDir(), Executable: exe, NoSandbox: c.network == ""})
			if c.runner {
				mach = newTestRunner(b).mach
			}
			w := Work{Session: "bench", Dir: dir, Profile: Profile{Sandbox: SandboxConfig{Network: Network{Policy: c.network}}}}
			took := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				began := time.Now()
				term, err := startTerminal(context.Background(), "t", "true", nil, nil, dir, nil, mach, w, realClock, func(bool) {})
				if err != nil {
					b.Fatal(err)
				}
				st, err := term.waitExit(context.Background())
				took = append(took, time.Since(began))
				if err != nil || st.Code == nil || *st.Code != 0 {
					b.Fatalf("true ended with %+v (%v)", st, err)
				}
			}
			b.StopTimer()
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(took[len(took)*9/10].Microseconds()), "p90-µs")
		})
	}
}
