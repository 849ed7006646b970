// Package cachekit is an encrypted two-level cache client: an in-process L1
// (ristretto) in front of Redis (L2), speaking the CacheKit protocol; in
// interop mode (Options.Interop) entries are byte-compatible with the
// Python, Rust and TypeScript SDKs.
//
// # What is stored
//
// A value is encoded with msgpack, wrapped in the protocol's ByteStorage
// envelope (LZ4 block compression and an xxHash3-64 checksum; see
// Options.DisableCompression) and, with Options.Encryption set, sealed with
// AES-256-GCM under a key derived for the tenant with HKDF-SHA256. The
// ciphertext is bound by its additional authenticated data to the tenant,
// the full Redis key (prefix included; the opaque name under a name key),
// the format ("msgpack") and whether
// the envelope was used, so an entry copied to another key, tenant or mode
// fails to authenticate instead of decoding as the wrong value. Stored bytes
// are nonce‖ciphertext‖tag with no header, the same as the TypeScript SDK.
//
// L1 holds exactly the bytes L2 holds: with encryption on, the process heap
// keeps only ciphertext, and each L1 hit is decrypted on the caller's
// goroutine (no goroutine or channel on that path once keys exist, and no
// lock but for the few hits per key reported to ristretto's admission).
//
// # Guarantees
//
//   - Read-your-write: once Set returns nil, a Get in the same process sees
//     the new value or a later one (unless, in L1-only mode, L1 admission
//     refused it, at once or later, which Stats counts in L1Rejected, or,
//     under Reliability.FailOpen, the write was absorbed, which
//     ReliabilityStats counts as Degraded).
//   - L1 never serves what Redis no longer holds because of this process:
//     every L1 write after a Redis round trip lands only if no Set, Delete,
//     invalidation or flush of the key overlapped it, and an L1 entry never
//     outlives its Redis TTL. With Options.Invalidation, writes by anyone
//     else reach L1 through Redis's CLIENT TRACKING, and L1 is cleared and
//     bypassed while tracking is down; where Redis refuses tracking,
//     cachekit-go writes reach it by pub/sub and others' within
//     Invalidation.FallbackL1Lifetime. docs/production.md states the model.
//   - An entry that fails to authenticate or parse is never returned as a
//     value: from L1 it is evicted and the read falls back to Redis; from
//     Redis it is a miss, an *EntryError that matches ErrNotFound and wraps
//     ErrAuthFailed or a *FormatError (the structural guard's own error for
//     a payload the decode bounds refuse), counted in Stats and never
//     degraded by FailOpen; GetOrLoad loads a replacement.
//   - Absence is data (Options.NegativeTTL, off by default): a loader's
//     "not found" is cached as a negative entry that lands as a value does
//     (under the load's lease: an insert made while the loader ran wins),
//     is replaced by every write of the key and dropped from L1 by
//     invalidation, and with encryption is sealed, bound to its key and
//     tenant, and carries a sealed not-after: one forged, copied or
//     replayed in Redis reads as an entry that cannot be opened, never as
//     "not found" (a *NegativeHitError) nor as a value.
//   - TTLs are checked before any I/O: zero and negative TTLs and TTLs over
//     30 days are rejected with ErrInvalidTTL; sub-second TTLs round up to 1s.
//   - Logs never contain key material, values, raw cache keys or the text
//     of any error (a loader's, a KeyProvider's or a marshaller's error may
//     hold a key): a warning names the error by its class and Go type. The
//     Client's own errors never contain key material, values or raw cache
//     keys (a loader's error is returned as the loader made it). Keys
//     appear only as Client.KeyDigest, a keyed digest (derived from a
//     static master key, else random per Client).
//   - Every Redis call carries a deadline (AttemptTimeout, 200 ms by
//     default, also with Options.Reliability nil; a write gets its transfer
//     allowance on top). A call the caller's ctx ended returns an error
//     matching context.Canceled or context.DeadlineExceeded; one the
//     Client's own bound ended, a *BackendError wrapping ErrTimeout.
//
// # Threat model
//
// Redis (and whoever can read or write it) is not trusted with values: it
// sees key names (opaque under a name key, below), sizes and timing, but
// values are confidential and tamper-evident, and so is a cached "not
// found" (a negative entry; without encryption it is bound to its key but
// can be forged by whoever can write Redis, as a plaintext value can). The process holding the master key is trusted: the Client's own
// copies of raw key bytes are zeroed once the keys are derived (the slice in
// Options.Encryption is the caller's: clear it after New if you want it
// gone), and Close makes the derived keys
// unreachable (the AES key schedules themselves cannot be wiped in Go; the
// garbage collector reclaims them).
//
// # Key rotation
//
// Writes use the current master key (encryption.Config.MasterKey); reads
// try it and then up to three previous keys (PreviousKeys) with the same
// AAD. Secure("") reads both from CACHEKIT_MASTER_KEY and
// CACHEKIT_PREVIOUS_MASTER_KEYS. Roll a new key out in three steps, each on
// every instance before the next: add it as a previous key (everyone can
// read it), promote it to current with the old key as previous, and drop
// the old key after the longest TTL in use (Stats.DecryptsByKey shows when
// it is no longer used). A single-step swap would leave instances that
// cannot open each other's entries during the deploy.
//
// # Key names
//
// With encryption.Config.NameKey set (CACHEKIT_NAME_KEY for Secure), or
// supplied by the KeyProvider with NameKeyFromProvider (New then calls the
// provider, within LoadTimeout, and fails when it fails), Redis holds each
// key under Options.KeyPrefix followed by an opaque name: the first 128
// bits of HMAC-SHA-256 under the name key of the tenant, the prefix and the
// key, in base64url (22 bytes). A key with a Redis hash tag ({...}) is
// stored as "{"+opaque(tag)+"}"+opaque(key), so keys sharing a tag share a
// Cluster slot (and Redis sees that they do). The AAD binds the stored
// name. Every call takes and returns the application's keys; Raw's Scan,
// Swap, DeleteMatching and OpenStored work on stored names (Raw.StoredKey).
// The name key is independent of the master keys: their rotation moves no
// name; changing or turning on the name key is a cache flush, which the
// marker each Client keeps under the prefix for its tenant (NameMarker,
// holding the name key's fingerprint; written again within a second of its
// loss) catches: New refuses a different one (*NameKeyMismatchError;
// Options.WarnNameKeyMismatch warns instead), and a running Client that
// finds one counts it (Stats.NameKeyMismatches) and logs an error.
// Redis still learns the prefix, sizes, TTLs, the access pattern and which
// keys share a tag (docs/rotation.md). Interop mode refuses a name key.
//
// # Modes
//
// Auto mode (the default) stores this SDK's own container, readable by any
// cachekit-go client with the same options. Interop mode (Options.Interop)
// uses the protocol's cross-SDK keys and canonical msgpack values, readable
// by every CacheKit SDK in interop mode. Temporal values travel as the
// protocol's sentinel maps, written and revived both ways: a time.Time as
// {"__datetime__": ...}, a protocol.Date (Python's date) as
// {"__date__": ...}, a protocol.TimeOfDay (Python's time) as
// {"__time__": ...}; read into any, a map or a struct, a sentinel becomes
// that Go type, never a map. Auto mode writes time.Time as msgpack's
// timestamp extension and revives no sentinel: its container is this
// SDK's own (no other SDK's auto-mode entry is ever decoded), so a map
// shaped like a sentinel there is a map a Go caller stored.
package cachekit
