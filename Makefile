# go-rpcrdma: build, test, benchmark and fuzz.
#
#   make test    everything CI runs: tools, vet, staticcheck, gofmt, race tests, bounded fuzz
#   make bench   the benchmarks (the main job for now)
#   make fuzz    each native fuzz target for FUZZTIME (default 10s)
#   make lint    vet, staticcheck, gofmt

GO          ?= go
BIN         := $(CURDIR)/bin
STATICCHECK := $(BIN)/staticcheck
# Pinned tool versions (installed into ./bin from the Go module proxy).
STATICCHECK_VERSION := v0.8.2
FUZZTIME    ?= 10s
BENCHTIME   ?= 1s
PKGS        := ./...


.PHONY: all test tools lint vet staticcheck fmt-check unit fuzz bench clean

all: test

test: tools lint unit fuzz

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

unit:
	$(GO) test -race -count=1 $(PKGS)

fuzz:
	FUZZTIME=$(FUZZTIME) ./scripts/fuzz-all.sh

bench:
	$(GO) test -run='^$$' -bench=. -benchmem -benchtime=$(BENCHTIME) $(PKGS)

clean:
	rm -rf $(BIN)
