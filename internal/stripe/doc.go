// Package stripe provides a counter for hot paths that many goroutines bump
// at once. A single atomic counter bounces its cache line between cores on
// every increment; a Counter spreads increments over padded cells, picked
// by the address of the calling goroutine's stack (Index), and adds them up
// only when read. It is internal plumbing for this module's packages, not
// public API.
//
// # Invariants
//
//   - A Counter is 16 cells of 64 bytes each: the atomic counts of two
//     cells are 64 bytes apart, so no two share a 64-byte cache line. The
//     zero Counter counts zero.
//   - Add and Tick are one atomic add on one cell: wait-free, and they
//     allocate nothing. Tick also returns that cell's new count (1 on the
//     cell's first Tick), so a caller can act on one in every k of its
//     adds without a second shared count.
//   - Load reads every one of the 16 cells once, atomically, and returns
//     their sum. It is exact when no Add runs meanwhile, and, as no cell
//     ever decreases, a Load never returns less than an earlier Load by the
//     same goroutine (short of the count wrapping past 2^64).
//   - Index(n), for n a power of two, returns a value in [0, n). Which
//     cell a goroutine gets affects only contention, never a Counter's
//     total.
//   - The package imports nothing of this module.
package stripe
