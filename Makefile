# go-rpcrdma: build, test, benchmark and fuzz.
#
#   make demo        cmd/rpcrdma-demo: the kernel's NFS client mounts rdma-nfsd over RDMA in the VM: copy, compare, settings, a short table
#   make test        everything CI runs: tools, vet, staticcheck, gofmt, race tests (VM tests included), every benchmark once, bounded fuzz
#   make bench       cmd/rpcrdma-bench: the NFS over RDMA matrix in the VM (BENCHFLAGS, e.g. -quick or -d 1s -json out.json)
#   make microbench  the Go micro-benchmarks of every package (ns/op, B/op, allocs/op)
#   make benchcheck  every Go benchmark once (-benchtime 1x), as a test: none may fail
#   make fuzz        each native fuzz target for FUZZTIME (default 10s)
#   make lint    vet, staticcheck, gofmt
#   make vm      build the Soft-RoCE VM image (see e2e/README.md)

GO          ?= go
BIN         := $(CURDIR)/bin
STATICCHECK := $(BIN)/staticcheck
# Pinned tool versions (installed into ./bin from the Go module proxy).
STATICCHECK_VERSION := v0.8.2
FUZZTIME    ?= 10s
BENCHTIME   ?= 1s
BENCHFLAGS  ?=
PKGS        := ./...


.PHONY: all test deps vm demo tools lint vet staticcheck fmt-check unit benchcheck fuzz bench microbench clean

all: test

test: deps tools lint unit benchcheck fuzz

# deps installs the host packages the tests need (idempotent, quiet, fast when
# present): qemu-system-x86 and xz-utils for the VM harness; gcc,
# libibverbs-dev and librdmacm-dev for the rdmacore provider (cgo).
deps:
	sh internal/vm/install-host-deps.sh

# vm builds (or refreshes from the cache) the Soft-RoCE VM image.
vm: deps
	$(GO) run ./cmd/rxevm build

tools: $(STATICCHECK)

$(STATICCHECK):
	GOBIN=$(BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

lint: vet staticcheck fmt-check

# Both also check the guest-only files (build tag e2eguest: the tests that
# run inside the VM), which a plain build leaves out; and the transport's
# debug build (build tag rpcrdmadebug: its lock-order checks).
vet:
	$(GO) vet $(PKGS)
	$(GO) vet -tags e2eguest $(PKGS)
	$(GO) vet -tags rpcrdmadebug ./transport/

staticcheck: $(STATICCHECK)
	$(STATICCHECK) $(PKGS)
	$(STATICCHECK) -tags e2eguest $(PKGS)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

# RPCRDMA_VM=1 makes the VM tests mandatory: they fail, not skip, if the VM
# cannot boot. TestLockCheck runs in the transport's debug build; the NFS
# server's and client's tests run again over RPC-over-RDMA version 2
# (RPCRDMA_TEST_VERSION2, nfs/internal/nfstest). The
# -timeout is a guard against a hang, not a target: package e2e takes about
# 15-20 minutes on an idle two-core host and about 55 beside a CPU-bound
# job (docs/testing.md).
unit:
	RPCRDMA_VM=1 $(GO) test -race -count=1 -timeout 90m $(PKGS)
	$(GO) test -tags rpcrdmadebug -count=1 -run TestLockCheck ./transport/
	RPCRDMA_TEST_VERSION2=1 $(GO) test -race -count=1 ./nfs/server/ ./nfs/client/

# benchcheck runs every benchmark of every package once, so that a
# benchmark whose checks no longer hold fails here rather than rot until
# someone measures. With -race, as unit: it reuses unit's build and finds
# races in the benchmarks too. Package e2e has no benchmarks (its guest
# benchmarks run in the VM tests), so nothing here needs the VM.
benchcheck:
	$(GO) test -race -count=1 -run '^$$' -bench . -benchtime 1x $(PKGS)

fuzz:
	FUZZTIME=$(FUZZTIME) ./scripts/fuzz-all.sh

# demo installs what it needs (deps, the VM image), boots the VM and shows
# the Linux kernel client mounting cmd/rdma-nfsd over RDMA (Soft-RoCE).
demo: deps
	$(GO) run ./cmd/rpcrdma-demo

# bench runs cmd/rpcrdma-bench in the VM: every workload, size, depth and
# inline setting against rdma-nfsd and knfsd (long under TCG: see
# docs/benchmarks.md; BENCHFLAGS=-quick for the CI subset).
bench: deps
	$(GO) run ./cmd/rpcrdma-bench bench $(BENCHFLAGS)

microbench:
	$(GO) test -run='^$$' -bench=. -benchmem -benchtime=$(BENCHTIME) $(PKGS)

clean:
	rm -rf $(BIN)
