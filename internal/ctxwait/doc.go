// Package ctxwait holds the one wait the module's layers share: a sleep
// that a context cuts short. It imports nothing of the module.
//
// # Invariants
//
//   - Sleep(ctx, d) returns as soon as d has elapsed or ctx is done,
//     whichever comes first: true means d elapsed, false means ctx was
//     done. When both have happened by the time it looks (a ctx already
//     done and d ≤ 0, say), either may be reported.
//   - Sleep stops its timer before it returns and starts no goroutine. It
//     does not read ctx.Err(): a caller that needs the reason asks ctx.
package ctxwait
