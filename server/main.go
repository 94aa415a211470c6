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
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"conch/app/cli"
	"conch/app/ui"
	"conch/server/acp"
	"conch/server/api"
	"conch/server/gcfloor"
	"conch/server/hub"
	"conch/server/push"
	"conch/server/replica"
	"conch/server/runner"
	"conch/server/shellagent"
	"conch/server/store"
	"conch/server/task"
	"conch/shared"
	"conch/web"
)

// The commands main runs itself; cli.Commands follow them in the usage. (`conch ns-init`,
// the first process of a command's PID namespace, is internal and not listed.)
var (
	serveCommand = cli.Command{Name: "serve", Args: "[flags]",
		Summary: "serve the API, the WebSocket and the browser UI, and run the sessions' agents"}
	agentCommand = cli.Command{Name: "agent", Args: "shell [--ask]",
		Summary: "the built-in shell agent, which the server speaks to over stdio (ACP); with --ask\n" +
			"it asks permission (Allow / Deny) before each command"}
	pruneCommand = cli.Command{Name: "prune", Args: "[--db PATH] --older-than 720h",
		Summary: "delete the tasks idle for that long, with all they hold, straight from the database"}
	runnerCommand = cli.Command{Name: "runner", Args: "--server URL [flags]",
		Summary: "run sessions' agents for a server on this machine: it dials out to the server (no\n" +
			"listening port) with a runner token (env CONCH_RUNNER_TOKEN, or --token-file)"}
	commands = slices.Concat([]cli.Command{serveCommand, agentCommand, pruneCommand, runnerCommand}, cli.Commands)
)

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: conch COMMAND [ARGS]")
	cli.Usage(w, commands)
	fmt.Fprintln(w, "conch help COMMAND (or conch COMMAND -h) adds the command's flags.")
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first signal asks for a clean end (a server's shutdown, conch run's cancel); the
	// default behaviour comes back for the next, so a second one always ends the process.
	go func() {
		<-ctx.Done()
		stop()
	}()
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	var status cli.ExitStatus
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp): // help was asked for, and printed
	case errors.As(err, &status):
		os.Exit(int(status)) // the command's own status; it said what happened
	default:
		fmt.Fprintln(os.Stderr, "conch:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	name := ""
	if len(args) > 0 {
		name = args[0]
	}
	switch {
	case name == "help" && len(args) == 2 && listed(args[1]):
		return run(ctx, []string{args[1], "-h"}, stdin, stdout, stderr)
	case name == "help" && len(args) == 1, name == "-h", name == "-help", name == "--help":
		usage(stdout)
		return nil
	case name == "serve":
		return serve(ctx, args[1:], stdout, stderr)
	case name == "agent":
		return agent(ctx, args[1:], stdin, stdout, stderr)
	case name == "prune":
		return prune(ctx, args[1:], stdout, stderr)
	case name == "runner":
		return runRunner(ctx, args[1:], stdout, stderr)
	case listed(name):
		return cli.Run(ctx, args, stdout, stderr)
	case name == acp.NamespaceInitArg:
		os.Exit(acp.RunNamespaceInit(args[1:]))
		return nil
	case name == "":
		usage(stderr)
		return errors.New("give a command")
	default:
		usage(stderr)
		return fmt.Errorf("unknown command %q", strings.Join(args, " "))
	}
}

func listed(name string) bool {
	return slices.ContainsFunc(commands, func(c cli.Command) bool { return c.Name == name })
}

// agent runs a built-in agent over stdio: conch agent shell [--ask].
func agent(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	flags := agentCommand.Flags(stdout, stderr)
	ask := flags.Bool("ask", false, "ask permission (Allow / Deny) before each command")
	if err := flags.Parse(args); err != nil { // conch agent -h
		return err
	}
	if flags.Arg(0) != acp.ShellAgent {
		return flags.Fail("the built-in agent is %s", acp.ShellAgent)
	}
	if err := flags.Parse(flags.Args()[1:]); err != nil { // its flags follow its name
		return err
	}
	if flags.NArg() != 0 {
		return flags.Fail("unexpected %q", flags.Args())
	}
	shellagent.Version = ui.Version
	if *ask {
		return shellagent.RunAsking(ctx, stdin, stdout)
	}
	return shellagent.Run(ctx, stdin, stdout)
}

