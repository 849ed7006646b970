# cachekit-go developer commands. `make test` is the command README and CI use.
GO        ?= go
PKGS      ?= ./...
FUZZTIME  ?= 60s
STATICCHECK_VERSION ?= v0.8.2

.PHONY: test test-short lint fmt fuzz bench tools

## test: every test, race detector on, against private redis-servers the tests
## start (scripts/ensure-redis installs redis-server when it is missing).
test:
	./scripts/ensure-redis
	$(GO) test -race -count=1 $(PKGS)
	@echo "== allocation budgets (without -race, where sync.Pool keeps its items)"
	$(GO) test -count=1 -run 'Alloc' $(PKGS)

## test-short: the fast unit tests only (no redis-server needed).
test-short:
	$(GO) test -short -count=1 $(PKGS)

## lint: gofmt, go vet and staticcheck must all be clean.
lint:
	@out=$$(gofmt -l . ); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) $(PKGS)

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

## bench: package micro-benchmarks with allocation counts.
bench:
	$(GO) test -run='^$$' -bench=. -benchmem -count=1 $(PKGS)
