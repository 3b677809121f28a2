# The project's commands. `make test` is what CI runs (.ci/run).
GO      ?= go
PKGS    ?= ./...

.PHONY: all build test test-all test-deps test-go test-node check fmt vet bench fuzz run clean
.PHONY: build-race soak release

all: build

# -s -w: no symbol table nor DWARF (65 MB -> 45 MB; panics keep their
# stack traces); -trimpath: no local paths in the binary. -X: the commit
# (-dirty with uncommitted changes) and the build date `agentpool version`
# prints; go build records the commit itself (vcs.revision), but not in a
# git worktree nor with -buildvcs=false.
VERSION_PKG := github.com/agentpool/agentpool/internal/binaries
COMMIT := $(shell git rev-parse HEAD 2>/dev/null)$(shell git diff --quiet HEAD 2>/dev/null || echo -dirty)
BUILDFLAGS ?= -trimpath -ldflags='-s -w -X $(VERSION_PKG).Commit=$(COMMIT) -X $(VERSION_PKG).Date=$(shell date -u +%Y-%m-%dT%H:%M:%SZ)'
# Three programs, one go build (the packages they share compile once), to
# be installed together (each finds the next one beside it, else on PATH):
# bin/agentpool, the front users type (2 MB: it answers `version` and the
# help itself, as fast as a Go program starts, and execs agentpool-light for
# every other command); bin/agentpool-light, the CLI without Temporal, gRPC,
# the OpenTelemetry SDK nor PostgreSQL; bin/agentpool-full, the same CLI with
# the Temporal engine, the OpenTelemetry exporters and the PostgreSQL store,
# which agentpool-light runs in its place for `worker`, temporal manifests,
# telemetry export and a postgres:// session database.
build:
	CGO_ENABLED=0 $(GO) build $(BUILDFLAGS) -o bin/ ./cmd/agentpool ./cmd/agentpool-light ./cmd/agentpool-full

# release: the release archives in dist/, as .goreleaser.yaml describes
# them: agentpool_VERSION_OS_ARCH.tar.gz for linux and darwin, amd64 and
# arm64, each with the three programs (built as by build, with the version
# in -ldflags) and README.md, and agentpool_VERSION_checksums.txt (sha256).
# goreleaser builds them when it is on PATH and the checkout has a git
# remote (a snapshot: nothing is published; without a remote goreleaser
# reads no commit at all and names the version and commit "none");
# otherwise scripts/release.sh builds the same archives with go build and
# tar. goreleaser is no dependency of the module; v2.17.0 installs from the
# module proxy with go install (docs/release.md).
GORELEASER ?= goreleaser
release:
	@if command -v $(GORELEASER) >/dev/null 2>&1 && [ -n "$$(git remote)" ]; then \
		echo "$(GORELEASER) release --snapshot --clean"; $(GORELEASER) release --snapshot --clean; \
	else \
		echo "no $(GORELEASER) on PATH, or no git remote: scripts/release.sh builds the same archives"; \
		GO="$(GO)" scripts/release.sh; \
	fi

# test: formatting, vet, the Go suite with the race detector and the
# protocol tests with the real npm clients. The steps spend most of their
# time waiting (on subprocesses, servers, browsers), so a sub-make runs them
# side by side (-j), each step's output kept together (--output-sync):
# test-deps, node-deps and build-race start at once, check when test-deps
# and node-deps are done; test-go and the Node suites (one target each, see
# test-node; they also wait for node-deps) start when test-deps and
# build-race are done (build-race first, so that with an empty build cache
# go test reuses what it compiled instead of compiling the same race
# packages at the same time). TEST_JOBS bounds the steps that run at once:
# check, test-go and the six Node suites fit in 8. TEST_JOBS=1 runs the
# steps one after another.
TEST_JOBS ?= 8
test:
	@$(MAKE) --no-print-directory -j$(TEST_JOBS) --output-sync=target test-all

test-all: check test-go test-node

# GORACE: a -race program sleeps 1 s before it exits (atexit_sleep_ms, to
# catch races with goroutines still running at exit); every test binary and
# every CLI process the tests start pays it, about 200 processes per make
# test. Races found while the program runs are reported as before.
export GORACE ?= atexit_sleep_ms=0

# RACEFLAGS: -race, without checkptr in modernc.org's packages. -race turns
# on the compiler's checkptr instrumentation (checks of unsafe.Pointer
# arithmetic) in every package; in the SQLite driver, C translated to Go
# that does such arithmetic on every statement, it was half the CPU of the
# SQLite tests (TestSQLiteWriterModel: 7.6 CPU-s with it, 3.1 without, 20
# checks). Our packages keep checkptr, and every package the race
# detector. build-race and test-go pass the same flags, so that go test
# reuses the packages build-race compiled.
RACEFLAGS ?= -race -gcflags='modernc.org/...=-d=checkptr=0'

# step_start/step_end print how long a step took (the steps overlap under
# make test, so its total is not their sum).
step_start = @mkdir -p bin && date +%s > bin/.step-$@
step_end = @echo "== $@ took $$(( $$(date +%s) - $$(cat bin/.step-$@) )) s"; rm -f bin/.step-$@

