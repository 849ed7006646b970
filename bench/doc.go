// Package bench holds CacheKit's benchmark suite, kept in its own module so
// the peer it measures against (github.com/go-redis/cache/v9) and the tools
// it runs (benchstat) never become dependencies of the SDK.
//
// The workloads are in this directory's _test.go files (BenchmarkFloor,
// BenchmarkCachekit, BenchmarkPeer) and the allocation budgets are ordinary
// tests (TestAlloc*). cmd/benchir is the callgrind instruction-count gate,
// cmd/benchratio prints the ratio table of one run, and cmd/serverbench
// measures what large synchronous seals do to an HTTP server. README.md
// says how to run each and what the numbers mean.
package bench
