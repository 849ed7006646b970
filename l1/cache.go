package l1

import (
	"hash/maphash"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/ristretto/v2"

	hot "github.com/cachekit-io/cachekit-go/internal/stripe"
)

// Cache is an in-process cache of immutable byte slices with per-entry TTLs,
// bounded by the total length of the stored values. It is safe for
// concurrent use. See the package documentation for its guarantees.
type Cache struct {
	rc *ristretto.Cache[string, *entry]
	// index maps each key to the entry ristretto holds for it (string ->
	// *entry). It is the read path: a hit is one lock-free load here, and
	// ristretto hears of it through touch. Writers publish an entry once
	// ristretto has admitted it; OnEvict, Delete, Clear and Close remove it.
	index sync.Map
	cfg   settings
	seed  maphash.Seed
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

	// testHookLocked, when set, runs inside a write after the version
	// check, with the key's stripe locked. Tests use it to interleave.
	testHookLocked func()
	// testHookTouch, when set, runs for every access reported to
	// ristretto (see touch).
	testHookTouch func()
	// testHookClear, when set, runs inside Clear after the index swap,
	// with no lock but clearMu held, before ristretto is emptied.
	testHookClear func()
}

// entry is what ristretto stores: the current value plus the bookkeeping
// that read-your-write, in-place rewrites and the injectable clock need.
type entry struct {
	// cur is the value Get returns. A rewrite of a cached key may swap it
	// (see rewrite); it points at first until then.
	cur atomic.Pointer[stored]
	// first is the value the entry was created with.
	first stored
	// cost is what ristretto charged for the entry.
	cost int64
	// key is the entry's key, for OnEvict to unpublish it.
	key string
	// rejected is set by ristretto's OnReject callback when admission
	// turned the entry away.
	rejected atomic.Bool
	// gone is set by OnEvict once ristretto has dropped the entry; a
	// writer that publishes the entry afterwards takes it back out.
	gone atomic.Bool
	// touched counts the Gets that reported the entry to ristretto in
	// the current window (see touchHit).
	touched atomic.Uint64
	// phase offsets the entry's windows (see touchPhase).
	phase int64
}

// stored is one byte slice with its expiry (see Cache.now).
type stored struct {
	val []byte
	exp int64
}

// newEntry returns an entry holding v, charged cost.
func newEntry(key string, v stored, cost int64) *entry {
	// The entry outlives the call, so it keeps its own copy of key: a key
	// sliced from a larger string must not keep that string alive.
	e := &entry{first: v, cost: cost, key: strings.Clone(key), phase: touchPhase()}
	e.cur.Store(&e.first)
	return e
}

