package l1

import (
	"hash/maphash"
	"math"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/dgraph-io/ristretto/v2"

	hot "github.com/cachekit-io/cachekit-go/internal/stripe"
)

// Cache is an in-process cache of immutable byte slices with per-entry TTLs,
// bounded by what its entries cost in memory (see Config.MaxBytes). It is
// safe for concurrent use. See the package documentation for its
// guarantees.
type Cache struct {
	rc *ristretto.Cache[uint64, *entry]
	// idx finds each key's entry: the read path. A hit is one lock-free
	// probe here, and ristretto hears of it through touch. A write
	// publishes its entry before handing it to ristretto; OnEvict,
	// OnReject, Delete, Clear and Close take it out (see index.go).
	idx index
	// arena holds the small values (see arena.go).
	arena arena
	cfg   settings
	seed  maphash.Seed // the key's hash: index slot, ristretto key, locks
	seed2 maphash.Seed // the key's check: the rest of its fingerprint
	// epoch anchors expiry times without a Clock: they are monotonic
	// nanoseconds since epoch, one clock read cheaper than time.Now.
	epoch time.Time

	// closed is written only with every shard write lock held and read
	// only with a shard read lock held.
	closed bool
	// clearing is set while ristretto empties itself on our behalf, so
	// the entries it drops are not counted as evictions.
	clearing atomic.Bool
	// clearMu serializes Clear and Close, which empty or stop ristretto
	// outside the shard locks.
	clearMu sync.Mutex

	shards  [numShards]shard
	stripes [numStripes]stripe
	ctr     counters
	// queued counts the entries handed to ristretto that its goroutine has
	// not taken from its write buffer yet (entryQueued; see put).
	queued atomic.Int64

	// testHookLocked, when set, runs inside a write after the version
	// check, with the key's stripe locked. Tests use it to interleave.
	testHookLocked func()
	// testHookTouch, when set, runs for every access reported to
	// ristretto (see touch).
	testHookTouch func()
	// testHookClear, when set, runs inside Clear after the index swap,
	// with no lock but clearMu held, before ristretto is emptied.
	testHookClear func()
	// testHookVerdict, when set, runs on ristretto's goroutine before it
	// decides on a new entry (from the Cost callback). Tests block it to
	// hold an admission in flight.
	testHookVerdict func(*entry)
}

// New returns an empty Cache. It fails with a *ConfigError when cfg is
// invalid. Call Close to stop the cache's background goroutines.
func New(cfg Config) (*Cache, error) {
	s, err := resolve(cfg)
	if err != nil {
		return nil, err
	}
	c := &Cache{cfg: s, seed: maphash.MakeSeed(), seed2: maphash.MakeSeed(), epoch: time.Now()}
	c.arena.init(s.maxBytes)
	c.idx.init(s.maxBytes, &c.arena)
	rc, err := ristretto.NewCache(&ristretto.Config[uint64, *entry]{
		NumCounters: s.numCounters,
		MaxCost:     s.maxBytes,
		BufferItems: ristrettoBufferSize,
		// The cost given to Set is the entry's whole charge.
		IgnoreInternalCost: true,
		// Keys reach ristretto already hashed: it neither hashes a key
		// again nor sees one.
		KeyToHash:    func(h uint64) (uint64, uint64) { return h, 0 },
		ShouldUpdate: shouldUpdate,
		Cost:         c.charge,
		OnEvict:      c.onEvict,
		OnReject:     c.onReject,
	})
	if err != nil {
		// resolve has already enforced everything ristretto checks.
		return nil, &ConfigError{Field: "Config", Reason: "rejected by ristretto"}
	}
	c.rc = rc
	return c, nil
}

