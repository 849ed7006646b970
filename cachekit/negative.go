package cachekit

// Negative caching: with Options.NegativeTTL, a loader's "not found" is
// cached as a negative entry and lands like a value (landing.go: sealed,
// under the load's lease or compare, through the ticket), so every write
// of the key replaces it and invalidation drops its L1 copies. Its form,
// and its sealing and opening, are entry.go's; which "not found" is cached
// is an outcome (cachesAbsence, outcome.go), for how long the loader step
// says (negativeTTL, landing.go), and what a read of one returns is a
// *NegativeHitError (errors.go); this file holds the cap on that TTL.

import "time"

// MaxNegativeTTL caps Options.NegativeTTL and the TTL a loader chooses with
// OverrideTTL for its "not found" (a longer override is cut to it): one
// hour, the longest an insert that no cache write announces (a write to
// the source alone) stays hidden by a cached "not found", and the longest a
// negative entry copied out of Redis can be replayed into it.
const MaxNegativeTTL = time.Hour
