package l1

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// Version is a per-key write token. Read it with Cache.Version before
// fetching a value from a slower tier, and hand it to Cache.SetIfVersion:
// the backfill lands only if no Set, SetIfVersion, Delete or Clear touched
// the key in between.
//
// Tokens are striped: keys that share a stripe share a counter, so a write
// to one key can make a backfill of another key skip. That costs a later L1
// miss, never a stale read.
type Version uint64

// Stripe and shard counts. Both are powers of two so a mask selects them.
const (
	numStripes = 4096 // version counters + per-key write serialization
	numShards  = 64   // lifecycle locks + hit/miss counters
)

// stripe serializes writers of the keys that hash to it and carries their
// shared version counter. Readers of ver never take mu.
type stripe struct {
	mu  sync.Mutex
	ver atomic.Uint64
}

// shard guards the ristretto cache against Close/Clear for the keys that
// hash to it and counts their hits and misses. Every operation takes one
// shard's read lock; Clear and Close take all write locks. The counters sit
// on the same cache line as the lock the hot path already writes, so they
// cost no extra line transfer between cores.
type shard struct {
	mu     sync.RWMutex
	hits   atomic.Uint64
	misses atomic.Uint64
	_      [64 - 24 - 16]byte // pad to a 64-byte cache line
}

// keyHash hashes key with the cache's private seed. The low bits pick the
// shard (and the index slot), bits 32 and up the stripe, the top bits the
// index segment. The hash is also the key's key in ristretto.
func (c *Cache) keyHash(key string) uint64 {
	return maphash.String(c.seed, key)
}

// keyCheck hashes key with a second private seed: with keyHash, a 96-bit
// fingerprint that stands for the key in the index and in ristretto, which
// keep no copy of it. Two keys that share a fingerprint would share an
// entry; for n keys held that happens with probability about n²/2⁹⁷ (under
// 10⁻¹⁷ for a million keys), and the seeds are random per cache, so a key
// cannot be chosen to collide. With encryption on, a value served under the
// wrong key would fail to authenticate (its AAD binds the full key).
func (c *Cache) keyCheck(key string) uint32 {
	return uint32(maphash.String(c.seed2, key))
}

func (c *Cache) shardOf(h uint64) *shard   { return &c.shards[h&(numShards-1)] }
func (c *Cache) stripeOf(h uint64) *stripe { return &c.stripes[(h>>32)&(numStripes-1)] }

// Version returns the current write token of key. It takes no lock and
// never blocks.
func (c *Cache) Version(key string) Version {
	return Version(c.stripeOf(c.keyHash(key)).ver.Load())
}

// SetIfVersion stores val like Set, but only if the key's token still equals
// v, that is, nothing wrote or deleted the key since v was read. It is meant
// for backfills from a slower tier: an old value read before a concurrent
// Set or Delete can never overwrite the newer state. A landed backfill also
// advances the token, so of several backfills holding the same token only
// the first lands. It returns true when val was stored.
func (c *Cache) SetIfVersion(key string, val []byte, ttl time.Duration, v Version) bool {
	return c.write(key, val, ttl, v, true)
}

// bumpAll advances every stripe's token. Callers hold every shard write
// lock, so no writer is between its version check and its store.
func (c *Cache) bumpAll() {
	for i := range c.stripes {
		c.stripes[i].ver.Add(1)
	}
}