// Get returns the bytes stored under key and true, or nil and false when the
// key is absent, expired, or the cache is closed. The returned slice is
// shared with the cache: the caller must not modify it, and while it keeps
// a small value, the value arena's chunk holding it (up to 64 KiB) stays
// allocated. A hit takes no lock
// (except the few reported to ristretto, see touch.go) and does not
// allocate; ristretto allocates a 512-byte batch per 64 reports.
func (c *Cache) Get(key string) ([]byte, bool) {
	// Hit and miss counters live on a random shard's cache line, so
	// goroutines reading the same hot key on different cores do not
	// contend for one word.
	sh := &c.shards[hot.Index(numShards)]
	h := c.keyHash(key)
	e := c.lookup(h, key)
	if e == nil {
		// Ristretto counts every miss, as its own Get would: a key
		// requested often gets in at its next Set.
		c.touch(sh, h)
		sh.misses.Add(1)
		return nil, false
	}
	// e.load, by hand: the compiler would not inline it.
	s := e.seq.Load()
	data, n, exp := e.data.Load(), e.n.Load(), e.exp.Load()
	if s&1 != 0 || e.seq.Load() != s {
		return c.getSlow(sh, e)
	}
	now := c.now()
	c.touchHit(sh, e, now)
	if now >= exp {
		sh.misses.Add(1)
		c.ctr.expirations.Add(1)
		return nil, false
	}
	sh.hits.Add(1)
	return unsafe.Slice(data, n), true
}

// getSlow is the rest of Get for an entry a rewrite is storing into.
func (c *Cache) getSlow(sh *shard, e *entry) ([]byte, bool) {
	val, exp := e.loadSlow()
	now := c.now()
	c.touchHit(sh, e, now)
	if now >= exp {
		sh.misses.Add(1)
		c.ctr.expirations.Add(1)
		return nil, false
	}
	sh.hits.Add(1)
	return val, true
}

// lookup returns key's entry (key hashes to h), or nil. It takes no lock:
// it probes the table its segment holds now. The check is computed only
// for an entry whose hash matches.
func (c *Cache) lookup(h uint64, key string) *entry {
	t := c.idx.segment(h).tab.Load()
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		e := t.slots[i].Load()
		if e == nil {
			return nil
		}
		if e.hash == h && e != tombstone && e.check == c.keyCheck(key) {
			return e
		}
	}
}

// Remaining returns how long key's entry has left before it expires (at
// most the ttl it was stored with), or false when the cache does not hold
// key or the entry has expired. It counts neither a hit nor a miss.
func (c *Cache) Remaining(key string) (time.Duration, bool) {
	e := c.lookup(c.keyHash(key), key)
	if e == nil {
		return 0, false
	}
	_, exp := e.load()
	left := exp - c.now()
	if left <= 0 {
		return 0, false
	}
	return time.Duration(left), true
}

// Set stores val under key for ttl (shortened by the configured jitter) and
// advances the key's Version. A small value is copied into the value
// arena; a larger one (see the package doc) is kept: the caller must not
// modify it afterwards (nor append to it: its whole capacity is charged).
//
// When Set returns true, every later Get in this process returns val until
// the entry expires, is evicted, or a later Set, Delete or Clear replaces
// it; this holds for new keys too. A new key is served from the read index
// at once, while ristretto's admission decides on it in the background: a
// refusal then takes the entry out, like an eviction (counted in
// Stats.Rejected and Stats.Refused). Set waits for ristretto's goroutine
// only when it is thousands of new entries behind (see the package doc).
// When Set returns false the key is absent from the cache (any older value
// is gone): the entry's charge exceeds MaxBytes or the value is 4 GiB or
// longer (Stats.Rejected), ristretto's write buffer was full
// (Stats.Dropped), ttl was not positive, or the cache is closed.
//
// A Set of a key the cache already holds replaces the value inside the
// existing entry when the new value's charge is no more than the one the
// entry was charged for, nor under half of it; Stats counts these as
// Rewrites.
func (c *Cache) Set(key string, val []byte, ttl time.Duration) bool {
	return c.write(key, val, ttl, 0, false)
}

// Wait blocks until ristretto has decided on every new entry queued before
// the call (admitted, refused or evicted it), so that Stats.CostBytes
// counts them. Reads and writes never need it: Get serves a new entry from
// the moment its Set returns. It returns at once on a closed cache.
func (c *Cache) Wait() {
	sh := &c.shards[0]
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	if !c.closed {
		c.rc.Wait()
	}
}

// Delete removes key and advances its Version, so that a backfill which
// read the key before the Delete cannot bring it back.
func (c *Cache) Delete(key string) {
	h := c.keyHash(key)
	c.keyLocked(h, func(st *stripe) bool {
		st.ver.Add(1)
		c.drop(h, c.keyCheck(key))
		return true
	})
}

