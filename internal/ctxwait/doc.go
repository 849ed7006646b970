// Package ctxwait holds the waits the module's layers share: a sleep that
// a context cuts short, a tick until one ends (Every), and a Repeater that
// ticks in its own goroutine until it is stopped. It imports nothing of
// the module.
//
// # Invariants
//
//   - Sleep(ctx, d) returns as soon as d has elapsed or ctx is done,
//     whichever comes first: true means d elapsed, false means ctx was
//     done. When both have happened by the time it looks (a ctx already
//     done and d ≤ 0, say), either may be reported.
//   - Sleep stops its timer before it returns and starts no goroutine. It
//     does not read ctx.Err(): a caller that needs the reason asks ctx.
//   - A Repeater's function is never called after its Stop returned; once
//     its background ctx ended, at most one more call starts (a tick that
//     was already due). Stop is safe on nil and more than once.
package ctxwait
