// Package l1 is CacheKit's in-process cache tier: a thin layer over
// ristretto v2 that stores byte slices under string keys, each with its own
// time to live, within a byte budget.
//
// # What it holds
//
// The CacheKit client puts here exactly the bytes it stores in Redis
// (AES-256-GCM ciphertext with encryption on; the envelope or plain msgpack
// without it), under the caller's cache keys; l1 never sees key material
// and does not interpret the bytes. An entry costs the length of its value; MaxBytes bounds
// the sum. Admission and eviction are ristretto's TinyLFU/sampled LFU.
//
// # Reads
//
// Ristretto decides what stays; Get does not go through it. l1 keeps a
// read index (a sync.Map) of exactly the entries ristretto holds: a write
// publishes its entry once ristretto has it, and ristretto's eviction
// callback, Delete, Clear and Close take entries out. A hit is one
// lock-free map load and one clock read. Ristretto still hears of the
// reads its policy needs: every miss, and each entry's hits up to 32 per
// window of about 67 ms, twice what its frequency sketch can tell apart
// (touch.go has the numbers); those reports take a shard read lock, as
// every Get did before. Without that cap, every 64th read of a hot key
// would wake ristretto's policy goroutine.
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
// serialized; a Get that hits does not allocate and takes no lock, except
// for the few hits per window that are reported to ristretto. Close is
// atomic with respect to the other operations; so is Clear, except that a
// write running concurrently with it may be dropped (see Cache.Clear). Clear
// holds the cache's locks for a constant-time step only; while ristretto
// empties itself, Gets and rewrites proceed, and only a Set of a new key
// may wait for ristretto's admission verdict. After Close, Get misses,
// writes return false and Close is a no-op.
//
// Rewrites: a Set of a key already cached replaces the value inside the
// existing entry, without a round through ristretto's policy goroutine, when
// the cost ristretto charged for the entry still covers the new value (see
// Cache.Set). Rewriting a hot key thus costs no goroutine hand-off.
//
// # Time
//
// Each value carries its own expiry, its TTL (shortened by a random fraction
// of up to TTLJitter, to spread expirations) after the write, on the
// monotonic clock (or an injected Clock, for deterministic tests); Get
// checks it with one clock read and misses from that instant on. Ristretto
// is given no TTL, which keeps its per-Get time.Now (two clock reads) off
// the hit path. An expired entry keeps its place, charged against
// MaxBytes, until the key is written again (the client's next read of it
// from L2 does that) or eviction picks it: expired data is never returned,
// and the budget stays bounded.
//
// # Limits
//
// An entry updated at the moment ristretto evicts it may be lost: the next
// Get misses (it never returns an older value). Key strings (the read index
// holds one per entry) and ristretto's own bookkeeping are not charged
// against MaxBytes.
package l1