// drop takes key (h, check) out of the index and out of ristretto. The
// caller holds the key's stripe lock. An entry still queued for admission
// is marked deleted: ristretto may store it before it applies the delete
// queued behind it, and no write may replace it in between (shouldUpdate).
func (c *Cache) drop(h uint64, check uint32) {
	if e := c.idx.remove(h, check, nil); e != nil {
		e.meta.Or(entryDeleted)
	}
	c.rc.Del(h)
}

// Clear removes every entry and advances every Version. A Get, Set or
// Delete that returns after Clear returns sees none of the entries Clear
// removed; one that runs while Clear does may see its own write dropped
// (a miss, never an older value). Clear holds the cache's locks only to
// swap in empty index tables (made beforehand) and advance the Versions:
// emptying ristretto, which takes milliseconds on a large cache (its
// frequency sketch is sized to it), runs after those locks are released,
// so Gets, Deletes and rewrites never wait for it, nor does a Set unless it
// waits for ristretto's queue (see Set). Clear on a closed cache does
// nothing.
func (c *Cache) Clear() {
	c.clearMu.Lock()
	defer c.clearMu.Unlock()
	fresh := c.idx.fresh()
	c.lockAll()
	closed := c.closed
	if !closed {
		c.idx.reset(fresh)
		c.arena.reset()
		c.bumpAll()
	}
	c.unlockAll()
	if closed {
		return
	}
	if c.testHookClear != nil {
		c.testHookClear()
	}
	// What ristretto drops here reaches onEvict, which unpublishes each
	// entry (the ones published since the swap included) but counts none
	// as an eviction.
	c.clearing.Store(true)
	c.rc.Clear()
	c.clearing.Store(false)
}

// Close drops every entry and stops the cache's goroutines. It waits for
// operations in flight and for a Clear in progress; afterwards Get misses
// and writes return false. It is idempotent.
func (c *Cache) Close() {
	c.clearMu.Lock()
	defer c.clearMu.Unlock()
	c.lockAll()
	defer c.unlockAll()
	if c.closed {
		return
	}
	c.clearing.Store(true)
	c.rc.Close()
	c.closed = true
	var empty [indexSegments]*table
	for i := range empty {
		empty[i] = newTable(minSegmentSlots)
	}
	c.idx.reset(empty)
	c.arena.reset()
	c.bumpAll()
}

// write is Set (conditional false) and SetIfVersion (conditional true).
func (c *Cache) write(key string, val []byte, ttl time.Duration, v Version, conditional bool) bool {
	return c.locked(key, func(h uint64, st *stripe) bool {
		if conditional && Version(st.ver.Load()) != v {
			c.ctr.stale.Add(1)
			return false
		}
		st.ver.Add(1)
		if c.testHookLocked != nil {
			c.testHookLocked()
		}
		return c.put(h, c.keyCheck(key), val, ttl)
	})
}

