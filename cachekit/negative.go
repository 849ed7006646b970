package cachekit

// Negative caching: with Options.NegativeTTL, a loader's "not found" is
// cached as a negative entry and lands like a value (landing.go: sealed,
// under the load's lease or compare, through the ticket), so every write
// of the key replaces it and invalidation drops its L1 copies. Its form,
// and its sealing and opening, are entry.go's; which "not found" is cached
// is an outcome (cachesAbsence, outcome.go), for how long the loader step
// says (negativeTTL, landing.go); this file holds the cap on that TTL and
// the error a read of one returns.

import "time"

// NegativeHitError is what a read returns for a key whose cached entry is
// a negative entry (a "not found" a loader returned and GetOrLoad cached,
// Options.NegativeTTL) that authenticates under this Client's keys, key
// and tenant and whose sealed not-after has not passed: the key is absent,
// and the cache said so without a load. errors.Is(err, ErrNotFound)
// holds. Get, GetWithTTL, GetBytes, AppendValue and Raw.AppendPayload
// return it; MGet leaves the key out; GetOrLoad and GetOrLoadTTL return it
// without loading when this Client caches negatives (otherwise they load,
// and replace the negative entry). A loader's own "not found" reaches
// GetOrLoad's callers as the loader returned it, and FailOpen's *MissError
// is a miss that loads: neither is a NegativeHitError.
type NegativeHitError struct {
	// Tier is the tier that held the negative entry.
	Tier Tier
}

// Error implements error.
func (e *NegativeHitError) Error() string {
	return "cachekit: not found (a cached not-found, " + string(e.Tier) + ")"
}

// Is makes errors.Is(err, ErrNotFound) hold.
func (e *NegativeHitError) Is(target error) bool { return target == ErrNotFound }

// MaxNegativeTTL caps Options.NegativeTTL and the TTL a loader chooses with
// OverrideTTL for its "not found" (a longer override is cut to it): one
// hour, the longest an insert that no cache write announces (a write to
// the source alone) stays hidden by a cached "not found", and the longest a
// negative entry copied out of Redis can be replayed into it.
const MaxNegativeTTL = time.Hour
