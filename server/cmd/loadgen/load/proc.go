package load

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// Proc is what sampling a process over a run saw.
type Proc struct {
	RSSMaxKiB  int64   `json:"rss_max_kib"` // highest VmRSS sampled
	RSSEndKiB  int64   `json:"rss_end_kib"`
	CPUSeconds float64 `json:"cpu_seconds"` // user+system time spent during the run
	ReadBytes  int64   `json:"read_bytes"`  // storage-layer bytes read during the run (/proc/PID/io)
	WriteBytes int64   `json:"write_bytes"` // storage-layer bytes written during the run
}

// Stat is one reading of a process's counters.
type Stat struct {
	RSSKiB     int64
	HWMKiB     int64 // the highest RSS the kernel saw since the process started (VmHWM)
	AnonKiB    int64 // of RSS: the heap and stacks
	FileKiB    int64 // of RSS: mapped file pages (the binary, the memory-mapped database)
	CPUSeconds float64
	ReadBytes  int64
	WriteBytes int64
	Threads    int64
}

// ReadStat reads the current counters of pid from /proc.
func ReadStat(pid int) (Stat, error) {
	var s Stat
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for line := range strings.Lines(string(status)) {
		k, v, _ := strings.Cut(line, ":")
		to := map[string]*int64{"VmRSS": &s.RSSKiB, "VmHWM": &s.HWMKiB, "RssAnon": &s.AnonKiB, "RssFile": &s.FileKiB,
			"Threads": &s.Threads}[k]
		if f := strings.Fields(v); to != nil && len(f) > 0 {
			*to, _ = strconv.ParseInt(f[0], 10, 64)
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// The command name may hold spaces: fields are counted after its closing parenthesis.
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(f) < 13 {
		return s, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	s.CPUSeconds = float64(utime+stime) / clockTicks
	// /proc/PID/io is readable only by the owner; its absence leaves the byte counts at 0.
	if io, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid)); err == nil {
		for line := range strings.Lines(string(io)) {
			k, v, _ := strings.Cut(strings.TrimSpace(line), ": ")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "read_bytes":
				s.ReadBytes = n
			case "write_bytes":
				s.WriteBytes = n
			}
		}
	}
	return s, nil
}

// Sampler reads a process's RSS periodically between Watch and Stop.
type Sampler struct {
	pid   int
	first Stat
	done  chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	max   int64
}

// Watch starts sampling pid every interval.
func Watch(pid int, every time.Duration) (*Sampler, error) {
	first, err := ReadStat(pid)
	if err != nil {
		return nil, err
	}
	p := &Sampler{pid: pid, first: first, done: make(chan struct{}), max: first.RSSKiB}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-p.done:
				return
			case <-t.C:
				if s, err := ReadStat(pid); err == nil {
					p.mu.Lock()
					p.max = max(p.max, s.RSSKiB)
					p.mu.Unlock()
				}
			}
		}
	}()
	return p, nil
}

// Stop ends the sampling and returns what changed since Watch.
func (p *Sampler) Stop() Proc {
	close(p.done)
	p.wg.Wait()
	last, err := ReadStat(p.pid)
	if err != nil {
		last = p.first
	}
	return Diff(p.first, last, max(p.max, last.RSSKiB))
}

// Diff is what happened between two readings; rssMax is the highest RSS seen between them.
func Diff(a, b Stat, rssMax int64) Proc {
	return Proc{RSSMaxKiB: rssMax, RSSEndKiB: b.RSSKiB, CPUSeconds: b.CPUSeconds - a.CPUSeconds,
		ReadBytes: b.ReadBytes - a.ReadBytes, WriteBytes: b.WriteBytes - a.WriteBytes}
}