# check: formatting, vet, a tidy go.mod, staticcheck and deadcode (pinned;
# built by `go run` into the build cache on first use). Under make test it
# waits for test-deps and node-deps: `go vet ./...` walks every
# directory, the node_modules folders too, and fails when npm replaces one
# under it.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
DEADCODE    ?= golang.org/x/tools/cmd/deadcode@v0.52.0
check: $(if $(filter test-all,$(MAKECMDGOALS)),test-deps node-deps)
	$(step_start)
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './node_modules/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) mod tidy -diff
	$(GO) run $(STATICCHECK) $(PKGS)
	@out=$$($(GO) run $(DEADCODE) -test $(PKGS)); \
	if [ -n "$$out" ]; then echo "dead code (unreachable even from the tests):"; echo "$$out"; exit 1; fi
	$(step_end)

# test-deps installs the npm packages the Go tests drive (the MCP servers
# of tests/mcp, pinned in its package-lock.json; the real ACP agents of
# tests/acpagents, opencode, that external/acpagent drives), tmux (Debian package),
# in which tests/node/clients drives the OpenCode TUI, chromium (Debian
# package), in which tests/node/web drives the web view, and the Temporal
# dev server (bin/temporal, built once per machine) that the durable
# engine's tests start (AGENTPOOL_TEMPORAL_BIN).
test-deps: bin/temporal
	$(step_start)
	cd tests/mcp && npm ci --no-audit --no-fund --loglevel=error
	cd tests/acpagents && $(npm_install)
	@command -v tmux >/dev/null 2>&1 || { echo "installing tmux (the OpenCode TUI test drives the TUI in it)"; \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq tmux; \
		else sudo apt-get update -qq && sudo apt-get install -y -qq tmux; fi; }
	@[ -x /usr/bin/chromium ] || { echo "installing chromium (the web view test drives it headless)"; \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium; \
		else sudo apt-get update -qq && sudo apt-get install -y -qq chromium; fi; }
	$(step_end)

# The PostgreSQL tests (session/postgres, cli) use the server
# tests/pg/start.sh starts (Debian's postgresql, installed when missing),
# each in a schema of its own; AGENTPOOL_TEST_POSTGRES set in the
# environment wins (another server). Unset, they skip, except under
# CI=true, where they fail. -timeout: external/acpagent drives the real
# opencode, whose start takes 10 to 100 s on a loaded 2-core machine; the
# package took 11.9 min under a load average of 21 (go test's default
# timeout is 10 min per package). -parallel: the tests marked t.Parallel
# mostly wait (on CLI processes, dev servers, opencode, agents that pace
# their answers), so more of them run at once than go test's default of
# one per core (GOMAXPROCS, 2 here).
# -p: go test runs at most -p test binaries at once (GOMAXPROCS, 2 here, by
# default), and a package's tests occupy a slot while they wait, so two
# waiting packages held the machine's compiles and every other package
# back. TEST_GO_FIRST: go test starts the packages in the order given (one
# after another, each when the ones before it have started), so the
# longest start first instead of ending the run alone (session/sqlite, at
# the end of ./..., was the last 130 s); ./... adds the rest once.
TEST_PARALLEL ?= 4
TEST_PKGS_AT_ONCE ?= 4
TEST_GO_FIRST ?= $(if $(filter ./...,$(PKGS)),./cli ./session/sqlite ./durable ./external/acpagent ./server/opencode ./session/postgres)
test-go: test-deps $(if $(filter test-all,$(MAKECMDGOALS)),build-race)
	$(step_start)
	@pg="$${AGENTPOOL_TEST_POSTGRES:-$$(tests/pg/start.sh)}" || { echo "tests/pg/start.sh failed"; exit 1; }; \
	AGENTPOOL_TEST_POSTGRES="$$pg" AGENTPOOL_MCP_NODE_MODULES="$(CURDIR)/tests/mcp/node_modules" \
		AGENTPOOL_ACP_NODE_MODULES="$(CURDIR)/tests/acpagents/node_modules" \
		AGENTPOOL_TEMPORAL_BIN="$(CURDIR)/bin/temporal" $(GO) test $(RACEFLAGS) -count=1 -timeout 30m \
		-p $(TEST_PKGS_AT_ONCE) -parallel $(TEST_PARALLEL) $(TEST_GO_FIRST) $(PKGS)
	$(step_end)

# The Temporal CLI's dev server; v1.5.1 is the newest that builds from the
# module proxy here (later versions carry a replace directive).
bin/temporal:
	GOBIN="$(CURDIR)/bin" $(GO) install github.com/temporalio/cli/cmd/temporal@v1.5.1

# npm_install installs a test directory's packages from its lock file:
# npm ci, except where the directory has a file .npm-install-platform: its
# packages have optional per-platform builds (the opencode binary) whose
# other-platform entries the registry here does not serve, so the lock
# lacks them and npm ci refuses it; npm install --no-save installs the
# same locked versions and leaves the lock file as it is.
npm_install = if [ -f .npm-install-platform ]; then npm install --no-save --no-audit --no-fund --loglevel=error; \
	else npm ci --no-audit --no-fund --loglevel=error; fi