func env(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

// defaultAgentIdle is how long an agent with nothing to do keeps running: each one holds
// tens of MiB (docs/BENCHMARKS.md, idle agents), and a person who comes back after that
// waits only for a new agent's start.
const defaultAgentIdle = 15 * time.Minute

// defaultDrain is how long a stopping server lets running turns finish: most turns of a
// coding agent end within a minute, and orchestrators wait about that long (Kubernetes'
// default grace is 30 s: give it --drain's time and more).
const defaultDrain = 60 * time.Second

// envDuration reads a duration from the environment variable name, def when unset.
func envDuration(name string, def time.Duration) (time.Duration, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s=%q is not a duration such as 15s", name, v)
	}
	return d, nil
}

// envBytes reads a byte count from the environment variable name, 0 when unset.
func envBytes(name string) (int64, error) {
	v := os.Getenv(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s=%q is not a number of bytes such as 10737418240", name, v)
	}
	return n, nil
}

func defaultDB() string {
	if dir, err := os.UserHomeDir(); err == nil {
		return filepath.Join(dir, ".local", "share", "conch", "conch.db")
	}
	return "conch.db"
}

// heapFloor is the smallest heap goal of the garbage collector while serving: at 32 MiB
// it collects once every 95 list pages instead of every 4 with Go's 4 MiB, for about
// 30 MiB more RSS under load (docs/PERFORMANCE.md).
const heapFloor = 32 << 20

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseServe(args, stdout, stderr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	// Agents and their commands run as this user: they must not read this process's
	// memory or environment, where the token is (server/acp/nsinit.go says what holds
	// where). Its command line stays readable by every process of the host.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		log.Warn("the server stays dumpable: a process of its user may read its memory and environment", "err", err)
	}
	if cfg.tokenFlag {
		log.Warn("--token is readable by every process of this host in /proc/PID/cmdline: set CONCH_TOKEN instead")
	}
	// A second server on the same SQLite file, or on a port in use, stops here, before it
	// touches the database or an agent: joining would take the first one's sessions over
	// (store.Lock). The lock comes first so that the same port is refused with the clearer
	// message; the Fiber app serves on this listener once all is ready.
	unlock, err := store.Lock(cfg.db)
	if err != nil {
		return err
	}
	defer unlock()
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	defer ln.Close() // on a failed start; serving closes it otherwise
	profiles, err := acp.LoadProfiles(cfg.agents)
	if err != nil {
		return err
	}
	// Sessions get working directories beside the database file (in the default data
	// directory with a database URL); agents run in them from other directories than
	// ours, so the path must not be relative.
	dataDir := filepath.Dir(defaultDB())
	if !store.IsURL(cfg.db) {
		dataDir = filepath.Dir(cfg.db)
	}
	if dataDir, err = filepath.Abs(dataDir); err != nil {
		return err
	}
	st, err := store.Open(cfg.db, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.LimitStorage(ctx, cfg.maxStorage); err != nil {
		return err
	}
	if used, limit := st.StoredBytes(); limit > 0 {
		log.Info("storage limit", "max_bytes", limit, "stored_bytes", used)
	}
	events := hub.New(hub.Config{Logger: log, Task: st.TaskSummary})
	// This process among the servers of the database: it ends what no live server runs
	// (on SQLite, everything a previous process left live) before serving.
	self, err := replica.New(replica.Config{Store: st, Hub: events, Lease: cfg.lease, Logger: log})
	if err != nil {
		return err
	}
	if err := self.Join(ctx); err != nil {
		return err
	}
	defer self.Close()
	// Web Push listens to what this server's agents publish: it sends once per event, from
	// the server that runs the session.
	pushTo := push.Endpoints{AllowPrivate: cfg.pushAllowPrivate}
	if cfg.pushAllowPrivate {
		log.Warn("--push-allow-private: push subscriptions may name http URLs and loopback or private addresses, which this server then sends requests to; for test setups only")
	}
	notifier, err := push.New(ctx, push.Config{Store: st, Contact: cfg.pushContact, Logger: log, Endpoints: pushTo})
	if err != nil {
		return err
	}
	notifier.Start()
	defer notifier.Close()
	// The runners connected to this server (conch runner), where sessions may be placed.
	var runtime *acp.Manager
	runners := runner.New(runner.Config{Store: st, Logger: log, Heartbeat: cfg.runnerHeartbeat, Joined: func() { runtime.RunnerJoined() }})
	runtime, err = acp.NewManager(acp.Config{Store: st, Events: notifier.Watch(self.Events()), Profiles: profiles,
		DataDir: dataDir, Logger: log, AgentIdle: cfg.idle, StartTimeout: cfg.agentStart, Version: ui.Version, ReplayQuiet: acp.DefaultReplayQuiet,
		NoSandbox: cfg.noSandbox, Place: runners.Machine, Runner: runners.Runner})
	if err != nil {
		return err
	}
	sandbox, _ := sandboxState(cfg.noSandbox, stderr, log) // a server without one still serves what is stored, and says why in /healthz
	self.Start(runtime)

	ui.Routes()
	wasm, _ := fs.ReadFile(web.FS, "app.wasm") // absent before the UI is built: the server still serves the API
	server := api.New(api.Config{Store: st, Hub: events, Events: self.Events(), Runtime: self, UI: func(boot func(string) (shared.Boot, error)) http.Handler {
		return ui.Handler(wasm, cfg.token != "", boot)
	},
		Web: web.FS, Token: cfg.token, TrustedProxies: cfg.trusted, Logger: log, FromAgent: acp.FromAgent, OIDC: cfg.oidc,
		PushKey: notifier.PublicKey(), PushEndpoints: pushTo, Sandbox: sandbox, Runners: runners,
		Consoles: func(sessionID, login string, mayEdit bool) (task.ConsoleView, error) {
			v, err := runtime.Console(sessionID, login, mayEdit)
			if err != nil {
				return nil, err // not a nil *ConsoleView in an interface
			}
			return v, nil
		}})
	// After start-up, so that it does not grow the heap of start-up itself. A GOGC set by
	// hand wins.
	if os.Getenv("GOGC") == "" {
		defer gcfloor.Keep(heapFloor)()
	}
	// Tests and scripts read the bound address (with --addr 127.0.0.1:0) from this line.
	fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr())
	log.Info("serving", "addr", ln.Addr().String(), "db", store.Redact(cfg.db), "agents", len(profiles))
	if cfg.token != "" {
		if err := printSetupLink(ctx, stdout, st, ln.Addr().String()); err != nil {
			return err
		}
	}
	served := make(chan error, 1)
	go func() { served <- server.Listener(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	// New prompts are refused (503 draining, and /healthz says so: a balancer sends them
	// to another server) while the running turns finish.
	log.Info("draining", "for", cfg.drain)
	began := time.Now()
	left := self.Drain(cfg.drain)
	log.Info("shutting down", "drained_in", time.Since(began).Round(time.Millisecond), "turns_cancelled", left)
	// fasthttp's shutdown neither waits for nor closes WebSockets: close them first (1001).
	events.Close()
	// Agents stop before the HTTP server drains (self.Close stops them again, a no-op), so
	// no request waiting for an agent's answer (a mode switch) holds the drain up.
	runtime.Close()
	if err := server.ShutdownWithTimeout(10 * time.Second); err != nil {
		log.Warn("shutdown", "err", err)
	}
	return nil
}

// sandboxState finds how agents are confined here, says it in the log (loudly when they
// are not) and returns it for /healthz, with the error that makes it unavailable (no
// agent can start then).
func sandboxState(off bool, stderr io.Writer, log *slog.Logger) (string, error) {
	if off {
		const warning = "--no-sandbox: agents and their commands run unconfined, and can read and change everything this server's user can: the database, every task's files, the user's home"
		fmt.Fprintln(stderr, "WARNING:", warning)
		log.Warn(warning)
		return "off (--no-sandbox)", nil
	}
	exe, err := os.Executable()
	if err == nil {
		var state string
		if state, err = acp.SandboxState(exe); err == nil {
			log.Info("agents run sandboxed", "sandbox", state)
			return state, nil
		}
	}
	log.Error("no agent can start", "err", err)
	return "unavailable: " + err.Error(), err
}

// serveConfig is what `conch serve` was asked for, by its flags and environment, checked.
type serveConfig struct {
	addr, db, agents, token string
	lease, idle, drain      time.Duration
	agentStart              time.Duration // how long an agent may take to start (acp.Config.StartTimeout)
	runnerHeartbeat         time.Duration // how often runners are pinged: silent for two, one is gone
	trusted                 []netip.Prefix
	tokenFlag               bool      // the token came as --token, on the command line
	oidc                    *api.OIDC // single sign-on, when an issuer is named
	pushContact             string    // VAPID's subject (server/push)
	pushAllowPrivate        bool      // push endpoints may be http and non-public (push.Endpoints)
	noSandbox               bool      // agents run unconfined
	maxStorage              int64     // bytes of output and files stored; 0: no limit
}

// parseServe reads and checks serve's flags and environment; it opens and starts nothing.
func parseServe(args []string, stdout, stderr io.Writer) (serveConfig, error) {
	flags := serveCommand.Flags(stdout, stderr)
	addr := flags.String("addr", env("CONCH_ADDR", "127.0.0.1:8080"), "listen address (env CONCH_ADDR)")
	dbPath := flags.String("db", env("CONCH_DB", defaultDB()), "SQLite database file, or postgres:// URL (env CONCH_DB)")
	agents := flags.String("agents", env("CONCH_AGENTS", ""), "JSON file of extra agent profiles (env CONCH_AGENTS)")
	token := flags.String("token", env("CONCH_TOKEN", ""), "bearer token required by every API and WebSocket request (env CONCH_TOKEN; prefer it: a command line is readable by every process of the host)")
	lease, err := envDuration("CONCH_LEASE", replica.DefaultLease)
	if err != nil {
		return serveConfig{}, err
	}
	flags.DurationVar(&lease, "lease", lease,
		"with several servers on one PostgreSQL database, how long the sessions of a server that stopped answering stay live before another server closes them (env CONCH_LEASE)")
	idle, err := envDuration("CONCH_AGENT_IDLE", defaultAgentIdle)
	if err != nil {
		return serveConfig{}, err
	}
	flags.DurationVar(&idle, "agent-idle", idle,
		"stop an agent that has had nothing to do for this long; its session stays and the next prompt starts a new agent; 0 never stops one (env CONCH_AGENT_IDLE)")
	agentStart, err := envDuration("CONCH_AGENT_START", acp.DefaultStartTimeout)
	if err != nil {
		return serveConfig{}, err
	}
	flags.DurationVar(&agentStart, "agent-start", agentStart,
		"how long an agent may take to start and answer initialize and session/new before its session fails; a large agent on a busy machine may need more (env CONCH_AGENT_START)")
	drain, err := envDuration("CONCH_DRAIN", defaultDrain)
	if err != nil {
		return serveConfig{}, err
	}
	flags.DurationVar(&drain, "drain", drain,
		"on SIGTERM, how long running turns may take to finish while no new ones start; then they are cancelled, and sessions of agents that can resume stay resumable (env CONCH_DRAIN)")
	heartbeat, err := envDuration("CONCH_RUNNER_HEARTBEAT", runner.DefaultHeartbeat)
	if err != nil {
		return serveConfig{}, err
	}
	flags.DurationVar(&heartbeat, "runner-heartbeat", heartbeat,
		"how often this server pings each runner; a runner silent for two heartbeats is gone, and its sessions move to another runner (env CONCH_RUNNER_HEARTBEAT)")
	issuer := flags.String("oidc-issuer", env("CONCH_OIDC_ISSUER", ""), "OpenID Connect issuer URL people may sign in through, with --token (env CONCH_OIDC_ISSUER)")
	clientID := flags.String("oidc-client-id", env("CONCH_OIDC_CLIENT_ID", ""), "this server's client id at the issuer; its secret comes from env CONCH_OIDC_CLIENT_SECRET (env CONCH_OIDC_CLIENT_ID)")
	groups := flags.String("oidc-groups", env("CONCH_OIDC_GROUPS", ""), "the issuer's groups and the roles they give, e.g. conch-admins=admin,developers=member (env CONCH_OIDC_GROUPS)")
	defaultRole := flags.String("oidc-default-role", env("CONCH_OIDC_DEFAULT_ROLE", ""), "the role of someone in none of --oidc-groups; empty turns them away (env CONCH_OIDC_DEFAULT_ROLE)")
	pushContact := flags.String("push-contact", env("CONCH_PUSH_CONTACT", ""), "an e-mail address or https URL the browsers' push services may write to about this server's notifications (env CONCH_PUSH_CONTACT)")
	pushAllowPrivate := flags.Bool("push-allow-private", os.Getenv("CONCH_PUSH_ALLOW_PRIVATE") == "1",
		"let push subscriptions name http URLs and loopback, private and link-local hosts, for a test push service on this machine (env CONCH_PUSH_ALLOW_PRIVATE=1); by default only https URLs of public hosts")
	noSandbox := flags.Bool("no-sandbox", os.Getenv("CONCH_NO_SANDBOX") == "1",
		"run agents and their commands unconfined, able to reach everything this server's user can (env CONCH_NO_SANDBOX=1); by default each session has a sandbox")
	maxStorage, err := envBytes("CONCH_MAX_STORAGE")
	if err != nil {
		return serveConfig{}, err
	}
	flags.Int64Var(&maxStorage, "max-storage", maxStorage,
		"the most bytes of command output and uploaded files stored, all sessions together, in plain bytes (10737418240 is 10 GiB); past it uploads are refused (507 insufficient_storage) and commands' output stops being stored, with a note; 0 is no limit (env CONCH_MAX_STORAGE)")
	var proxies []string
	flags.Func("trusted-proxy", "address or CIDR of a reverse proxy whose X-Forwarded-* headers count; repeatable (env CONCH_TRUSTED_PROXIES, comma-separated)",
		func(p string) error { proxies = append(proxies, p); return nil })
	if err := flags.Parse(args); err != nil {
		return serveConfig{}, err
	}
	if proxies == nil {
		proxies = strings.FieldsFunc(os.Getenv("CONCH_TRUSTED_PROXIES"), func(r rune) bool { return r == ',' || r == ' ' })
	}
	trusted, err := parseProxies(proxies)
	if err != nil {
		return serveConfig{}, err
	}
	if err := replica.CheckLease(lease); err != nil {
		return serveConfig{}, err
	}
	if idle < 0 {
		return serveConfig{}, fmt.Errorf("--agent-idle %s is negative: give 0 to keep agents running", idle)
	}
	if agentStart < time.Second {
		return serveConfig{}, fmt.Errorf("--agent-start %s is too short: give at least 1s", agentStart)
	}
	if heartbeat < time.Second {
		return serveConfig{}, fmt.Errorf("--runner-heartbeat %s is too short: give at least 1s", heartbeat)
	}
	if drain < 0 {
		return serveConfig{}, fmt.Errorf("--drain %s is negative: give 0 to cancel running turns at once", drain)
	}
	if maxStorage < 0 {
		return serveConfig{}, fmt.Errorf("--max-storage %d is negative: give 0 for no limit", maxStorage)
	}
	cfg := serveConfig{addr: *addr, db: *dbPath, agents: *agents, token: *token, lease: lease, idle: idle, agentStart: agentStart, drain: drain, runnerHeartbeat: heartbeat, trusted: trusted, pushContact: *pushContact,
		pushAllowPrivate: *pushAllowPrivate, noSandbox: *noSandbox, maxStorage: maxStorage}
	if *issuer != "" {
		if cfg.oidc, err = parseOIDC(*issuer, *clientID, *groups, *defaultRole); err != nil {
			return serveConfig{}, err
		}
		if *token == "" {
			return serveConfig{}, fmt.Errorf("--oidc-issuer needs --token (or CONCH_TOKEN): single sign-on is for a server people sign in to")
		}
	}
	flags.Visit(func(f *flag.Flag) { cfg.tokenFlag = cfg.tokenFlag || f.Name == "token" })
	if err := checkToken(cfg.token); err != nil {
		return serveConfig{}, err
	}
	if !isLoopback(*addr) {
		if *token == "" {
			return serveConfig{}, fmt.Errorf("--addr %s is not a loopback address: set --token (or CONCH_TOKEN) to serve on it", *addr)
		}
		if len(*token) < minOpenToken {
			return serveConfig{}, fmt.Errorf("--addr %s is not a loopback address: --token (or CONCH_TOKEN) must be at least %d bytes, it has %d", *addr, minOpenToken, len(*token))
		}
	}
	return cfg, nil
}

// parseOIDC reads the single sign-on settings; groups is "group=role,group=role".
func parseOIDC(issuer, clientID, groups, defaultRole string) (*api.OIDC, error) {
	o := &api.OIDC{Issuer: issuer, ClientID: clientID, ClientSecret: os.Getenv("CONCH_OIDC_CLIENT_SECRET"),
		Groups: map[string]string{}, DefaultRole: defaultRole}
	for _, pair := range strings.FieldsFunc(groups, func(r rune) bool { return r == ',' }) {
		g, r, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || g == "" {
			return nil, fmt.Errorf("--oidc-groups: %q is not group=role", pair)
		}
		o.Groups[g] = r
	}
	if err := o.Check(); err != nil {
		return nil, fmt.Errorf("--oidc-issuer: %w", err)
	}
	return o, nil
}

// prune deletes, straight from the database, the tasks whose last activity is older than
// --older-than; tasks with a live session are kept. On PostgreSQL the servers are told,
// and tell the browsers that watch the deleted sessions.
func prune(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	flags := pruneCommand.Flags(stdout, stderr)
	dbPath := flags.String("db", env("CONCH_DB", defaultDB()), "SQLite database file, or postgres:// URL (env CONCH_DB)")
	age := flags.Duration("older-than", 0, "delete tasks idle for longer than this, e.g. 720h (required)")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if *age <= 0 {
		return flags.Fail("give --older-than, a positive duration such as 720h")
	}
	st, err := store.Open(*dbPath, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	// Like deleting a task from the API: its worktrees go, their branches stay, with any
	// work left uncommitted committed onto them, and its sessions' sandbox homes go.
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	tasks, sessions, worktrees, err := task.Prune(ctx, st, time.Now().Add(-*age), log)
	if err != nil {
		return err
	}
	if err := replica.Deleted(ctx, st, sessions); err != nil {
		fmt.Fprintf(stderr, "prune: the running servers were not told: %v\n", err)
	}
	fmt.Fprintf(stdout, "deleted %d tasks idle for more than %s\n", len(tasks), *age)
	if worktrees > 0 {
		fmt.Fprintf(stdout, "removed %d worktrees; their branches stay\n", worktrees)
	}
	return nil
}

// runRunner is conch runner: it serves a server's sessions from this machine until
// interrupted. The token never comes from the command line, which every process of the
// host can read.
func runRunner(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	flags := runnerCommand.Flags(stdout, stderr)
	server := flags.String("server", env("CONCH_SERVER", ""), "the server's URL, http:// or https:// (env CONCH_SERVER)")
	tokenFile := flags.String("token-file", env("CONCH_RUNNER_TOKEN_FILE", ""), "a file holding the runner token (env CONCH_RUNNER_TOKEN_FILE); without it, env CONCH_RUNNER_TOKEN")
	host, _ := os.Hostname()
	name := flags.String("name", env("CONCH_RUNNER_NAME", host), "this runner's name, as the server lists it (env CONCH_RUNNER_NAME)")
	labels := flags.String("labels", env("CONCH_RUNNER_LABELS", ""), "what this machine offers, comma-separated: gpu,os=linux (env CONCH_RUNNER_LABELS)")
	capacity := flags.String("capacity", env("CONCH_RUNNER_CAPACITY", "4"), "the most sessions it runs at once (env CONCH_RUNNER_CAPACITY)")
	dir := flags.String("dir", env("CONCH_RUNNER_DIR", filepath.Join(filepath.Dir(defaultDB()), "runner")), "where the sessions' directories go (env CONCH_RUNNER_DIR)")
	repos := flags.String("repos", env("CONCH_RUNNER_REPOS", ""), "the repositories tasks may have cloned here, comma-separated URL patterns: https://git.example.com/acme/* (env CONCH_RUNNER_REPOS); none: any but in --dir")
	noSandbox := flags.Bool("no-sandbox", os.Getenv("CONCH_NO_SANDBOX") == "1",
		"run agents and their commands unconfined, where something else confines this runner (a gVisor or Kata pod; env CONCH_NO_SANDBOX=1)")
	if err := flags.Parse(args); err != nil {
		return err
	}
	var patterns []string
	if *repos != "" {
		patterns = strings.Split(*repos, ",")
	}
	for _, p := range patterns {
		if _, err := path.Match(p, ""); err != nil {
			return flags.Fail("--repos: %q is not a pattern: %v", p, err)
		}
	}
	most, err := strconv.Atoi(*capacity)
	if err != nil {
		return flags.Fail("--capacity %q is not a number of sessions", *capacity)
	}
	if *server == "" || flags.NArg() != 0 {
		return flags.Fail("give --server URL, and no arguments")
	}
	token := os.Getenv("CONCH_RUNNER_TOKEN")
	if *tokenFile != "" {
		b, err := os.ReadFile(*tokenFile)
		if err != nil {
			return fmt.Errorf("--token-file: %w", err)
		}
		token = strings.TrimSpace(string(b))
	}
	if token == "" {
		return flags.Fail("give the runner token in CONCH_RUNNER_TOKEN or a --token-file (an admin makes one: conch runners token NAME)")
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	// It holds the token, and will run agents as this user: they must not read its memory.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		log.Warn("the runner stays dumpable: a process of its user may read its memory and environment", "err", err)
	}
	var l []string
	if *labels != "" {
		l = strings.Split(*labels, ",")
	}
	if state, err := sandboxState(*noSandbox, stderr, log); err != nil {
		return errors.New("conch runner: " + state)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("conch runner: find the conch binary: %w", err)
	}
	if err := os.MkdirAll(*dir, 0o700); err != nil {
		return fmt.Errorf("--dir: %w", err)
	}
	machine := acp.Local(acp.LocalConfig{DataDir: *dir, Executable: exe, NoSandbox: *noSandbox, Repos: patterns, Logger: log})
	return runner.Run(ctx, runner.Options{Server: *server, Token: token, Machine: machine, Logger: log,
		Hello: runner.Hello{Name: *name, Labels: l, Capacity: most}})
}

// printSetupLink prints, while the database has no admin account, a one-time link that
// makes one (a new link each start; each lasts a day). Until then the token signs in.
func printSetupLink(ctx context.Context, stdout io.Writer, st *store.Store, addr string) error {
	admins, err := st.CountAdmins(ctx)
	if err != nil || admins > 0 {
		return err
	}
	inv, err := task.Invite(ctx, st, shared.RoleAdmin, time.Now().Add(24*time.Hour))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "no admin account yet: create it within a day at http://%s%s\n", addr, inv.URL)
	return nil
}

// minOpenToken is the shortest token a server reachable from other hosts accepts.
const minOpenToken = 16

// tokenChars are those of RFC 6750's b64token, what "Authorization: Bearer" carries,
// followed by "=" padding. Another token could never be presented (whitespace around it
// is cut, a control character refused), so it is refused at start.
const tokenChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/"

// checkToken refuses a token that no client could present, naming its first wrong character.
func checkToken(token string) error {
	body := strings.TrimRight(token, "=")
	at := strings.IndexFunc(body, func(r rune) bool { return !strings.ContainsRune(tokenChars, r) })
	if token == "" || at < 0 && body != "" {
		return nil
	}
	bad := '='
	if at >= 0 {
		bad, _ = utf8.DecodeRuneInString(body[at:])
	}
	return fmt.Errorf(`--token (or CONCH_TOKEN) may hold only letters, digits and "-._~+/" (then "=" at the end), as a bearer token (RFC 6750): it has %q at byte %d`, bad, max(at, 0))
}

// parseProxies reads --trusted-proxy values: addresses (one host each) or CIDR prefixes.
func parseProxies(values []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, v := range values {
		if p, err := netip.ParsePrefix(v); err == nil {
			out = append(out, p.Masked())
		} else if a, err := netip.ParseAddr(v); err == nil {
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
		} else {
			return nil, fmt.Errorf("--trusted-proxy %q is neither an address nor a CIDR prefix", v)
		}
	}
	return out, nil
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
