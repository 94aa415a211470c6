# The one place that knows how to build, run, test and bench Conch.
SHELL := /bin/bash
GO ?= go
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X conch/app/ui.Version=$(VERSION)
ADDR ?= 127.0.0.1:8080
DATA ?= $(HOME)/.local/share/conch
# Expanded when used, so that without Go the first word of make run is the needs line.
WASM_PATH = $(shell $(GO) env GOROOT)/lib/wasm
TEST_TIMEOUT ?= 30m

.PHONY: all needs build wasm xterm run test quick test-go test-wasm axe gemini claude-acp codex-acp acp-agents check fmt vet bench clean

all: build

## wasm: the go-app UI compiled to web/app.wasm, plus its gzip and brotli copies.
wasm: web/app.wasm

# No inlining (-l) but in the runtime, internal/..., reflect and encoding/json, whose hot
# loops keep it: inlined copies of small functions cost more bytes than calls to them.
# Measured on app.wasm.br against inlining off in Conch's and its modules' packages only:
# -30 KB brotli, +134 KB raw. The app's start in headless Chromium (bench -only browser
# -runs 5, "app running", two alternating pairs) did not move beyond the noise of a loaded
# 2-core machine: cold 1.94/2.96 s before, 2.54/3.00 s after. Inlining off everywhere
# also slows the runtime and encoding/json.
WASM_GCFLAGS := -gcflags=all=-l -gcflags=runtime= -gcflags=internal/...= -gcflags=reflect= -gcflags=encoding/json=

