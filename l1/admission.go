package l1

import "github.com/dgraph-io/ristretto/v2"

// How entries go through ristretto's admission: the cost put hands it, the
// callbacks that charge an entry, let ristretto's store replace one, and
// take refused and evicted entries out of the index, and the count of
// entries waiting in its write buffer that paces new keys.

// setCost is the cost put hands ristretto for an entry charged cost: 0,
// which makes ristretto ask charge on its own goroutine just before it
// decides, except for a value too large for entry.meta to record.
func (c *Cache) setCost(cost int64) int64 {
	if cost-EntryOverhead > maxValueCharge {
		return cost
	}
	return 0
}

// charge is ristretto's Cost callback: the entry's charge (see
// Config.MaxBytes). It runs on ristretto's goroutine as it takes the entry
// from its write buffer, before admission decides on it.
func (c *Cache) charge(e *entry) int64 {
	c.dequeued(e)
	if c.testHookVerdict != nil {
		c.testHookVerdict(e)
	}
	return EntryOverhead + e.valueCharge()
}

// maxQueued is how many entries put lets wait in ristretto's write buffer
// (32,768 slots) before a Set of a new key waits for ristretto's goroutine:
// a burst of new keys then runs at the pace of admission instead of being
// dropped, and a Set that waits, waits for at most this many verdicts
// (about 2 ms at the 2 µs each measured on a 2-core VM with eviction).
const maxQueued = 1024

// dequeued uncounts e from Cache.queued, once: when ristretto takes it
// from its write buffer (charge), drops it (put), empties the buffer
// (Clear, through onEvict), or stored it at once as an update (put).
func (c *Cache) dequeued(e *entry) {
	for {
		m := e.meta.Load()
		if m&entryQueued == 0 {
			return
		}
		if e.meta.CompareAndSwap(m, m&^entryQueued) {
			c.queued.Add(-1)
			return
		}
	}
}

// shouldUpdate is ristretto's ShouldUpdate callback: whether its store may
// replace prev, the entry it holds for a key, with cur. Only by an entry of
// the same key (a 64-bit hash collision must not merge two keys), and never
// an entry that Delete took out while it was queued: ristretto applies that
// delete later, and would take cur with it. A replacement marks cur
// entryUpdated, which tells put that the store holds it.
func shouldUpdate(cur, prev *entry) bool {
	if prev.check != cur.check || prev.has(entryDeleted) {
		return false
	}
	cur.meta.Or(entryUpdated)
	return true
}

// onReject is ristretto's OnReject callback, on its buffer goroutine: the
// entry, which Get may have served since its Set, leaves the index (unless
// a newer entry of the key replaced it there). A Set that waits for the
// verdict (entryAwaited) learns it from the flag and retries, so that
// refusal is not counted.
func (c *Cache) onReject(it *ristretto.Item[*entry]) {
	e := it.Value
	if e == nil {
		c.ctr.rejected.Add(1)
		return
	}
	awaited := e.has(entryAwaited) // put retries it: not a refusal yet
	e.meta.Or(entryRejected)
	if c.idx.remove(e.hash, e.check, e) != nil && !awaited {
		c.ctr.refused.Add(1)
	}
	if !awaited {
		c.ctr.rejected.Add(1)
	}
}

// onEvict is ristretto's OnEvict callback: for victims of the eviction
// policy, and for everything Clear drops, which is not counted. It takes
// the entry out of the index, unless a newer entry of the key replaced it
// there.
func (c *Cache) onEvict(it *ristretto.Item[*entry]) {
	if e := it.Value; e != nil {
		c.dequeued(e) // Clear drops queued entries through here
		c.idx.remove(e.hash, e.check, e)
	}
	if c.clearing.Load() {
		return
	}
	c.ctr.evictions.Add(1)
}
