// Package api is Conch's HTTP face: the REST API of docs/API.md, the /ws WebSocket, the
// static /web/ assets and, last, the go-app UI handler. It is the only package that
// imports Fiber.
//
// Request bodies are strict: they must be valid UTF-8 holding one JSON object whose
// fields are all known (a misspelt optional field would otherwise be dropped silently),
// each given once and spelt in the field's own letter case (checkKeys), and of the right type. Anything else is 400 {"error": "..."} and stores nothing.
package api

import (
	_ "embed"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"runtime"
	"runtime/debug"
	"time"

	"conch/server/hub"
	"conch/server/push"
	"conch/server/runner"
	"conch/server/store"
	"conch/server/task"
	"conch/shared"

	"github.com/gofiber/contrib/websocket"
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/gofiber/fiber/v2/middleware/recover"
)

// OpenAPI is the OpenAPI 3.1 description of every route, served at /api/v1/openapi.json.
// The API tests validate every request and answer they make against it, so it cannot
// drift from what the server does. It is generated: the schemas of the shared types from
// the types, the rest (paths, descriptions, enums, examples) from openapi.in.json.
//
//go:generate go test -run ^TestOpenAPIGenerated$ -update .
//go:embed openapi.json
var OpenAPI []byte

// DefaultBodyLimit bounds request bodies and WebSocket frames when Config.BodyLimit is 0.
const DefaultBodyLimit = 1 << 20

// Config wires the API to the rest of the server.
type Config struct {
	Store   *store.Store
	Hub     *hub.Hub
	Events  task.Events // where server/task publishes what it committed; Hub when nil
	Runtime task.Runtime
	// UI makes go-app's handler, mounted last as the catch-all, with the one source of
	// the data its pages show (ui.BootFunc; see pages).
	UI  func(boot func(key string) (shared.Boot, error)) http.Handler
	Web fs.FS // served at /web/; app.wasm from its .br/.gz copies when accepted
	// Token, when set, is required on every API and WebSocket request (Bearer header or the
	// sign-in cookie); pages redirect to /login. When empty, only loopback Host names
	// are served, so a web page cannot reach the API through DNS rebinding.
	Token string
	// TrustedProxies are the peers whose X-Forwarded-For, -Proto and -Host count; from
	// any other peer those headers are ignored.
	TrustedProxies []netip.Prefix
	Now            func() time.Time // time.Now when nil
	Logger         *slog.Logger
	BodyLimit      int // bytes; DefaultBodyLimit when 0
	// FromAgent reports whether a TCP connection (client, server) was opened by one of
	// the agents this server runs or their commands (acp.FromAgent). Without a token their
	// writes and WebSockets are refused: an agent must not answer its own permission
	// requests. Nil: no such check.
	FromAgent func(client, server netip.AddrPort) bool
	// OIDC, when set with a Token, lets people sign in through an identity provider.
	OIDC *OIDC
	// PushKey is Web Push's VAPID public key (server/push); "" turns the push routes off.
	PushKey string
	// PushEndpoints are the push endpoints a subscription may name (the zero value: https
	// URLs of public hosts); server/push sends by the same rule.
	PushEndpoints push.Endpoints
	// Sandbox is how agents are confined here, for /healthz: "landlock ABI 7", "off
	// (--no-sandbox)" or "unavailable: why".
	Sandbox string
	// Consoles opens a watcher of a session's terminal (acp.Manager.Console), for
	// /ws/terminal; nil: no terminals.
	Consoles func(sessionID, login string, mayEdit bool) (task.ConsoleView, error)
	// Runners are the runners connected to this server (GET /api/v1/runners/connect);
	// an empty registry when nil.
	Runners *runner.Registry
}

type server struct {
	store   *store.Store
	tasks   *task.Service
	hub     *hub.Hub
	rt      task.Runtime
	console func(sessionID, login string, mayEdit bool) (task.ConsoleView, error) // Config.Consoles
	web     *assets
	token   string
	log     *slog.Logger
	limit   int
	now     func() time.Time
	agent   func(client, server netip.AddrPort) bool // Config.FromAgent
	pushKey string
	pushTo  push.Endpoints // Config.PushEndpoints
	sandbox string         // Config.Sandbox
	runners *runner.Registry

	sessionKey []byte         // of the sign-in cookie's MAC, derived from token
	proxies    []netip.Prefix // trusted
	throttle   *throttle      // of token guesses

	snapshots *snapshotCache
	reads     chan struct{} // admitReads' slots
	oidc      *oidcFlow     // nil without single sign-on
	boots     boots         // the data of pages being prerendered (pages)
}

