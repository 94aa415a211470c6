// Command conch serves the Conch API, WebSocket and PWA (`conch serve`) and runs the
// built-in shell agent over stdio (`conch agent shell`). This file is wiring only.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"conch/app/ui"
	"conch/server/acp"
	"conch/server/api"
	"conch/server/hub"
	"conch/server/shellagent"
	"conch/server/store"
	"conch/web"
)

const usage = `usage:
  conch serve [--addr 127.0.0.1:8080] [--db PATH] [--agents FILE] [--token TOKEN]
  conch agent shell [--ask]
                         the built-in shell agent, spoken to over stdio (ACP); with
                         --ask it asks permission (Allow / Deny) before each command
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "conch:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	switch {
	case len(args) >= 1 && args[0] == "serve":
		return serve(ctx, args[1:], stdout, stderr)
	case len(args) == 2 && args[0] == "agent" && args[1] == "shell":
		return shellagent.Run(ctx, stdin, stdout)
	case len(args) == 3 && args[0] == "agent" && args[1] == "shell" && args[2] == "--ask":
		return shellagent.RunAsking(ctx, stdin, stdout)
	default:
		fmt.Fprint(stderr, usage)
		return errors.New("unknown command")
	}
}

func env(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

func defaultDB() string {
	if dir, err := os.UserHomeDir(); err == nil {
		return filepath.Join(dir, ".local", "share", "conch", "conch.db")
	}
	return "conch.db"
}

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	flags := flag.NewFlagSet("serve", flag.ContinueOnError)
	flags.SetOutput(stderr)
	addr := flags.String("addr", env("CONCH_ADDR", "127.0.0.1:8080"), "listen address (env CONCH_ADDR)")
	dbPath := flags.String("db", env("CONCH_DB", defaultDB()), "SQLite database file (env CONCH_DB)")
	agents := flags.String("agents", env("CONCH_AGENTS", ""), "JSON file of extra agent profiles (env CONCH_AGENTS)")
	token := flags.String("token", env("CONCH_TOKEN", ""), "bearer token required by every API and WebSocket request (env CONCH_TOKEN)")
	if err := flags.Parse(args); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	if *token == "" && !isLoopback(*addr) {
		return fmt.Errorf("--addr %s is not a loopback address: set --token (or CONCH_TOKEN) to serve on it", *addr)
	}
	profiles, err := acp.LoadProfiles(*agents)
	if err != nil {
		return err
	}
	st, err := store.Open(*dbPath, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.RecoverAfterRestart(ctx); err != nil {
		return err
	}
	events := hub.New(hub.Config{Logger: log})
	runtime, err := acp.NewManager(acp.Config{Store: st, Events: events, Profiles: profiles,
		DataDir: filepath.Dir(*dbPath), Logger: log})
	if err != nil {
		return err
	}
	defer runtime.Close()

	ui.Routes()
	wasm, _ := fs.ReadFile(web.FS, "app.wasm") // absent before the UI is built: the server still serves the API
	server := api.New(api.Config{Store: st, Hub: events, Runtime: runtime, UI: ui.Handler(wasm),
		Web: web.FS, Token: *token, Logger: log})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	// Tests and scripts read the bound address (with --addr 127.0.0.1:0) from this line.
	fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr())
	log.Info("serving", "addr", ln.Addr().String(), "db", *dbPath, "agents", len(profiles))
	served := make(chan error, 1)
	go func() { served <- server.Listener(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	// fasthttp's shutdown neither waits for nor closes WebSockets: close them first (1001).
	events.Close()
	if err := server.ShutdownWithTimeout(10 * time.Second); err != nil {
		log.Warn("shutdown", "err", err)
	}
	return nil
}

// isLoopback reports whether addr only listens on the loopback interface.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
