package l1

// How Gets reach ristretto's frequency sketch. Get finds entries in the
// read index, not through ristretto's Get, so it reports accesses itself:
// every miss, and the hits of each entry up to touchesPerWindow in every
// window of 2^touchWindowShift ns (about 67 ms) of the expiry clock.
//
// The sketch cannot tell more hits apart than that: it counts in 4-bit
// cells, its estimate tops out at 16 (15 plus the doorkeeper bit), and it
// halves every cell after as many increments as it has counters. So a key
// read often still reaches the top of the sketch in every window, and
// admission and eviction judge keys much as they would with every Get
// reported, while a key read a million times a second costs ristretto a few
// hundred reports, not a million: on a 2-core VM each batch of 64 reports
// wakes ristretto's policy goroutine, at tens of microseconds when it has
// gone idle. Each entry's windows start at its own phase (bits of its
// key's hash, random per cache), so the hot keys of a busy cache do not
// all report at the same instants.
const (
	touchWindowShift = 26
	touchesPerWindow = 32
	touchCountBits   = 6 // holds 0..touchesPerWindow
)

// touch reports one access of the key hashed to h to ristretto (its Get
// does nothing else of use here). The shard read lock keeps Close from
// stopping ristretto under the call.
func (c *Cache) touch(sh *shard, h uint64) {
	sh.mu.RLock()
	if !c.closed {
		c.rc.Get(h)
		if c.testHookTouch != nil {
			c.testHookTouch()
		}
	}
	sh.mu.RUnlock()
}

// touchHit reports a hit of e, read at now, unless e has had its
// touchesPerWindow reports in now's window. e.touched holds the window of
// its last report above touchCountBits and that window's count below, so a
// saturated hot key costs one atomic load and a compare. Concurrent hits
// race for each report with a CAS; losers skip theirs, as ristretto's own
// buffers drop accesses under contention.
func (c *Cache) touchHit(sh *shard, e *entry, now int64) {
	w := uint64(now+e.phase()) >> touchWindowShift << touchCountBits
	t := e.touched.Load()
	if t == w|touchesPerWindow {
		return
	}
	next := w | 1
	if t&^(1<<touchCountBits-1) == w {
		next = t + 1
	}
	if e.touched.CompareAndSwap(t, next) {
		c.touch(sh, e.hash)
	}
}
