// Package l1 is CacheKit's in-process cache tier: byte slices under string
// keys, each with its own time to live, within a byte budget, kept in its
// own lock-free read index and value arena, with ristretto v2 deciding
// admission and eviction.
//
// # What it holds
//
// The CacheKit client puts here exactly the bytes it stores in Redis
// (AES-256-GCM ciphertext with encryption on; the envelope or plain msgpack
// without it), under the caller's cache keys; l1 never sees key material
// and does not interpret the bytes. It keeps no copy of a key either: an
// entry is known by a 96-bit fingerprint of it (see Limits).
//
// An entry is charged what it costs in memory: EntryOverhead (the entry
// and its slots in ristretto's maps, measured per Go version) plus its
// value's bytes. A small value (up to an eighth of the arena's chunk: 8
// KiB at caps from 16 MiB, 512 bytes below 1 MiB) is copied into the
// value arena (arena.go), a log of large chunks, and charged its length
// plus a 10-byte header, rounded up to 8; a larger one is kept as given
// and charged its capacity rounded up to Go's size class. MaxBytes bounds
// the sum; FixedBytes(MaxBytes) is the rest (ristretto's admission
// sketch, its write buffer, the read index's tables), allocated by New.
// Admission and eviction are ristretto's TinyLFU/sampled LFU.
//
// The arena is what keeps the heap near the charge when the cache evicts:
// separate value objects evicted at random leave the survivors of a GC
// cycle spread over spans Go cannot compact, while the arena copies the
// live records out of its oldest chunks once its chunks exceed 9/8 of
// the live records plus two chunks, and the collector frees the emptied
// chunks (see arena.go).
//
// # Reads
//
// Ristretto decides what stays; Get does not go through it. l1 keeps a
// read index (an open-addressed table, index.go) of the entries ristretto
// holds and of new ones it has not decided on yet: a write publishes its
// entry before handing it to ristretto, and ristretto's eviction and
// rejection callbacks, Delete, Clear and Close take entries out. A hit is
// two hashes of the key, one lock-free probe and one clock read. Ristretto
// still hears of the reads its policy needs: every miss, and each entry's
// hits up to 32 per window of about 67 ms, twice what its frequency sketch
// can tell apart (touch.go has the numbers); those reports take a shard
// read lock, as every Get did before. Without that cap, every 64th read of a hot key
// would wake ristretto's policy goroutine.
//
// # Guarantees
//
// Read-your-write: once Set returns true, Get in the same process returns
// that value until it expires, is evicted, or a later Set, Delete or Clear
// replaces it, including for keys the cache did not hold before. Ristretto
// queues new keys and decides on them on its own goroutine; Set does not
// wait for that: Get serves the new entry from the index meanwhile, and a
// refusal, when it comes, takes the entry out like an eviction (counted in
// Stats.Refused). A false Set leaves the key absent, never with an older
// value. A Set waits for ristretto only when 1,024 new entries are queued
// already (a burst of new keys then runs at the pace of admission instead of
// being dropped), or when its entry replaces one still queued (ristretto
// would refuse the second of two queued entries of a key).
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
// holds the cache's locks only to swap in empty index tables; while
// ristretto empties itself, Gets, Deletes, rewrites and Sets that need not
// wait for ristretto's queue proceed. After Close,
// Get misses, writes return false and Close is a no-op.
//
// Invalidation never races a pending admission into a stale read: ristretto
// only ever takes entries out of the index, by identity, so a Delete or
// Clear that removed a queued entry is final, and an entry Delete removed
// while queued is never replaced in ristretto's store by a later write
// (the delete queued behind it would take that write with it).
//
// Rewrites: a Set of a key already cached replaces the value inside the
// existing entry, without a round through ristretto's policy goroutine, when
// the charge of the entry's first value still covers the new one and is at
// most twice it (see Cache.Set). Rewriting a hot key thus costs no
// goroutine hand-off.
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
// Get misses (it never returns an older value). Keys are identified by two
// seeded hashes (64 + 32 bits): two keys with the same fingerprint would
// share an entry, with probability about n²/2⁹⁷ for n keys held (under
// 10⁻¹⁷ for a million); the seeds are random per cache, so such keys cannot
// be chosen. Heap in use exceeds MaxBytes + FixedBytes by what the charges
// leave out: Go's maps in ristretto under eviction churn, the arena's dead
// records (see arena.go), and the entries (48 bytes each) and large values
// of one GC cycle's victims that share spans with survivors. What a full
// cache measures is stated once, in bench/README.md ("L1 memory";
// TestMemorySweep reproduces it).
package l1
