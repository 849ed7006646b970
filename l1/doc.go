// Package l1 is CacheKit's in-process cache tier: a thin layer over
// ristretto v2 that stores byte slices under string keys, each with its own
// time to live, within a byte budget.
//
// # What it holds
//
// The CacheKit client puts only sealed bytes here (AES-256-GCM ciphertext of
// the ByteStorage envelope); l1 never sees keys or plaintext and does not
// interpret the bytes. An entry costs the length of its value; MaxBytes bounds
// the sum. Admission and eviction are ristretto's TinyLFU/sampled LFU.
//
// # Guarantees
//
// Read-your-write: once Set returns true, Get in the same process returns
// that value until it expires, is evicted, or a later Set, Delete or Clear
// replaces it, including for keys the cache did not hold before. Ristretto
// queues new keys asynchronously and may still refuse them; Set hides this by
// waiting for the queue when the entry is not visible at once, and reports a
// refusal by returning false. A false Set leaves the key absent, never with
// an older value.
//
// Versioned backfill: Version and SetIfVersion let a reader that missed here
// and fetched from a slower tier store what it found only if no write or
// delete of the key happened meanwhile. Tokens are striped across keys, so a
// backfill can be skipped needlessly (a later miss), never land stale.
//
// Concurrency: all methods are safe for concurrent use. Writes of one key are
// serialized; Get takes no exclusive lock and does not allocate. Clear and
// Close are atomic with respect to the other operations. After Close, Get
// misses, writes return false and Close is a no-op.
//
// Rewrites: a Set of a key already cached replaces the value inside the
// existing entry, without a round through ristretto's policy goroutine, when
// the entry's expiry lies within [3/4 ttl, ttl] from now and the charged
// cost still covers the new value (see Cache.Set). Rewriting a hot key thus
// costs no goroutine hand-off; an entry never outlives the TTL of the write
// that produced its value.
//
// # Time
//
// TTLs are ristretto's, measured with time.Now; TTLJitter shortens each by a
// random fraction to spread expirations. An injected Clock additionally
// decides expiry, for deterministic tests. Ristretto reclaims expired memory
// in a background sweep every few seconds; an expired entry is a miss
// immediately.
//
// # Limits
//
// An entry updated at the moment ristretto's sweep reclaims its expired
// predecessor, or evicts it, may be lost: the next Get misses (it never
// returns an older value). Key strings and ristretto's own bookkeeping are
// not charged against MaxBytes.
package l1