# build-race: the light CLI with the race detector, for the Node suites
# (they need neither Temporal nor telemetry export, so no agentpool-full;
# they start the CLI itself, not the front). After test-go it only compiles
# package main and links (test-go compiled every other package with -race);
# a plain build would compile everything again.
build-race:
	$(step_start)
	$(GO) build $(RACEFLAGS) -o bin/agentpool-race ./cmd/agentpool-light
	$(step_end)

# Node protocol tests: each directory under tests/node with a package.json
# is a suite with its own pinned package-lock.json; they drive the freshly
# built race binary (AGENTPOOL_BIN). tests/node/lib holds what several
# suites import (no package.json: not a suite): the real opencode as a team
# member (AGENTPOOL_ACP_NODE_MODULES, installed by test-deps), run once by
# each of acp, agui, opencode and web.
#
# The suites mostly wait (on agentpool, the clients, opencode, Chromium),
# so each is a target of its own and make runs them side by side (-j),
# each one's output printed together when it ends, with its time;
# clients (the OpenCode TUI in tmux, the longest) starts first. node-deps
# installs their packages first, all at once, before check walks the tree
# (see check). test-node's time counts from node-deps' start.
NODE_ALL    := $(patsubst tests/node/%/package.json,%,$(wildcard tests/node/*/package.json))
NODE_SUITES := $(filter clients,$(NODE_ALL)) $(filter-out clients,$(NODE_ALL))
NODE_TESTS  := $(addprefix test-node-,$(NODE_SUITES))
.PHONY: node-deps $(NODE_TESTS)

node-deps:
	@mkdir -p bin && date +%s > bin/.step-test-node
	@pids=; for s in $(NODE_SUITES); do \
		(cd tests/node/$$s && $(npm_install)) & pids="$$pids $$!"; \
	done; rc=0; for p in $$pids; do wait $$p || rc=1; done; exit $$rc

test-node: $(NODE_TESTS)
	$(step_end)

$(NODE_TESTS): test-node-%: build-race test-deps node-deps
	$(step_start)
	@cd tests/node/$* && AGENTPOOL_BIN="$(CURDIR)/bin/agentpool-race" \
		AGENTPOOL_MCP_NODE_MODULES="$(CURDIR)/tests/mcp/node_modules" \
		AGENTPOOL_ACP_NODE_MODULES="$(CURDIR)/tests/acpagents/node_modules" npm test
	$(step_end)

# soak: the soak tests at full size (package internal/soak): what make test
# checks at a quick size, repeated more (e.g. 20 SIGKILLs of a writer).
soak:
	AGENTPOOL_SOAK=1 $(GO) test -race -count=1 -run 'Kill' ./session/sqlite

# bench: the Go benchmarks (package bench, the id and event micro-benchmarks,
# and the side-by-side with eino in the separate module bench/compare), each
# with -benchmem; writes BENCHMARKS.md (figures, commands, machine). Raw
# outputs go to bin/bench/. BENCHTIME=2000x or 3s to change the run length.
BENCHTIME ?= 1s
# BenchmarkDelegatedCall/store=postgres runs on the server of
# tests/pg/start.sh (skipped when it cannot start one); durable's
# BenchmarkChildren (Temporal against in process) on the dev server
# bin/temporal, with that server as its store when there is one.
bench: bin/temporal
	@pg="$${AGENTPOOL_TEST_POSTGRES:-$$(tests/pg/start.sh || true)}"; \
	AGENTPOOL_TEST_POSTGRES="$$pg" AGENTPOOL_TEMPORAL_BIN="$(CURDIR)/bin/temporal" \
		$(GO) run ./internal/benchreport -go "$(GO)" -benchtime=$(BENCHTIME) -o BENCHMARKS.md -raw bin/bench

# fuzz: every fuzz target, one after another, each for FUZZTIME (a Go
# duration, or Nx for N inputs). Their seed corpora (f.Add and the files
# under each package's testdata/fuzz/FuzzXxx/) run in every `go test`; a
# failing input is written there and stops the run. FUZZMINIMIZETIME bounds
# the minimization of each new interesting input.
FUZZTIME ?= 10m
FUZZMINIMIZETIME ?= 30s
FUZZ_TARGETS = \
	./event:FuzzDecode \
	./config:FuzzParse \
	./server/acp:FuzzServe \
	./server/acp:FuzzLineReader \
	./server/agui:FuzzRunRequest \
	./server/opencode:FuzzRequestBodies \
	./internal/jsonstr:FuzzAppendJSONString

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "== $$name in $$pkg for $(FUZZTIME)"; \
		$(GO) test -run='^$$' -fuzz="^$$name\$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=$(FUZZMINIMIZETIME) $$pkg; \
	done

# run: the CLI itself (go run builds one program; the front would find no
# agentpool-light beside it).
run:
	$(GO) run ./cmd/agentpool-light run "Explain how this agent pool works"

clean:
	rm -rf bin dist
