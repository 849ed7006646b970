// Package nemesis runs cache-aside histories while faults are injected, and
// checks them with porcupine (github.com/anishathalye/porcupine) against
// internal/cacheaside's model: Jepsen's method, applied to a cache client.
//
// # The histories
//
// Each history runs Config.Goroutines goroutines spread over the Clients
// (some may be Remote: a Client in a child process, served by Serve) on
// Config.Keys fresh keys. A writer takes the key's lock, gives the source
// of truth a new value, then writes the cache: Set, Delete, SetIfAbsent
// (then Delete when it stored nothing), or a foreign raw DEL or SET of
// bytes no Client opens. A reader calls GetOrLoad, MGetOrLoad of every key
// of the history, or Get, with a loader that reads the source and pauses
// up to Config.MaxLoadDelay. Times are the parent's (monotonic, since the
// history's start); a Remote call's interval contains the child's.
//
// With Config.Register the cache is the data (a session or token store):
// no source, no loads, no locks; writers Set fresh values or Delete,
// readers Get (a miss reads absent) and sometimes Delete what they just
// read (a logout). Every Delete has a token of its own, so a deleted value
// that comes back, a write landing twice, is a violation.
//
// # The faults
//
// Schedule injects one fault at a time, of a kind drawn from its Kinds
// (one kind: a run of that kind; several: mixed), for a duration drawn
// from [0, MaxFault], with a pause of [Gap/2, Gap] before each: proxy
// delays of requests or replies, resets, black holes (redistest.Proxy);
// SIGSTOP, kill and restart without persistence, eviction, FLUSHDB, SCRIPT
// FLUSH, tracking connections killed (redistest.Server); a Sentinel
// failover. Every fault is healed before the next starts and before the
// schedule returns. Eviction, restart and FLUSHDB delete keys: to the
// model these are deletes by the environment, which change no source
// value, so they need no event in the history.
//
// # The check
//
// A failed read, and a read that found nothing, is no value and is left
// out. A failed write (a timeout, ErrOutcomeUnknown, a refusal) is kept as
// porcupine keeps an operation that never returned: it may take effect at
// any point from its call to the end of the history (cacheaside.Input's
// Unknown), or, when the Clients fence failed connections (Config.Fenced),
// up to the same Client's next write to the same server that succeeded
// (on a cluster, Config.Cluster: of a key in the same hash slot, Slot),
// and before that Client's next successful write of the same key (Bound):
// the promise of cachekit's rule 22, and what the audit's reordered write
// broke.
//
// Each history is checked at δ = 0, then up the ladder 1 ms ... 5 s, and
// the least δ under which it is linearizable is counted (Result.Needed);
// its verdict is that δ against Config.Delta. A history that fails within
// Delta is checked again with the writes acknowledged in a loss window
// (Fault.Loses, from Config.LossWindow before the fault to its end)
// allowed to be lost; if that passes it is counted Lossy, not Failed. A
// failing history's visualisation, with the faults that overlapped it, is
// written to Config.Artifacts.
//
// # Invariants
//
//   - A history is built only from what the Clients returned and when the
//     calls were made and returned; no internal state of a cache is read.
//   - Every linearizable history that allows it gets a planted stale read
//     (a value a definite write replaced more than the history's δ before
//     the read began); the model must reject it (Result.CanaryMisses is
//     0), so a checker that accepts everything cannot pass a run.
//   - Faults have durations (a timer); nothing waits for a condition by
//     sleeping, and the only wait for a condition (a failover's old
//     master becoming a replica) is testwait's.
//   - The Schedule runs on the caller's goroutine, so a harness failure
//     (a server that cannot restart) fails the test from its goroutine.
package nemesis
