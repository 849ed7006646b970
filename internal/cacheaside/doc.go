// Package cacheaside checks a cache used the cache-aside way across
// several clients against a source of truth, with porcupine
// (github.com/anishathalye/porcupine) as the linearizability checker.
//
// # The application it models
//
// A source of truth holds one integer per key. Writers update the source
// under a per-key lock and then invalidate the cache (Delete) or write the
// new value into it (Set), still under the lock; some writers are foreign:
// they delete the key with a raw command, as another tool would. Readers
// call GetOrLoad with a loader that reads the source and takes a moment to
// come back (a write may land meanwhile). Each history uses fresh keys.
// With Config.NotFound the source also has absent keys (each key starts
// absent; a removal makes it absent again, then Deletes the key), and the
// loader reports an absent key with NotFound: a read can return "absent".
//
// # The model
//
// Each key is a register (porcupine partitions the history by key). A write
// sets it; a read must return the value the register holds at some point
// of the read's interval, or, with a staleness bound δ > 0, a value it held
// within δ before the read began: a value overwritten by a write that
// returned at time w (or by any later write) may still be read by a read
// that began before w + δ. δ = 0 is linearizability of the cache-aside
// write, which is two steps (the source, then the cache): while a write
// runs, a read that loads from the source may see the new value and one
// that hits the cache the old one, in either order; once it has returned,
// no read that begins sees the value it replaced. It is what a cache with
// no L1 (or an L1 every write reaches synchronously) gives; δ > 0 admits
// an L1 whose invalidation is asynchronous, δ being the documented bound
// of that invalidation.
//
// A write whose cache call failed (Input.Unknown) is modelled as porcupine
// models an operation that never returned: it may take effect at any point
// after its call, or never. When the writing client fences failed
// connections, Bound forbids it to take effect after the first write of
// its key that the fence orders after it. An unknown write that stores its
// value (Ghost) may land after later writes of other clients: its value
// may be read again after them, until its Bound. A write in a window where the
// server may lose acknowledged writes (a failover) is Losable: the value
// it replaced may be read again until a write outside such a window.
//
// # Invariants
//
//   - A history is built only from what the cache API returned and the
//     times the calls were made and returned (time.Since of one base, so
//     monotonic); no internal state of the cache is consulted.
//   - A read that found nothing (a plain miss) is not a value and is not
//     recorded; a GetOrLoad always returns a value, or, with
//     Config.NotFound, "absent" (0) when the key is absent from the source:
//     the loader says so with NotFound, and a cache that caches that answer
//     (negative caching) must not serve it past a write that inserted the
//     key (a removal writes 0).
//   - Operations are paced by a ticker (Config.Pace) or back to back; the
//     load's delay is the only pause inside an operation. A staleness bound
//     δ is only tested by histories that last longer than δ.
package cacheaside
