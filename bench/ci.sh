#!/usr/bin/env bash
# The benchmark step of CI (.ci/run calls it: `bash bench/ci.sh`). Three
# gates, none of which reads a clock:
#   1. allocation budgets (TestAlloc*), deterministic;
#   2. bench-ir --compare: callgrind instructions per op on the hot
#      paths (allocation-free but for the struct L1 hit's decoded value)
#      against bench/ir-baseline.json;
#   3. a short -count 5 run of the L1 / encryption workloads, printed by
#      benchstat against bench/baseline.txt for the log, failing only when
#      allocs/op or B/op grew (cmd/allocgate); time columns never fail it.
# A baseline update is its own commit, with the reason in its message:
#   make bench-ir BENCHIR_FLAGS=-update   and   bench/ci.sh --update-baseline
# Budget: well under 10 minutes on the 2-core machine (about 3 in practice).
set -euo pipefail
cd "$(dirname "$0")"

# The short benchmark set: L1 and encryption rows only (no Redis needed).
BENCH_RE='^Benchmark(Cachekit|Floor)$/^(L1Hit|L1HitParallel|L1HitParallelDistinct|GetOrLoadHit|SealRaw|OpenRaw|RistrettoGet|MsgpackUnmarshal)$'
BENCH_ARGS=(-run '^$' -bench "$BENCH_RE" -benchmem -count 5 -benchtime 100ms -short .)

if [[ "${1:-}" == "--update-baseline" ]]; then
  go test "${BENCH_ARGS[@]}" | tee baseline.txt
  echo "bench/baseline.txt rewritten: commit it on its own, with the reason"
  exit 0
fi

if ! command -v valgrind >/dev/null; then
  echo "== installing valgrind (Debian package)"
  if [[ $(id -u) -eq 0 ]]; then apt-get update -qq && apt-get install -y -qq valgrind >/dev/null
  else sudo apt-get update -qq && sudo apt-get install -y -qq valgrind >/dev/null; fi
fi

echo "== bench: gofmt, go vet"
out=$(gofmt -l .); if [[ -n "$out" ]]; then echo "gofmt needed:"; echo "$out"; exit 1; fi
go vet ./...

echo "== bench: tool tests and allocation budgets (no -race: sync.Pool keeps its items)"
go test -count=1 -short ./cmd/... ./internal/...
go test -count=1 -short -run 'Alloc' -v . | grep -E '^(=== RUN|--- |PASS|FAIL|ok)' | grep -v '=== RUN'

echo "== bench-ir --compare (callgrind instructions per op)"
go run ./cmd/benchir -compare

echo "== serverbench, tiny (1 MiB values, both paths): it must run; its numbers never gate"
go run ./cmd/serverbench --value-size 1MiB --requests 4 --concurrency 2 --mode both

echo "== short benchmark run (-count 5) vs bench/baseline.txt"
new=$(mktemp)
trap 'rm -f "$new"' EXIT
go test "${BENCH_ARGS[@]}" > "$new"
go tool benchstat baseline.txt "$new" || true   # for the log only
go run ./cmd/allocgate baseline.txt "$new"
