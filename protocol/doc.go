// Package protocol holds the byte formats of the CacheKit protocol, the part
// of cachekit-go that must agree bit for bit with the Python, Rust and
// TypeScript SDKs. It is a leaf: pure functions over byte slices and
// strings, no network, file or clock access, no goroutines, no global
// mutable state beyond internal buffer pools, and no imports from the rest
// of this module. The cache client composes it with the encryption, l1 and
// l2 packages.
//
// # What lives here
//
//   - AAD v0x03 (aad.go): the additional authenticated data that binds an
//     AES-GCM ciphertext to its tenant, its full backend key, its format
//     token and its compressed flag, in the four-component form and in the
//     five-component form cachekit-py writes.
//   - The ByteStorage envelope (envelope*.go): LZ4 block compression plus an
//     xxHash3-64 checksum of the original bytes, wrapped in a positional
//     MessagePack array. The writer emits only the canonical bin encoding;
//     the reader also accepts the legacy array-of-integers encoding forever.
//   - Canonical MessagePack (canonical*.go): one byte string per value, for
//     interop argument hashing and interop values.
//   - Bounded decoding (bounded*.go): a structural pre-scan and decoder for
//     untrusted MessagePack that caps nesting depth and never allocates for
//     lengths the input cannot back.
//   - Interop keys and values (interop*.go): the cross-SDK key layout and
//     the plain, single-document value format.
//   - Auto-mode cache keys (cachekey*.go): key generation for cachekit-go's
//     own entries.
//   - TTL rules (ttl.go): which stated time-to-live values are legal and how
//     sub-second ones round.
//
// # Guarantees
//
// Every writer produces exactly the bytes the protocol's published vectors
// pin, except where the protocol itself says bytes are not canonical: LZ4
// output differs between conforming compressors, so envelopes are checked
// by decoding them and by encoding known fields. Every reader is written for
// hostile input. It returns an error instead of panicking, checks every size
// and ratio limit before sizing any buffer from a header, computes limits in
// 64-bit arithmetic, and rejects malformed, truncated or trailing bytes.
//
// Hot-path functions use the append style of cipher.AEAD: they take a dst
// slice, append to it, and allocate nothing when dst already has the
// capacity they document. On error they return dst unchanged.
//
// Errors of the byte codecs (TTL errors aside: they match ErrInvalidTTL
// only) are *FormatError values whose Op names the codec and whose cause is
// one of the package's sentinels (ErrMalformed, ErrTooLarge, ErrChecksum,
// ...), for errors.Is. Their text describes the defect, never the data:
// no key material, plaintext or raw cache key appears in an error.
//
// # Compatibility
//
// The formats follow the upstream CacheKit protocol specification (AAD
// v0x03, envelope protocol 1.1 with wire-format vectors up to 1.4.0,
// interop/v1). A change to any byte this package writes is a protocol change
// and needs an upstream decision first; new readers are added alongside old
// ones, because stored entries never expire on a schedule.
package protocol
