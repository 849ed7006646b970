package l1

import (
	"sync/atomic"

	"github.com/dgraph-io/ristretto/v2"
)

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
	// Rejected counts writes refused by admission: TinyLFU judged the new
	// key colder than what it would displace, or the value alone exceeds
	// MaxBytes.
	Rejected uint64
	// Rewrites counts the Sets among them that replaced the value of an
	// entry already cached in place, keeping its expiry (see Set).
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
	// CostBytes is the total cost of the entries currently held, in bytes
	// of stored values; 0 after Close.
	CostBytes int64
}

// counters are the cache-wide counters. The hot ones (hits, misses) live in
// the shards instead.
type counters struct {
	sets        atomic.Uint64
	rewrites    atomic.Uint64
	rejected    atomic.Uint64
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
	return st
}

// onReject is ristretto's OnReject callback. It runs on ristretto's buffer
// goroutine before any Wait queued after the write returns, which is how put
// learns the verdict.
func (c *Cache) onReject(it *ristretto.Item[*entry]) {
	if it.Value != nil {
		it.Value.rejected.Store(true)
	}
	c.ctr.rejected.Add(1)
}

// onEvict is ristretto's OnEvict callback: for victims of the eviction
// policy, and for everything Clear drops, which is not counted. It takes
// the entry out of the read index (see publish).
func (c *Cache) onEvict(it *ristretto.Item[*entry]) {
	if e := it.Value; e != nil {
		e.gone.Store(true)
		c.index.CompareAndDelete(e.key, e)
	}
	if c.clearing.Load() {
		return
	}
	c.ctr.evictions.Add(1)
}