// New returns the Fiber app serving everything.
func New(cfg Config) *fiber.App {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.BodyLimit <= 0 {
		cfg.BodyLimit = DefaultBodyLimit
	}
	if cfg.UI == nil {
		cfg.UI = func(func(string) (shared.Boot, error)) http.Handler { return http.NotFoundHandler() }
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Events == nil {
		cfg.Events = cfg.Hub
	}
	if cfg.Runners == nil {
		cfg.Runners = runner.New(runner.Config{Store: cfg.Store, Logger: cfg.Logger})
	}
	s := &server{store: cfg.Store, hub: cfg.Hub, rt: cfg.Runtime, console: cfg.Consoles, web: newAssets(cfg.Web),
		token: cfg.Token, log: cfg.Logger, limit: cfg.BodyLimit, now: cfg.Now, agent: cfg.FromAgent, pushKey: cfg.PushKey, pushTo: cfg.PushEndpoints,
		sandbox: cfg.Sandbox, runners: cfg.Runners, sessionKey: sessionKeyOf(cfg.Token), proxies: cfg.TrustedProxies, throttle: newThrottle(cfg.Now),
		snapshots: newSnapshotCache(snapshotCacheBytes), reads: make(chan struct{}, runtime.GOMAXPROCS(0))}
	s.tasks = task.New(cfg.Store, cfg.Events, cfg.Runtime, cfg.Runners, cfg.Logger, cfg.Now)
	if cfg.OIDC != nil && cfg.Token != "" {
		s.oidc = &oidcFlow{cfg: *cfg.OIDC}
	}
	proxies := make([]string, len(cfg.TrustedProxies))
	for i, p := range cfg.TrustedProxies {
		proxies[i] = p.String()
	}

	app := fiber.New(fiber.Config{
		Immutable: true, // params and headers outlive fasthttp's buffer reuse
		// Bodies are streamed and bounded by limitBody, each by its route's limit, after
		// at most 8 KiB read ahead: an upload or import is read once its role check passed.
		BodyLimit:                    cfg.BodyLimit,
		StreamRequestBody:            true,
		DisablePreParseMultipartForm: true,

		DisableStartupMessage: true,
		ErrorHandler:          s.errorHandler,
		ReadTimeout:           time.Minute,
		// Protocol() and Hostname() read X-Forwarded-* only from these peers.
		EnableTrustedProxyCheck: true,
		TrustedProxies:          proxies,
	})
	app.Use(securityHeaders, recover.New(recover.Config{EnableStackTrace: true, StackTraceHandler: s.logPanic}), s.guardHost, s.limitBody)

	app.Get("/healthz", s.handleHealth)

	// A runner is let in by its own token, not an account's (runners.go).
	app.Get(runner.ConnectPath, s.admitRunner, s.checkUpgrade, websocket.New(s.handleRunner, websocket.Config{
		ReadBufferSize: 32 << 10, WriteBufferSize: 32 << 10,
	}))
	api := app.Group("/api", s.requireToken, s.sameOriginWrites, s.admitReads)
	v1 := api.Group("/v1")
	for _, r := range routes {
		if r.path == "" {
			continue // a WebSocket action alone
		}
		handlers := []fiber.Handler{s.as(r.role), func(c *fiber.Ctx) error { return r.handle(s, c) }}
		if r.method == fiber.MethodGet {
			v1.Head(r.path, handlers...) // as v1.Get does
		}
		v1.Add(r.method, r.path, handlers...)
	}
	api.All("/*", func(c *fiber.Ctx) error { return s.fail(c, errNoRoute) })

	app.Get("/ws", s.requireToken, s.checkUpgrade, websocket.New(s.handleWS, websocket.Config{
		ReadBufferSize: 4096, WriteBufferSize: 4096,
		EnableCompression: true, // permessage-deflate when the client offers it (ws.go, readFrame)
	}))
	app.Get("/ws/terminal", s.requireToken, s.checkUpgrade, s.admitTerminal, websocket.New(s.handleTerminal, websocket.Config{
		ReadBufferSize: 4096, WriteBufferSize: 32 << 10,
	}))
	app.Get("/web/*", s.handleAsset)
	if s.token != "" {
		app.Get("/login", s.handleLoginForm)
		app.Post("/login", s.sameOriginForm, s.handleLogin)
		app.Post("/logout", s.sameOriginForm, s.handleLogout)
		if s.oidc != nil {
			app.Get("/login/oidc", s.handleOIDCStart)
			app.Get("/login/oidc/callback", s.handleOIDCCallback)
		}
		app.Get("/invite/:code", s.handleInviteForm)
		app.Post("/invite/:code", s.sameOriginForm, s.handleInvite)
		app.Get("/share/:code", s.handleShare)
		app.Post("/share/:code", s.sameOriginForm, s.handleShare)
	}
	app.Use(s.requirePageToken, s.pages(adaptor.HTTPHandler(cfg.UI(s.boots.take))))
	return app
}

var (
	errNoRoute      = shared.Errorf(shared.CodeNotFound, "no such route")
	errUnauthorized = shared.Errorf(shared.CodeUnauthorized, "missing or wrong token")
	errCrossOrigin  = shared.Errorf(shared.CodeForbidden, "cross-origin request refused")
	errFromAgent    = shared.Errorf(shared.CodeForbidden, "an agent (or a command it runs) may not use Conch's API: start the server with a token to keep the API for people")
	errForeignHost  = shared.Errorf(shared.CodeForbidden, "host not allowed without a token")
)

// statusOf is the one table from error codes to HTTP statuses. A WebSocket error carries
// the code itself; code and message come from report for both.
var statusOf = map[string]int{
	shared.CodeInvalid:         http.StatusBadRequest,
	shared.CodeTooLarge:        http.StatusBadRequest, // like any other bad body (docs/API.md, "Errors")
	shared.CodeUnauthorized:    http.StatusUnauthorized,
	shared.CodeForbidden:       http.StatusForbidden,
	shared.CodeNotFound:        http.StatusNotFound,
	shared.CodeUnknownAction:   http.StatusNotFound,
	shared.CodeConflict:        http.StatusConflict,
	shared.CodeTooManyRequests: http.StatusTooManyRequests,
	shared.CodeTimeout:         http.StatusGatewayTimeout,
	shared.CodeDraining:        http.StatusServiceUnavailable,
	shared.CodeInternal:        http.StatusInternalServerError,
	// A full disk or database, or --max-storage reached: the request may succeed once an
	// operator makes room, unlike a 500.
	shared.CodeInsufficientStorage: http.StatusInsufficientStorage,
}

// drainRetry is the Retry-After, in seconds, of a request a draining server refuses: by
// then a balancer sends it to another server, or a lone server has restarted.
const drainRetry = "5"

// report is what a client is told of err, over REST and WebSocket alike: its code and
// its message, with no internal context. A database or disk without room is
// insufficient_storage (store.Full), whichever write met it. The details of an internal
// failure or a full store go to the log.
func (s *server) report(err error, attrs ...any) shared.Error {
	err = store.Full(err)
	e := shared.Error{Code: shared.ErrorCode(err), Message: shared.ErrorMessage(err)}
	switch e.Code {
	case shared.CodeInternal:
		s.log.Error("request failed", append(attrs, "err", err)...)
	case shared.CodeInsufficientStorage:
		s.log.Warn("refused for want of storage", append(attrs, "err", err)...)
	}
	return e
}

// fail answers err as {"error": "...", "code": "..."}.
func (s *server) fail(c *fiber.Ctx, err error) error {
	e := s.report(err, "method", c.Method(), "path", c.Path())
	if e.Code == shared.CodeDraining {
		c.Set(fiber.HeaderRetryAfter, drainRetry)
	}
	return sendJSON(c.Status(statusOf[e.Code]), shared.ErrorBody{Error: e.Message, Code: e.Code, Paths: shared.ConflictPaths(err)})
}

func (s *server) logPanic(c *fiber.Ctx, r any) {
	s.log.Error("panic", "method", c.Method(), "path", c.Path(), "panic", r, "stack", string(debug.Stack()))
}

// errorHandler catches what handlers return unanswered and what Fiber itself rejects
// (an oversized body, a malformed request, a panic turned error by the recover
// middleware). Fiber's refusals get a code like any other error.
func (s *server) errorHandler(c *fiber.Ctx, err error) error {
	setSecurityHeaders(c) // a request refused before any route ran has not got them yet
	var fe *fiber.Error
	switch {
	case !errors.As(err, &fe) || fe.Code >= http.StatusInternalServerError:
	case fe.Code == http.StatusRequestEntityTooLarge:
		err = errTooLarge
	default:
		err = shared.Errorf(shared.CodeInvalid, "%s", fe.Message)
	}
	return s.fail(c, err)
}
