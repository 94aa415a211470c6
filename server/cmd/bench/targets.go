package main

import (
	"fmt"
	"strings"
)

// targets are the figures issues 5, 12 and 20 and the sandbox's issue set goals for, filled by the benchmarks as they run.
type targets struct {
	listBytesPerShell   []float64 // projected list bytes per shell message, one per stdout size
	promptBytes         float64   // REST list bytes on the wire per prompt, a page of 20, brotli (issue 20)
	inlineRatio256List  float64   // inline / projected REST list bytes at 256 KiB (half text messages)
	inlineRatio256Shell float64   // the same per shell message
	snapshot256At16     dist      // requests/s, 256 KiB snapshot, 16 connections
	snapshot1KP99At16   dist      // p99 in microseconds, 1 KiB snapshot, 16 connections
	openLoopP99Ratios   []float64 // Conch's open-loop p99 over the net/http baseline's, 1 KiB snapshot, one per rate (issue 36)
	list50P99At16       dist      // p99 in microseconds, newest page of limit=50, 16 connections
	growthNewestRatio   string    // newest-page p50, largest session / smallest
	growthSizes         [2]int
	wasmBrotli          int64
	firstMessage        [2]dist  // ms from navigation to the newest message on screen: cold, warm
	tti                 [2]dist  // ms from navigation to a click's output open (issue 36): cold, warm
	manyLiveP99         []string // store → notice p99 with 200 live sessions, "database p99", one per database (issue 36)
	sandboxAdded        float64  // microseconds the sandbox adds to a command's start at the median, the worse network
	sandboxMeasured     bool
	runnerAdded         string // what a runner on loopback adds to a sandboxed command's start, median (issue 38)
	runnerPromptAdded   string // what a runner on loopback adds to a prompt's first output, p50 (issue 38)
	runnerDeath         string // a runner's death to its session answering again, each way, against the lease + an agent's start
	terminalP99         string // /healthz p99 while yes | head -c 1G runs in a terminal (issue 40)
}

// render writes where Conch stands against each target.
func (t targets) render(r *report) {
	r.h(2, "Targets")
	r.p("Where this run stands against the targets of issues 5 and 12 (details in the sections below).")
	na := "not measured"
	worst := 0.0
	for _, v := range t.listBytesPerShell {
		worst = max(worst, v)
	}
	worstOpen := 0.0
	for _, v := range t.openLoopP99Ratios {
		worstOpen = max(worstOpen, v)
	}
	rows := [][]string{
		{"list bytes per shell message, every stdout size", "<= 600 B", orNA(len(t.listBytesPerShell) > 0, fmt.Sprintf("%.0f B at most", worst), na)},
		{"list bytes on the wire per prompt, a page of 20, compressed", "<= 250 B", orNA(t.promptBytes > 0, fmt.Sprintf("%.0f B", t.promptBytes), na)},
		{"inline / projected list bytes at 256 KiB", ">= x300", orNA(t.inlineRatio256List > 0,
			fmt.Sprintf("x%.0f for the list (half of it text messages), x%.0f per shell message", t.inlineRatio256List, t.inlineRatio256Shell), na)},
		{"256 KiB snapshot at 16 connections", ">= 2,000 requests/s", orNA(len(t.snapshot256At16) > 0, t.snapshot256At16.format(count)+" requests/s", na)},
		{"1 KiB snapshot p99 at 16 connections", "<= 8 ms", orNA(len(t.snapshot1KP99At16) > 0, t.snapshot1KP99At16.format(micros), na)},
		{"1 KiB snapshot p99 in an open loop at 25/50/75% of the maximum rate, vs a net/http baseline", "within x1.2 at each rate",
			orNA(len(t.openLoopP99Ratios) > 0, fmt.Sprintf("x%.2f at worst", worstOpen), na)},
		{"limit=50 page p99 at 16 connections", "<= 35 ms", orNA(len(t.list50P99At16) > 0, t.list50P99At16.format(micros), na)},
		{fmt.Sprintf("newest-page list p50, %d vs %d messages", t.growthSizes[1], t.growthSizes[0]), "within x2",
			orNA(t.growthNewestRatio != "", t.growthNewestRatio, na)},
		{"newest message on screen, cold (fresh profile)", "<= 1.5 s", orNA(len(t.firstMessage[0]) > 0, t.firstMessage[0].format(millis), na)},
		{"newest message on screen, warm (app cached)", "<= 500 ms", orNA(len(t.firstMessage[1]) > 0, t.firstMessage[1].format(millis), na)},
		{"click answered, cold (fresh profile)", "< 3 s", orNA(len(t.tti[0]) > 0, t.tti[0].format(millis), na)},
		{"click answered, warm (app cached)", "< 1 s", orNA(len(t.tti[1]) > 0, t.tti[1].format(millis), na)},
		{"store → notice p99, 200 sessions printing 10 lines/s, 20 sockets watching", "< 50 ms",
			orNA(len(t.manyLiveP99) > 0, strings.Join(t.manyLiveP99, ", "), na)},
		{"time the sandbox adds to a command's start, median", "< 10 ms", orNA(t.sandboxMeasured, msFromMicros(t.sandboxAdded), na)},
		{"time a runner on loopback adds to a command's start, median", "< 5 ms", orNA(t.runnerAdded != "", t.runnerAdded, na)},
		{"prompt to first output: added by a runner on loopback, p50", "< 5 ms", orNA(t.runnerPromptAdded != "", t.runnerPromptAdded, na)},
		{"a runner's death to its session answering again", "< one lease + the agent's start", orNA(t.runnerDeath != "", t.runnerDeath, na)},
		{`/healthz p99 while "yes \| head -c 1G" runs in a terminal`, "< 20 ms", orNA(t.terminalP99 != "", t.terminalP99, na)},
		{"app.wasm, brotli", "<= 1.30 MB", orNA(t.wasmBrotli > 0, fmt.Sprintf("%.2f MB", float64(t.wasmBrotli)/1e6), na)},
	}
	r.table([]string{"target", "goal", "this run"}, rows)
}

func orNA(ok bool, v, na string) string {
	if ok {
		return v
	}
	return na
}