// put stores one entry of the key (h, check). The caller holds the key's
// stripe lock, so no other write of this key runs concurrently.
//
// The entry is published in the index first, then handed to ristretto. For
// a key ristretto already stores, its store takes the entry synchronously
// (shouldUpdate marks it entryUpdated). A new key waits in ristretto's write
// buffer for admission; Get serves it meanwhile, and a refusal or eviction
// unpublishes it (onReject, onEvict). Two cases wait for the buffer: a Set
// that finds maxQueued entries queued (pacing a burst of new keys to
// ristretto's goroutine), and an entry that replaces one ristretto has not
// stored yet, since ristretto would refuse the second of two queued new
// entries of one key.
func (c *Cache) put(h uint64, check uint32, val []byte, ttl time.Duration) bool {
	if len(val) == 0 {
		val = nil // an empty slice of a caller's array (a Get's value) keeps nothing alive
	}
	vc := c.valueCharge(val)
	cost := EntryOverhead + vc
	if ttl <= 0 || cost > c.cfg.maxBytes || len(val) > maxValueLen {
		if ttl > 0 {
			c.ctr.rejected.Add(1) // admission would refuse it anyway
		}
		c.drop(h, check) // never leave an older value behind a failed write
		return false
	}
	exp := c.deadline(c.cfg.jittered(ttl))
	val = c.arena.put(h, val)
	if c.rewrite(h, check, val, exp, vc) {
		return true
	}
	if c.queued.Load() >= maxQueued {
		// Ristretto's goroutine is behind: wait for it rather than let
		// its write buffer fill and drop new keys.
		c.rc.Wait()
	}
	e := newEntry(h, check, val, exp, vc)
	for try := 0; ; try++ {
		prev := c.idx.publish(e)
		if prev != nil && try == 0 {
			e.meta.Or(entryAwaited) // this Set may wait for e's verdict
		}
		sc := c.setCost(cost)
		if sc == 0 { // ristretto will call charge when it takes e
			c.queued.Add(1)
			e.meta.Or(entryQueued)
		}
		if !c.rc.Set(h, e, sc) {
			// Only a new entry can be dropped: ristretto's store holds
			// nothing of this key that the index serves.
			c.dequeued(e)
			c.ctr.dropped.Add(1)
			c.idx.remove(h, check, e)
			return false
		}
		if e.has(entryUpdated) {
			c.dequeued(e) // in the store already; only its cost is queued
		}
		if prev == nil || e.has(entryUpdated) || try > 0 {
			e.meta.And(^uint32(entryAwaited))
			return true
		}
		// prev is still queued for admission (or was just refused or
		// evicted): see what ristretto made of both, and if it kept prev
		// and refused e as a duplicate, send e again, now an update of
		// prev (or, if ristretto dropped prev meanwhile, a new entry).
		c.rc.Wait()
		rejected := e.has(entryRejected)
		e.meta.And(^uint32(entryAwaited | entryRejected))
		if !rejected {
			return true
		}
	}
}

// rewrite stores val, expiring at exp, in the entry already indexed for the
// key, without going through ristretto, when the entry's value charge
// covers val's (vc) and is at most twice it (so the charge stays an upper
// bound within a factor of two). The entry no longer references the value
// it held, and the rewrite allocates nothing. The value carries its own
// expiry, so nothing else differs from a
// full write, which for an existing key costs ristretto a hand-off to its
// policy goroutine: on a busy machine, a thread wake-up per Set of a hot
// key. The caller holds the key's stripe lock.
func (c *Cache) rewrite(h uint64, check uint32, val []byte, exp int64, vc int64) bool {
	e := c.idx.get(h, check)
	if e == nil {
		return false
	}
	if ec := e.valueCharge(); vc > ec || 2*vc < ec || vc > maxValueCharge {
		return false
	}
	if !c.idx.rewrite(e, val, exp) {
		return false // evicted meanwhile: a full write
	}
	c.ctr.rewrites.Add(1)
	return true
}

// valueCharge is what val is charged: its record in the arena, rounded up
// to 8 bytes, or, for a value kept as its own allocation, its capacity
// rounded up to Go's size class.
func (c *Cache) valueCharge(val []byte) int64 {
	if r := c.arena.recBytes(len(val)); r > 0 {
		return (r + 7) &^ 7
	}
	return allocSize(cap(val))
}

// deadline returns the expiry of a value written now with ttl (> 0),
// saturating instead of wrapping for TTLs near the Duration limit.
func (c *Cache) deadline(ttl time.Duration) int64 {
	now := c.now()
	if exp := now + int64(ttl); exp > now {
		return exp
	}
	return math.MaxInt64
}

// now is the time expiry is measured in: Config.Clock's Unix nanoseconds
// when a Clock is set, else monotonic nanoseconds since the cache was made.
func (c *Cache) now() int64 {
	if c.cfg.clock != nil {
		return c.cfg.clock().UnixNano()
	}
	return int64(time.Since(c.epoch))
}

// lockAll takes every shard write lock, in index order.
func (c *Cache) lockAll() {
	for i := range c.shards {
		c.shards[i].mu.Lock()
	}
}

// unlockAll releases what lockAll took.
func (c *Cache) unlockAll() {
	for i := range c.shards {
		c.shards[i].mu.Unlock()
	}
}
