# The project's commands. `make test` is what CI runs (.ci/run).
GO      ?= go
PKGS    ?= ./...

.PHONY: all build test test-go test-node check fmt vet bench fuzz run clean

all: build

build:
	CGO_ENABLED=0 $(GO) build -o bin/agentpool ./cmd/agentpool

# test: formatting, vet, the Go suite with the race detector, then the
# protocol tests with the real npm clients.
test: check test-go test-node

check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './node_modules/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

test-go:
	$(GO) test -race -count=1 $(PKGS)

# Node protocol tests (installs the pinned clients from package-lock.json).
test-node:
	@if [ -f tests/node/package.json ]; then \
		cd tests/node && npm ci --no-audit --no-fund --loglevel=error && npm test; \
	else echo "no node tests"; fi

run:
	$(GO) run ./cmd/agentpool run "Explain how this agent pool works"

clean:
	rm -rf bin
