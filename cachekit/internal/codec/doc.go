// Package codec turns cachekit's values into msgpack payloads and back: the
// value codec of both modes, below sealing and above nothing of the Client.
//
// Auto mode (Append, Decode) is github.com/vmihailenco/msgpack/v5 with
// shortest-width integers, struct fields named by their `msgpack` tag (or,
// with jsonTags, their `json` tag where they have no msgpack tag), and
// internal/structdec in front of msgpack.Unmarshal for the struct shapes
// Get sees most. Interop mode (AppendInterop, DecodeInterop) is the
// protocol's canonical MessagePack, written by every CacheKit SDK, with
// times, dates and times of day as the temporal sentinel maps. Bin reads a
// []byte or string value without decoding it.
//
// # Invariants
//
//   - Values and payloads only. The package never sees a cache key, a
//     tenant, key material, a nonce or a sealed byte: it runs after open and
//     before seal, on plaintext. It performs no I/O and holds no state but
//     the pools below.
//   - Bounds are the caller's. Decode trusts that payload has passed
//     protocol.CheckMsgpack under the caller's limits (cachekit's open does
//     so with MaxValueBytes and protocol.DefaultMaxDepth, and its encode
//     checks every payload it writes the same way); DecodeInterop and
//     AppendInterop's generic pass decode under protocol.DefaultDecodeLimits.
//     Append itself enforces no size: the caller checks what it produced.
//   - What is refused: a nil destination; in interop mode, a value holding an
//     extension type other than the timestamp (-1), which has no canonical
//     form, a malformed timestamp extension, and, for a typed destination, a
//     map key no Go map can hold (bytes, an array, a map, an ext; *any takes
//     it). A refusal is an error; nothing is dropped silently.
//   - Append-style: Append and AppendInterop write into dst's spare capacity
//     and return the extended slice (nil on error); Bin copies nothing, its
//     result aliases its argument.
//   - Error text is prefixed "cachekit: ", not "codec: ": these errors reach
//     cachekit's callers unchanged (wrapped in its *EntryError on a read),
//     and this package is nobody's public API.
//
// # Pools
//
// Encoders (one pool per tag mode) and the json-tag decoder are pooled so an
// encode or decode allocates no encoder, writer or reader of its own. Each
// pooled item drops its reference to the caller's buffer (dst, payload)
// before it goes back to the pool. Nothing is wiped: the msgpack encoder's
// small scratch (a number's bytes) and the decoders' scratch (the last
// string a decoder read: the json-tag decoder here, and the decoders
// msgpack.Unmarshal pools itself) keep fragments of the last plaintext
// until they are reused or collected. The caller's buffers are the
// caller's to clear (cachekit clears its scratch buffers when it returns
// them).
package codec
