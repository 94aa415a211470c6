package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"conch/server/cmd/loadgen/load"
)

// recorded is one answer of Conch, kept to be served again byte for byte.
type recorded struct {
	header http.Header
	body   []byte
}

// serverHeaders are the ones every server sets for itself; the baseline's own net/http
// sets them.
var serverHeaders = []string{"Date", "Content-Length", "Connection", "Keep-Alive", "Transfer-Encoding", "Server"}

// record fetches each URL, as the load generator asks (no compression), and keeps its
// answer by path. Only loopback URLs and plain 200 answers are taken: a baseline serving
// an error page or a compressed body would not be the same answer.
func record(ctx context.Context, urls []string) (map[string]recorded, error) {
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	answers := make(map[string]recorded, len(urls))
	for _, raw := range urls {
		if err := load.Loopback(raw); err != nil {
			return nil, err
		}
		u, err := url.Parse(raw)
		if err != nil {
			return nil, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
		if err != nil {
			return nil, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case err != nil:
			return nil, fmt.Errorf("record %s: %w", raw, err)
		case resp.StatusCode != http.StatusOK:
			return nil, fmt.Errorf("record %s: %s, want 200 OK", raw, resp.Status)
		case resp.Header.Get("Content-Encoding") != "":
			return nil, fmt.Errorf("record %s: a %s body, want an uncompressed one", raw, resp.Header.Get("Content-Encoding"))
		}
		h := resp.Header.Clone()
		for _, name := range serverHeaders {
			h.Del(name)
		}
		answers[u.RequestURI()] = recorded{header: h, body: body}
	}
	return answers, nil
}

// baselineHandler answers each recorded path with its recorded headers and body, any
// other with 404: what a plain net/http server costs for the same answers.
func baselineHandler(answers map[string]recorded) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, ok := answers[r.URL.RequestURI()]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		for k, v := range a.header {
			h[k] = v
		}
		w.Write(a.body)
	})
}

// baseline is `bench baseline URL...`: it records Conch's answers to the URLs, then
// serves them on 127.0.0.1 (printing "listening on URL", as conch serve does) until ctx
// ends.
func baseline(ctx context.Context, urls []string, stdout io.Writer) error {
	if len(urls) == 0 {
		return errors.New("usage: bench baseline URL... (Conch's answers to record and serve again)")
	}
	answers, err := record(ctx, urls)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: baselineHandler(answers), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
