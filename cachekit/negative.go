package cachekit

// Negative caching: with Options.NegativeTTL, a loader's "not found" is
// cached as a negative entry and lands like a value (landing.go: sealed,
// under the load's lease or compare, through the ticket), so every write
// of the key replaces it and invalidation drops its L1 copies. Its form,
// and its sealing and opening, are entry.go's; this file holds the policy:
// what is cached, for how long, and the error a read of one returns.

import (
	"errors"
	"time"
)

// cachesAbsence reports whether the loader's error err is a "not found"
// this Client caches: negative caching on, err matching ErrNotFound, and
// not a guess (FailOpen's *MissError or an entry that could not be
// opened, met by a loader that reads a cache itself).
func (c *Client) cachesAbsence(err error) bool {
	return c.negTTL > 0 && errors.Is(err, ErrNotFound) && !isMissError(err) && !isUnopenable(err)
}

// needsLoad reports whether a GetOrLoad read that returned err loads: a
// miss, FailOpen's *MissError or an entry that cannot be opened do; a
// NegativeHitError does not when this Client caches negatives (a Client
// that does not loads and replaces it).
func (c *Client) needsLoad(err error) bool {
	return err != nil && loadable(err) && !(c.negTTL > 0 && isNegativeHit(err))
}

// negativeTTL is the TTL of a loader's cached "not found": its override
// (capped at MaxNegativeTTL), or Options.NegativeTTL.
func (c *Client) negativeTTL(override time.Duration) time.Duration {
	if override > 0 {
		return min(override, MaxNegativeTTL)
	}
	return c.negTTL
}

// loadable reports whether a Get error means "load a fresh value".
func loadable(err error) bool {
	var ee *EntryError
	return errors.Is(err, ErrNotFound) || errors.As(err, &ee)
}
