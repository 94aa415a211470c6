// Command loadgen drives concurrent keep-alive HTTP GETs against a server on loopback for
// a fixed duration or request count, and reports requests/s, p50/p99 latency, bytes and,
// with -pid, the server's RSS and CPU time read from /proc. By default each connection
// sends its next request when the answer to the last is in (a closed loop); with -rate it
// sends at fixed times whatever the answers do (an open loop), measures latency from
// each request's intended time and counts the sends that found every connection busy.
//
//	loadgen -c 16 -d 3s -pid 1234 http://127.0.0.1:8080/healthz
//	loadgen -c 64 -d 3s -rate 2000 http://127.0.0.1:8080/healthz
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"

	"conch/server/cmd/loadgen/load"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	conns := fs.Int("c", 1, "concurrent keep-alive connections")
	dur := fs.Duration("d", 0, "run for this long")
	n := fs.Int("n", 0, "stop after this many requests")
	pid := fs.Int("pid", 0, "server process to sample from /proc")
	rate := fs.Float64("rate", 0, "open loop: send this many requests per second at fixed times, on at most -c connections (0: closed loop)")
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	var headers headerFlag
	fs.Var(&headers, "H", "request header 'Name: value' (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: loadgen [-c N] [-d DURATION | -n COUNT] [-rate N] [-pid PID] [-json] [-H 'Name: value'] URL...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	urls := fs.Args()
	for _, u := range urls {
		if err := load.Loopback(u); err != nil {
			return err
		}
	}
	res, err := load.Run(context.Background(), load.Config{URLs: urls, Conns: *conns, Duration: *dur,
		Requests: *n, Header: http.Header(headers), PID: *pid, Rate: *rate})
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(os.Stdout).Encode(res)
	}
	fmt.Printf("%d requests in %.2fs (%d errors): %.0f req/s, p50 %.0f us, p99 %.0f us, max %.0f us, %d body bytes\n",
		res.Requests, res.Seconds, res.Errors, res.RPS, res.P50us, res.P99us, res.MaxUs, res.BodyBytes)
	if res.Rate > 0 {
		fmt.Printf("open loop at %.0f req/s: %d sends found every connection busy, %d of them never sent; latency counts from the intended send time\n",
			res.Rate, res.Missed, res.Unsent)
	}
	if p := res.Proc; p != nil {
		fmt.Printf("server: rss max %d KiB, end %d KiB, cpu %.2fs, wrote %d bytes\n", p.RSSMaxKiB, p.RSSEndKiB, p.CPUSeconds, p.WriteBytes)
	}
	return nil
}

type headerFlag http.Header

func (h *headerFlag) String() string { return "" }

func (h *headerFlag) Set(v string) error {
	name, value, ok := strings.Cut(v, ":")
	if !ok {
		return fmt.Errorf("header %q: want 'Name: value'", v)
	}
	if *h == nil {
		*h = headerFlag{}
	}
	http.Header(*h).Add(strings.TrimSpace(name), strings.TrimSpace(value))
	return nil
}