// New returns an empty Cache. It fails with a *ConfigError when cfg is
// invalid. Call Close to stop the cache's background goroutines.
func New(cfg Config) (*Cache, error) {
	s, err := resolve(cfg)
	if err != nil {
		return nil, err
	}
	c := &Cache{cfg: s, seed: maphash.MakeSeed(), epoch: time.Now()}
	rc, err := ristretto.NewCache(&ristretto.Config[string, *entry]{
		NumCounters:        s.numCounters,
		MaxCost:            s.maxBytes,
		BufferItems:        ristrettoBufferSize,
		IgnoreInternalCost: true,
		OnEvict:            c.onEvict,
		OnReject:           c.onReject,
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
// shared with the cache: the caller must not modify it. A hit takes no lock
// (except the few reported to ristretto, see touch.go) and does not
// allocate; ristretto allocates a 512-byte batch per 64 reports.
func (c *Cache) Get(key string) ([]byte, bool) {
	// Hit and miss counters live on a random shard's cache line, so
	// goroutines reading the same hot key on different cores do not
	// contend for one word.
	sh := &c.shards[hot.Index(numShards)]
	ei, ok := c.index.Load(key)
	if !ok {
		// Ristretto counts every miss, as its own Get would: a key
		// requested often gets in at its next Set.
		c.touch(sh, key)
		sh.misses.Add(1)
		return nil, false
	}
	e := ei.(*entry)
	v := e.cur.Load()
	now := c.now()
	c.touchHit(sh, key, e, now)
	if now >= v.exp {
		sh.misses.Add(1)
		c.ctr.expirations.Add(1)
		return nil, false
	}
	sh.hits.Add(1)
	return v.val, true
}

// Remaining returns how long key's entry has left before it expires (at
// most the ttl it was stored with), or false when the cache does not hold
// key or the entry has expired. It counts neither a hit nor a miss.
func (c *Cache) Remaining(key string) (time.Duration, bool) {
	ei, ok := c.index.Load(key)
	if !ok {
		return 0, false
	}
	left := ei.(*entry).cur.Load().exp - c.now()
	if left <= 0 {
		return 0, false
	}
	return time.Duration(left), true
}

// Set stores val under key for ttl (shortened by the configured jitter) and
// advances the key's Version. The cache keeps val: the caller must not
// modify it afterwards.
//
// When Set returns true, every later Get in this process returns val until
// the entry expires, is evicted, or a later Set, Delete or Clear replaces
// it; this holds for new keys too. When it returns false the key is absent
// from the cache (any older value is gone): admission rejected val (counted
// in Stats.Rejected), ristretto's write buffer was full (Stats.Dropped),
// ttl was not positive, or the cache is closed.
//
// A Set of a key the cache already holds replaces the value inside the
// existing entry when the new value is no longer than the one the entry
// was charged for, nor under half of it; Stats counts these as Rewrites.
func (c *Cache) Set(key string, val []byte, ttl time.Duration) bool {
	return c.write(key, val, ttl, 0, false)
}

// Delete removes key and advances its Version, so that a backfill which
// read the key before the Delete cannot bring it back.
func (c *Cache) Delete(key string) {
	h := c.keyHash(key)
	sh := c.shardOf(h)
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	if c.closed {
		return
	}
	st := c.stripeOf(h)
	st.mu.Lock()
	defer st.mu.Unlock()
	st.ver.Add(1)
	c.rc.Del(key)
	c.index.Delete(key)
}

// Clear removes every entry and advances every Version. A Get, Set or
// Delete that returns after Clear returns sees none of the entries Clear
// removed; one that runs while Clear does may see its own write dropped
// (a miss, never an older value). Clear holds the cache's locks only to
// swap the read index and advance the Versions, a constant-time step:
// emptying ristretto, which takes milliseconds on a large cache (its
// frequency sketch is sized to it), runs after those locks are released,
// so Gets and rewrites never wait for it (a Set of a new key may wait
// for ristretto's admission verdict, as it always does). Clear on a closed
// cache does nothing.
func (c *Cache) Clear() {
	c.clearMu.Lock()
	defer c.clearMu.Unlock()
	c.lockAll()
	closed := c.closed
	if !closed {
		c.index.Clear()
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
	c.index.Clear()
	c.bumpAll()
}

// write is Set (conditional false) and SetIfVersion (conditional true).
func (c *Cache) write(key string, val []byte, ttl time.Duration, v Version, conditional bool) bool {
	return c.locked(key, func(st *stripe) bool {
		if conditional && Version(st.ver.Load()) != v {
			c.ctr.stale.Add(1)
			return false
		}
		st.ver.Add(1)
		if c.testHookLocked != nil {
			c.testHookLocked()
		}
		return c.put(key, val, ttl)
	})
}

// put stores one entry. The caller holds the key's stripe lock, so no other
// write of this key runs concurrently: whatever ristretto holds for the key
// was written by an earlier, completed put.
//
// Ristretto applies a write to an existing key synchronously, but queues a
// new key in its write buffer, where admission may still reject it. put
// therefore checks whether the entry is visible right away and, if not,
// waits for the buffer to drain and reads the admission verdict that the
// OnReject callback left on the entry.
func (c *Cache) put(key string, val []byte, ttl time.Duration) bool {
	cost := max(int64(len(val)), 1)
	if ttl <= 0 || cost > c.cfg.maxBytes {
		if ttl > 0 {
			c.ctr.rejected.Add(1) // admission would refuse it anyway
		}
		c.rc.Del(key) // never leave an older value behind a failed write
		c.index.Delete(key)
		return false
	}
	ttl = c.cfg.jittered(ttl)
	v := stored{val: val, exp: c.deadline(ttl)}
	if c.rewrite(key, v, cost) {
		return true
	}
	e := newEntry(key, v, cost)
	// No TTL for ristretto: expiry is v.exp, checked by Get, which spares
	// every hit ristretto's time.Now. An expired entry is reclaimed when
	// the key is written again or when eviction picks it.
	if !c.rc.Set(key, e, cost) {
		// Only a new key can be dropped, so ristretto holds nothing
		// older; an index entry can only be one it is evicting now.
		c.ctr.dropped.Add(1)
		c.index.Delete(key)
		return false
	}
	if _, visible := c.rc.GetTTL(key); !visible {
		// Not updated in place nor admitted yet: wait for the verdict.
		c.rc.Wait()
		if e.rejected.Load() {
			c.index.Delete(key)
			return false
		}
	}
	c.publish(e)
	return true
}

// publish makes e, which ristretto holds, the entry Get finds for its key.
// OnEvict may have dropped e since: it sets gone before it unpublishes, and
// publish checks gone after it stores, so one of the two removes e.
func (c *Cache) publish(e *entry) {
	c.index.Store(e.key, e)
	if e.gone.Load() {
		c.index.CompareAndDelete(e.key, e)
	}
}

// rewrite stores v in the entry already cached for key, without going
// through ristretto, when the entry's charged cost covers v and is at most
// twice v's (so ristretto's accounting stays an upper bound within a factor
// of two). The value carries its own expiry, so nothing else differs from
// a full write, which for an existing key costs ristretto a hand-off to its
// policy goroutine: on a busy machine, a thread wake-up per Set of a hot
// key. The caller holds the key's stripe lock.
func (c *Cache) rewrite(key string, v stored, cost int64) bool {
	ei, ok := c.index.Load(key)
	if !ok {
		return false
	}
	e := ei.(*entry)
	if e.gone.Load() || cost > e.cost || 2*cost < e.cost {
		return false
	}
	e.cur.Store(&v)
	c.ctr.rewrites.Add(1)
	return true
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
