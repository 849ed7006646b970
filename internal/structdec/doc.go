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
// a slice of a uint8-kind element ([]byte), []string, or a nested struct
// that is itself eligible; named types of those kinds are fine. A type (or
// a pointer to it) with a decoding method msgpack would call, an embedded
// field, a `msgpack` tag option other than omitempty, or two fields with the
// same key make the whole destination ineligible. See plan.go for the exact
// rules and decode.go for the msgpack codes each field kind accepts.
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
//     is one msgpack rewrites with the same value.
//   - A destination type is planned and probed once; a type whose probe
//     against msgpack.Unmarshal differs is never decoded here.
//   - Decode allocates only what the decoded value owns (its strings and
//     slices), never more elements than the data declares.
//   - Decode never panics on any data: malformed, truncated or hostile
//     input reports false (the fuzz and robustness tests hold it to this).
package structdec
