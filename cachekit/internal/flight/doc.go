// Package flight shares one run of a function among the callers that ask
// for the same key while it runs (single-flight), for single keys and for
// batches, lets callers wait for a key to change (Waiters), and runs a
// caller's loader (Load: its TTL override, its error's mark). It is
// Redis-free: the Client's lease scripts live in package l2; the waiting
// they need lives here.
//
// # Invariants
//
//   - One run per key at a time: a caller that asks while a run is in
//     progress joins it; the next caller after it ends starts a new one.
//   - Every caller's ctx is honoured: a caller whose ctx ends returns
//     ctx.Err() at once, and the run goes on for the others. The run's ctx
//     keeps the first caller's values but not its cancellation; it ends
//     after the timeout, when the owner's background ctx ends (Close), or,
//     for a single-key run, when every caller has stopped waiting. A run
//     nobody waits for any more is forgotten, so no later caller joins a
//     run that may be stuck.
//   - A run's result fields are written once, before its done channel
//     closes; readers read them only after done (as x/sync/singleflight).
//   - A panicking function does not take the process down: the Group's
//     Panic turns it into the run's error.
//   - A Waiters channel holds at most one pending wake; a waiter registered
//     (Add) before a change is woken by that change's Wake, and each Add is
//     followed by exactly one Remove (Await removes its waiter itself).
//   - A loader's error reaches the operation marked (*LoaderError), and only
//     a loader's is: the operation tells "the loader failed" from its own
//     failures by the mark alone, and returns the loader's error unmarked.
//     A recovered panic is named by its value's type only (it may hold data).
package flight
