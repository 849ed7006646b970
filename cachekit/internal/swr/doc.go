// Package swr is the bookkeeping of stale-while-revalidate: what the
// Client knows about each GetOrLoad key's expiry, when a key is due for a
// background refresh, and the bound on refreshes running at once.
//
// # Invariants
//
//   - At most one refresh per key at a time, and at most the State's
//     maximum at once: a due key found while all slots are busy is not
//     refreshed (and counted as skipped); a later read tries again.
//   - A key is due only while it has not expired: an expired entry is never
//     served stale, whatever this package remembers.
//   - A failed refresh delays the key's next one by RetryAfter.
//   - Once Wait was called, Go starts no refresh: none begins while Close
//     waits, or after it.
//   - Memory is bounded: at most MaxTracked keys are remembered; past it,
//     expired keys are dropped, and new keys are not tracked while the
//     table is full of live ones.
//   - Claim draws its jitter from math/rand/v2: refresh points are spread,
//     not secret.
//
// The package needs nothing of cachekit.Client: the Client tells it of
// every write, delete and flush, and runs the refreshes it claims.
package swr
