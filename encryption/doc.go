// Package encryption seals and opens CacheKit cache values with AES-256-GCM
// under per-tenant keys, byte-compatible with the other CacheKit SDKs.
//
// The package knows nothing about caches, envelopes or AAD layouts: it takes
// plaintext and AAD bytes and returns sealed bytes, and back. The protocol
// package builds the AAD (version 0x03: tenant, full cache key, format,
// compressed flag); the client glues the two together. Of the rest of the
// module this package imports only internal/stripe (a contention-free
// counter for its statistics).
//
// # Sealed format
//
// A sealed value is the 12-byte nonce, then the ciphertext (as long as the
// plaintext), then the 16-byte tag: Overhead (28) bytes more than the
// plaintext, with no header and no key id. The AAD is authenticated but not
// stored, so a reader must rebuild the identical AAD bytes.
//
// # Keys
//
// A master key is exactly 32 random bytes, usually given as 64 hex digits
// (ParseMasterKeyHex, the CACHEKIT_MASTER_KEY form). Raw-byte entry points
// (Config.MasterKey, Fingerprint) take exactly 32 bytes and nothing else, so
// the ASCII of a hex string can never be mistaken for a key. For each master
// key the Manager derives the tenant's encryption key with HKDF-SHA256:
// the salt is "cachekit_v1_", the domain behind a one-byte length, and the
// tenant behind a two-byte big-endian length; the info is the domain
// ("encryption"). The tenant defaults to "default", is at most 1024 bytes of
// UTF-8 and must be the same string the caller puts into the AAD. A key's
// fingerprint is the first 16 bytes of SHA-256("key_fingerprint_v1" ‖ the
// derived encryption key); it identifies a key without revealing it.
//
// A name key (Config.NameKey, or Keys.NameKey from a provider with
// Config.NameKeyFromProvider; ParseNameKeyHex for CACHEKIT_NAME_KEY) is a
// separate 32-byte key a cache client uses to store key names opaque. The
// Manager only validates it (and hands a provider's out through NameKey):
// it derives nothing from it, and rotating the master keys leaves it alone.
//
// # Nonces
//
// Nonces are never random. Each derived current key owns a nonce source: an
// 8-byte instance id, unique within the process (a process-wide sequence
// that starts at a random 64-bit value), followed by a 4-byte counter that
// starts at zero. Every encryption reserves its counter value with one
// atomic add before it seals, so concurrent callers can never share a nonce.
// The counter stops before 2^32-1: from then on every encryption under that
// key fails with ErrNonceExhausted, forever, rather than wrap. The remedy is
// key rotation. Readers do not care how nonces were made; values sealed by
// SDKs that use random nonces open the same way.
//
// # Key rotation
//
// A keyring is the current master key plus at most three decrypt-only
// previous keys (MaxPreviousKeys). Encryption always uses the current key.
// Decryption tries the current key, then each previous key in order, with the
// same AAD every time; only an authentication failure moves on, and a value
// that no key opens fails with the single error ErrAuthFailed. Nothing on
// the wire names the key, so rotation needs no format change. Configurations
// the protocol refuses are refused at load, never trimmed: more than three
// previous keys, a previous key listed twice, or the current key among the
// previous ones (a key that was once current must never encrypt again,
// because its nonce budget is already partly spent). Rotate forward: add the
// new key as a previous key everywhere, then promote it to current and demote
// the old one, then drop the old one after the longest TTL in use. After a
// compromise, install a fresh current key with no previous keys and flush.
//
// # Guarantees
//
//   - Confidentiality and integrity of each value under the tenant's key,
//     bound to its AAD: a value moved to another cache key, tenant, format or
//     compression flag fails authentication.
//   - One opaque error for every authentication failure; no partial
//     plaintext is ever returned, and the bytes written past len(dst) are
//     zeroed on failure.
//   - Errors never contain key material, plaintext, AAD or cache keys.
//   - With keys derived, EncryptNow and DecryptNow allocate nothing when dst
//     has room, and take no lock.
//   - Bad input returns an error; nothing in this package panics on it.
//
// # Threat model
//
// The backend (Redis, or anyone who can read or write it) is untrusted: it
// sees only sealed bytes and may replay, swap, truncate or corrupt them.
// Swaps and corruption are detected; replay of a value under its own key and
// AAD is not (a cache has no freshness guarantee beyond TTL). Processes that
// hold the master keys are trusted. Memory hygiene is best effort: master
// key copies and derived keys are zeroed as soon as the AES-GCM instances
// exist, but the AES key schedule inside crypto/aes cannot be wiped, and
// keys that passed through environment variables or strings may linger.
// Treat exposure of a keyring configuration as exposure of every key in it.
// Rotation cannot protect values an attacker captured while holding the old
// key.
//
// # Compatibility
//
// The derivation, fingerprint, nonce layout and sealed format are those of
// the CacheKit protocol; the package is tested against the protocol's
// encryption and interop vectors and against Wycheproof AES-GCM. Keys are
// portable across SDKs only at exactly 32 bytes, which is all this package
// accepts.
package encryption
