// Package structdec decodes a msgpack map straight into a Go struct through
// precomputed field offsets, for the struct shapes cachekit's Get sees most.
//
// It is a fast path in front of github.com/vmihailenco/msgpack/v5, not a
// second decoder with semantics of its own: Decode either leaves the
// destination exactly as msgpack.Unmarshal would (and reports true), or
// reports false so the caller runs msgpack.Unmarshal, which then rewrites
// whatever Decode had already written with the same values. Types or data
// it is not sure about are always left to msgpack.
//
// Eligible destinations are pointers to structs whose exported fields are
// bool, the sized and unsized int and uint kinds, float32, float64, string,
// time.Time (msgpack's timestamp extension, -1), a slice of a uint8-kind
// element ([]byte), []string, a slice of any other of those scalar kinds
// (named strings included), a map from a string kind to one of those
// scalar kinds, a nested struct that is itself eligible, or a pointer to
// any of these but a pointer; named types of those kinds are fine. An
// embedded struct held by value is inlined as msgpack inlines it (its
// fields become keys, and its own name is a key for the whole of it). A
// type (or a pointer to it) with a decoding method msgpack would call, an
// embedded pointer, non-struct or time.Time, a `msgpack` tag option other
// than omitempty, or two fields with the same key (embedded ones included)
// make the whole destination ineligible; so do interfaces, arrays, slices
// and maps of anything else (structs, times, pointers, slices) and maps
// with non-string keys. See kinds.go for the exact rules and decode.go,
// timestamp.go and collections.go for the msgpack codes each field kind
// accepts.
//
// A decoder installed with msgpack.Register or msgpack.RegisterExtDecoder is
// invisible to this package; each destination type is therefore probed once,
// against msgpack.Unmarshal, when its plan is built (see probe.go), and a
// type whose probe differs is left to msgpack.
//
// # Invariants
//
//   - Decode(data, dst) true leaves dst exactly as msgpack.Unmarshal(data,
//     dst) would; false means msgpack must run, and every field Decode wrote
//     is one msgpack rewrites with the same value (a map, slice or pointee
//     Decode allocated is then reused by msgpack and refilled with the same
//     entries, as a fresh one would have been).
//   - A destination type is planned and probed once; a type whose probe
//     against msgpack.Unmarshal differs is never decoded here.
//   - Decode allocates only what the decoded value owns (its strings,
//     slices, maps and pointees), and only where msgpack allocates: a
//     non-nil pointer is written through, a non-nil map is added to, a
//     slice with the capacity is reused; never more elements than the data
//     declares.
//   - Strings shorter than 1 KiB share blocks of at most 1 KiB, sized to
//     the bytes left in the document (one allocation for all the strings
//     of a small document, where msgpack makes one per string); a string
//     kept alive keeps its block alive, so at most 1 KiB beside it.
//   - Decode never panics on any data: malformed, truncated or hostile
//     input reports false (the fuzz and robustness tests hold it to this).
package structdec
