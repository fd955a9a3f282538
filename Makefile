# go-rpcrdma: build, test, benchmark and fuzz.
#
#   make test    everything CI runs: tools, vet, staticcheck, gofmt, race tests, bounded fuzz
#   make bench   the benchmarks (the main job for now)
#   make fuzz    each native fuzz target for FUZZTIME (default 10s)
#   make lint    vet, staticcheck, gofmt
#   make vm      build the Soft-RoCE VM image (see e2e/README.md)

GO          ?= go
BIN         := $(CURDIR)/bin
STATICCHECK := $(BIN)/staticcheck
# Pinned tool versions (installed into ./bin from the Go module proxy).
STATICCHECK_VERSION := v0.8.2
FUZZTIME    ?= 10s
BENCHTIME   ?= 1s
PKGS        := ./...


.PHONY: all test deps vm tools lint vet staticcheck fmt-check unit fuzz bench clean

all: test

test: deps tools lint unit fuzz

# deps installs the host packages the tests need (idempotent, quiet, fast when
# present): qemu-system-x86 and xz-utils for the VM harness.
deps:
	sh e2e/vm/install-host-deps.sh

# vm builds (or refreshes from the cache) the Soft-RoCE VM image.
vm: deps
	$(GO) run ./cmd/rxevm build

tools: $(STATICCHECK)

$(STATICCHECK):
	GOBIN=$(BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

lint: vet staticcheck fmt-check

vet:
	$(GO) vet $(PKGS)

staticcheck: $(STATICCHECK)
	$(STATICCHECK) $(PKGS)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

# RPCRDMA_VM=1 makes the VM tests mandatory: they fail, not skip, if the VM
# cannot boot.
unit:
	RPCRDMA_VM=1 $(GO) test -race -count=1 -timeout 30m $(PKGS)

fuzz:
	FUZZTIME=$(FUZZTIME) ./scripts/fuzz-all.sh

bench:
	$(GO) test -run='^$$' -bench=. -benchmem -benchtime=$(BENCHTIME) $(PKGS)

clean:
	rm -rf $(BIN)
