# cachekit-go developer commands. `make test` is the command README and CI use.
GO        ?= go
PKGS      ?= ./...
FUZZTIME  ?= 60s
STATICCHECK_VERSION ?= v0.8.2

.PHONY: test test-short lint fmt fuzz bench bench-ir tools

## test: every test, race detector on, against private redis-servers the tests
## start (scripts/ensure-redis installs redis-server when it is missing).
test:
	./scripts/ensure-redis
	$(GO) test -race -count=1 $(PKGS)
	@echo "== tests that run only without -race: allocation budgets, TinyLFU admission (sync.Pool keeps its items), transfers paced in wall time"
	$(GO) test -count=1 -run 'Alloc|Admission|SlowLink|SendsValueOnce' $(PKGS)
	@echo "== the Client's suite with auto-pipelining off (CACHEKIT_TEST_AUTOPIPELINE=0; on is the default)"
	CACHEKIT_TEST_AUTOPIPELINE=0 $(GO) test -count=1 ./cachekit/
	@echo "== examples/prometheus (its own module: the exporter stays out of the library's go.mod)"
	cd examples/prometheus && $(GO) test -race -count=1 ./...

## test-short: the fast unit tests only (no redis-server needed).
test-short:
	$(GO) test -short -count=1 $(PKGS)

## lint: gofmt, go vet and staticcheck must all be clean.
lint:
	@out=$$(gofmt -l . ); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) $(PKGS)
	cd examples/prometheus && $(GO) vet ./... && $(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

fmt:
	gofmt -w .

## fuzz: run each fuzz target for FUZZTIME (not part of CI).
fuzz:
	@set -e; grep -rl --include='*_test.go' '^func Fuzz' . | while read f; do \
	  dir=$$(dirname $$f); \
	  for fn in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$f | sed 's/^func //'); do \
	    echo "== $$dir $$fn ($(FUZZTIME))"; \
	    $(GO) test -run='^$$' -fuzz="^$$fn$$" -fuzztime=$(FUZZTIME) $$dir || exit 1; \
	  done; \
	done

## bench: the bench/ module's workloads (floor, ours, peer go-redis/cache) in
## BENCH_COUNT rounds, then the benchstat table and the ratio table, each
## ratio paired within rounds. cmd/benchrounds runs every row in its own
## process, each row next to the reference it is compared with, in an order
## that reverses every other round; one redis-server (CACHEKIT_REDIS_URL, else
## a private one) serves the whole run. BENCH_RUN is a regexp on full row
## names, e.g. BENCH_RUN='Set|GoRedisSet'.
BENCH_COUNT ?= 6
BENCHTIME   ?= 200ms
BENCH_RUN   ?= .
BENCH_OUT   ?= $(or $(TMPDIR),/tmp)/cachekit-bench.txt
BENCH_BIN   ?= $(or $(TMPDIR),/tmp)/cachekit-bench.test
bench:
	./scripts/ensure-redis
	cd bench && $(GO) test -c -o $(abspath $(BENCH_BIN)) .
	cd bench && $(GO) run ./cmd/benchrounds -bin $(abspath $(BENCH_BIN)) -count $(BENCH_COUNT) \
	  -benchtime $(BENCHTIME) -filter '$(BENCH_RUN)' -o $(abspath $(BENCH_OUT))
	@echo "== benchstat"
	cd bench && $(GO) tool benchstat $(abspath $(BENCH_OUT))
	@echo "== ratios (per-round pairs of this run)"
	cd bench && $(GO) run ./cmd/benchratio $(abspath $(BENCH_OUT))

## bench-ir: callgrind instructions per op on the allocation-free hot paths.
## BENCHIR_FLAGS=-compare gates against bench/ir-baseline.json, -update rewrites it.
BENCHIR_FLAGS ?=
bench-ir:
	cd bench && $(GO) run ./cmd/benchir $(BENCHIR_FLAGS)