# The browser build uses go-app without its server code (net/http and the crypto/tls under
# it: 1.60 MB brotli against 1.26): server/cmd/slimapp copies the version go.mod requires
# from the module cache into .cache/wasm and writes the workspace every js/wasm line uses.
# The server and the host tests use go-app as published.
WASM_WORK := .cache/wasm/go.work
JS := GOWORK=$(CURDIR)/$(WASM_WORK) GOOS=js GOARCH=wasm
# slimapp also checks the route patterns the browser build registers, so it reads app/ and wasm/.
$(WASM_WORK): go.mod go.sum $(wildcard server/cmd/slimapp/*.go) $(shell find app wasm -name '*.go' -not -name '*_test.go')
	$(GO) run ./server/cmd/slimapp -out $(dir $(WASM_WORK))

web/app.wasm: $(shell find app shared wasm -name '*.go' -not -name '*_test.go') go.mod go.sum $(WASM_WORK) server/cmd/wasmdata/main.go
	$(JS) $(GO) build -trimpath $(WASM_GCFLAGS) -ldflags='$(LDFLAGS)' -o web/app.wasm ./wasm
	$(GO) run ./server/cmd/wasmdata web/app.wasm # one data segment: 8% less brotli, 1 MB more raw
	$(GO) run ./server/cmd/compress web/app.wasm

## xterm: xterm.js, the terminal emulator of the terminal page (web/terminal.html), pinned,
## installed with npm into the git-ignored .cache/xterm once (a version of its own folder, so a
## bump installs again) and copied into the git-ignored web/xterm, which the binary embeds.
XTERM_VERSION := 6.0.0
XTERM_FIT_VERSION := 0.11.0
XTERM_NPM := .cache/xterm/$(XTERM_VERSION)-$(XTERM_FIT_VERSION)
XTERM := web/xterm/xterm.js
xterm: $(XTERM)

$(XTERM_NPM)/node_modules/@xterm/xterm/lib/xterm.js:
	npm install --prefix $(XTERM_NPM) --no-save --no-audit --no-fund @xterm/xterm@$(XTERM_VERSION) @xterm/addon-fit@$(XTERM_FIT_VERSION)

$(XTERM): $(XTERM_NPM)/node_modules/@xterm/xterm/lib/xterm.js
	mkdir -p web/xterm
	cp $(XTERM_NPM)/node_modules/@xterm/xterm/lib/xterm.js $(XTERM_NPM)/node_modules/@xterm/xterm/css/xterm.css \
	  $(XTERM_NPM)/node_modules/@xterm/addon-fit/lib/addon-fit.js web/xterm/

## build: bin/conch with the UI embedded.
build: web/app.wasm $(XTERM)
	$(GO) build -trimpath -ldflags='$(LDFLAGS)' -o bin/conch ./server

## needs: what make run needs, checked before anything is built (README.md has the same line).
## The SQLite driver is C, built through cgo with the compiler `go env CC` names.
NEEDS := make run needs Go >= 1.26.8, a C compiler for the cgo SQLite driver (Debian: gcc libc6-dev) and, for its first build, npm (Debian: npm)
needs:
	@command -v $(GO) >/dev/null || { echo "$(NEEDS); $(GO) is not on PATH" >&2; exit 1; }
	@v=$$($(GO) env GOVERSION); [ "$$(printf '%s\n' go1.26.8 $$v | sort -V | head -1)" = go1.26.8 ] || \
	  { echo "$(NEEDS); $(GO) is $$v" >&2; exit 1; }
	@cc=$$($(GO) env CC); printf '#include <stdlib.h>\nint main(void) { return 0; }\n' | \
	  $$cc -x c -o /dev/null - 2>/dev/null || { echo "$(NEEDS); $$cc cannot build C" >&2; exit 1; }
	@[ -f $(XTERM) ] || command -v npm >/dev/null || { echo "$(NEEDS); npm is not on PATH (it fetches the terminal's xterm.js once)" >&2; exit 1; }

## run: the app on http://$(ADDR), embedded SQLite, built-in shell agent.
run: needs
	$(MAKE) --no-print-directory build
	mkdir -p $(DATA)
	./bin/conch serve --addr $(ADDR) --db $(DATA)/conch.db

## test: every test (unit, store, API, WebSocket, UI, browser end to end).
test: build axe acp-agents test-go test-wasm

## quick: a loop while changing code, not a check: every package but the browser tests,
## once, on SQLite, without the race detector; -short skips a wasm build, and the tests that
## run bin/conch skip themselves without CONCH_BIN. make test is the full run CI makes.
quick: $(WASM_WORK)
	$(GO) test -short $$($(GO) list ./... | grep -v '^conch/app/e2e$$')

## axe: axe-core, which the accessibility browser test runs in the page, installed with npm
## into the git-ignored .cache/axe once (later runs need no network).
AXE := .cache/axe/node_modules/axe-core/axe.min.js
axe: $(AXE)

$(AXE):
	npm install --prefix .cache/axe --no-save --no-audit --no-fund axe-core@4

## gemini: Gemini CLI, which a browser test runs as a real agent (offline, scripted model
## replies), installed with npm into the git-ignored .cache/gemini once (100 MB).
GEMINI := .cache/gemini/node_modules/@google/gemini-cli/bundle/gemini.js
gemini: $(GEMINI)

$(GEMINI):
	npm install --prefix .cache/gemini --no-save --no-audit --no-fund @google/gemini-cli@0.61.0

## acp-agents: the agents server/acp's TestACPTable starts as real processes (only their
## initialize, which needs no network) for docs/ACP.md: Gemini CLI, and the Claude Code
## and Codex ACP adapters, each installed with npm into the git-ignored .cache once
## (claude-acp 124 MB, codex-acp 223 MB).
CLAUDE_ACP := .cache/claude-acp/node_modules/@zed-industries/claude-code-acp/dist/index.js
CODEX_ACP := .cache/codex-acp/node_modules/@zed-industries/codex-acp/bin/codex-acp.js
acp-agents: gemini claude-acp codex-acp
claude-acp: $(CLAUDE_ACP)
codex-acp: $(CODEX_ACP)

$(CLAUDE_ACP):
	npm install --prefix .cache/claude-acp --no-save --no-audit --no-fund @zed-industries/claude-code-acp@0.16.2

$(CODEX_ACP):
	npm install --prefix .cache/codex-acp --no-save --no-audit --no-fund @zed-industries/codex-acp@0.16.0

# Every package but the browser tests runs under the race detector; the browser tests
# drive bin/conch and Chromium, whose races the detector cannot see from the test process.
# The store and API/WebSocket suites run again on PostgreSQL: a throwaway cluster the
# tests start (Debian's postgresql package), or the server CONCH_TEST_POSTGRES names.
# Tests of several servers on one database (store's leases and inbox, two bin/conch
# replicas in ./server) use PostgreSQL in the first run too.
PG_SUITES := ./server/store/... ./server/api/...
test-go:
	CONCH_BIN=$(CURDIR)/bin/conch $(GO) test -race -timeout $(TEST_TIMEOUT) $$($(GO) list ./... | grep -v '^conch/app/e2e$$')
	CONCH_TEST_DB=postgres $(GO) test -race -timeout $(TEST_TIMEOUT) $(PG_SUITES)
	CONCH_BIN=$(CURDIR)/bin/conch $(GO) test -timeout $(TEST_TIMEOUT) ./app/e2e

## test-wasm: the pure packages (shared, the terminal renderer) compiled for js/wasm and run under Node.
test-wasm: $(WASM_WORK)
	PATH="$(WASM_PATH):$$PATH" $(JS) $(GO) test ./shared/... ./app/term

fmt:
	gofmt -w $$(git ls-files '*.go')

vet: $(WASM_WORK)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt: $$out"; exit 1; fi
	$(GO) vet ./...
	$(JS) $(GO) vet ./shared/... ./app/client/... ./app/ui/... ./wasm/... # app/e2e drives Chromium from the host

## check: formatting and vet, then every test (wasm/deps_test.go checks what each build may import).
check: vet test

## bench: every benchmark on loopback against bin/conch, an hour or more on 2 cores (README.md); writes docs/BENCHMARKS.md.
## Not pass/fail. BENCH_FLAGS passes options, e.g. BENCH_FLAGS='-runs 5' (bin/bench -h lists them), or
## BENCH_FLAGS='-only hostile -out /tmp/hostile.md' for the hostile agent's attacks alone (bin/bench is
## that agent too: `bin/bench agent`), or BENCH_FLAGS='-only openloop -compare OLD_BIN' for the open
## loop against an older conch too (bin/bench is the open loop's net/http baseline too: `bin/bench baseline`).
bench: build
	$(GO) build -trimpath -o bin/loadgen ./server/cmd/loadgen
	$(GO) build -trimpath -o bin/bench ./server/cmd/bench
	./bin/bench -conch bin/conch -loadgen bin/loadgen -out docs/BENCHMARKS.md $(BENCH_FLAGS)

clean:
	rm -rf bin web/app.wasm web/app.wasm.gz web/app.wasm.br .cache/wasm
