package l1

import "sync/atomic"

// Stats is a snapshot of a Cache's counters. Counters are cumulative over
// the cache's lifetime (Clear does not reset them) and read without a global
// lock, so a snapshot taken under load may be slightly inconsistent.
type Stats struct {
	// Hits counts Get calls that returned a value.
	Hits uint64
	// Misses counts Get calls that found nothing (absent, expired, closed).
	Misses uint64
	// Sets counts Set and SetIfVersion calls that stored their value.
	Sets uint64
	// Rejected counts writes refused by admission: the entry's charge
	// alone exceeds MaxBytes (Set returns false), or TinyLFU judged the
	// new key colder than what it would displace (decided after Set
	// returned true; counted in Refused too).
	Rejected uint64
	// Refused counts the new entries that ristretto's admission turned
	// away after their Set had returned true and Get had served them: the
	// entry then leaves the cache, as if evicted. It is part of Rejected.
	Refused uint64
	// Rewrites counts the Sets among them that replaced the value of an
	// entry already cached in place (see Set).
	Rewrites uint64
	// Dropped counts writes of new keys that ristretto's write buffer
	// could not take (sustained write contention).
	Dropped uint64
	// Stale counts SetIfVersion calls skipped because their token was out
	// of date.
	Stale uint64
	// Evictions counts entries removed to make room for others.
	Evictions uint64
	// Expirations counts the Gets among Misses that found an entry past
	// its expiry (each such Get counts, until the key is written again or
	// the entry is evicted).
	Expirations uint64
	// CostBytes is the total charge of the entries ristretto holds now,
	// in bytes of memory (see Config.MaxBytes); 0 after Close.
	CostBytes int64
	// Entries is the number of entries Get can find now, including new
	// ones still waiting for ristretto's admission verdict.
	Entries int64
}

// counters are the cache-wide counters. The hot ones (hits, misses) live in
// the shards instead.
type counters struct {
	sets        atomic.Uint64
	rewrites    atomic.Uint64
	rejected    atomic.Uint64
	refused     atomic.Uint64
	dropped     atomic.Uint64
	stale       atomic.Uint64
	evictions   atomic.Uint64
	expirations atomic.Uint64
}

// Stats returns a snapshot of the cache's counters.
func (c *Cache) Stats() Stats {
	st := Stats{
		Sets:        c.ctr.sets.Load(),
		Rewrites:    c.ctr.rewrites.Load(),
		Rejected:    c.ctr.rejected.Load(),
		Refused:     c.ctr.refused.Load(),
		Dropped:     c.ctr.dropped.Load(),
		Stale:       c.ctr.stale.Load(),
		Evictions:   c.ctr.evictions.Load(),
		Expirations: c.ctr.expirations.Load(),
	}
	for i := range c.shards {
		st.Hits += c.shards[i].hits.Load()
		st.Misses += c.shards[i].misses.Load()
	}
	sh := &c.shards[0]
	sh.mu.RLock()
	if !c.closed {
		st.CostBytes = c.cfg.maxBytes - c.rc.RemainingCost()
	}
	sh.mu.RUnlock()
	st.Entries = int64(c.idx.len())
	return st
}
