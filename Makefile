# agentctl — build, test, lint, benchmark and demo.
# Everything a target needs is installed by the project's own files:
# Go modules by `go mod download`, the TypeScript MCP client by `npm ci`.

GO            ?= go
BIN           := bin/agentctl
TSCLIENT      := testdata/tsclient
STATICCHECK   := honnef.co/go/tools/cmd/staticcheck@v0.8.2
BENCHCOUNT    ?= 6
# The release tag, or "dev"; the commit comes from the build's own VCS
# information, or from COMMIT when it has none (agentctl version).
VERSION       ?= $(shell git describe --tags --match 'v*' 2>/dev/null || echo dev)
COMMIT        ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS       := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
# The Go programs under testdata (fakes, benchmark floors), which ./... leaves
# out: lint checks them too, so a floor that no longer builds shows up here
# and not first in a benchmark run.
TESTDATA_CMDS := $(sort $(patsubst %/,./%,$(dir $(wildcard testdata/*/*.go))))

.PHONY: all build deps generate test test-go lint bench demo e2e-clients clean

all: build

# A static binary (no cgo): it needs no C library on the machine it is copied
# to, and starts about a millisecond sooner without the dynamic loader.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/agentctl

# Go modules and the pinned TypeScript MCP SDK (the independent test client).
deps: $(TSCLIENT)/node_modules/.package-lock.json
	$(GO) mod download

$(TSCLIENT)/node_modules/.package-lock.json: $(TSCLIENT)/package.json $(TSCLIENT)/package-lock.json
	cd $(TSCLIENT) && npm ci --no-audit --no-fund --loglevel=error

# Code made from the repository's data: agents/catalog_gen.go from
# agents/catalog/*.toml (TestCatalogGenerated fails when it is stale).
generate:
	$(GO) generate ./...

# Unit tests, fuzz seeds, testscript end-to-end scripts and the real-client
# tests (TypeScript SDK against the built binary), all under the race detector.
test: deps
	$(GO) test -race -count=1 -timeout 30m ./... ./testdata/fakeclient

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./... $(TESTDATA_CMDS)
	GOOS=darwin $(GO) vet ./...
	GOOS=windows $(GO) vet ./...
	$(GO) run $(STATICCHECK) ./... $(TESTDATA_CMDS)
	@cp go.mod /tmp/agentctl.go.mod.$$$$ && cp go.sum /tmp/agentctl.go.sum.$$$$ && $(GO) mod tidy && \
	  if ! cmp -s go.mod /tmp/agentctl.go.mod.$$$$ || ! cmp -s go.sum /tmp/agentctl.go.sum.$$$$; then \
	    echo "go mod tidy changed go.mod/go.sum; commit the result"; git --no-pager diff go.mod go.sum; exit 1; fi; \
	  rm -f /tmp/agentctl.go.mod.$$$$ /tmp/agentctl.go.sum.$$$$

# Benchmarks with their same-run baselines; see BENCHMARKS.md.
bench: deps
	$(GO) test -run '^$$' -bench . -benchmem -count=$(BENCHCOUNT) -timeout 60m ./...

# The main job, end to end: the same binary gives Auggie and Claude Code the
# tool names their models should see. The first run builds agentctl and
# installs the TypeScript client the demo drives, which takes minutes: each
# step says what it does and about how long before it starts.
demo:
	@echo "make demo: go build of $(BIN); the first build downloads the Go modules and compiles SQLite (a minute or two), later ones take seconds"
	@$(MAKE) --no-print-directory build
	@$(MAKE) --no-print-directory -q $(TSCLIENT)/node_modules/.package-lock.json 2>/dev/null || \
	  echo "make demo: npm ci in $(TSCLIENT): the TypeScript MCP SDK from the npm registry, pinned by its lockfile (about a minute)"
	@$(MAKE) --no-print-directory deps
	@echo "make demo: running testdata/demo.sh (seconds)"
	@bash testdata/demo.sh $(BIN)

# Every catalog client's real program, at its pinned version (installed from
# npm into $XDG_CACHE_HOME/agentctl/e2e-clients), run offline through
# `agentctl instance run` against a fake model API; writes the matrix of what
# worked to docs/CLIENTS.md. Not part of `make test`: it installs the clients and
# takes minutes. E2E_FLAGS narrows it, e.g. E2E_FLAGS='-clients claude-code -transports stdio'.
E2E_FLAGS ?=
e2e-clients: build
	$(GO) run ./testdata/e2eclients -agentctl $(BIN) -out docs/CLIENTS.md $(E2E_FLAGS)

clean:
	rm -rf bin $(TSCLIENT)/node_modules
