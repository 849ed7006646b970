// Package vectors loads the vendored CacheKit protocol test vectors from
// testdata/protocol, and the vendored Wycheproof AES-GCM cases from
// testdata/wycheproof, for tests. It is test support, not public API.
//
// # Invariants
//
//   - Paths come from this source file's location (runtime.Caller), not
//     from the working directory: Dir is the module's testdata/protocol
//     whichever package's test calls it.
//   - Read, Decode, Group, Hex and WycheproofAESGCM256 never return an
//     error: a missing file, bad JSON or bad hex fails the test (Fatalf).
//   - Group fails the test when the file has no such group or the group
//     decodes to zero rows, so a vector group that yields no cases cannot
//     pass silently.
//   - DecodeBounds builds each decode-bounds.json row's input from its
//     construction and fails the test when it disagrees with the row's
//     input_hex or input_len; RejectPayloads is every document a reader's
//     structural guard must refuse (decode-bounds and interop-mode reject
//     rows), each group failing the test when it is empty.
//   - WycheproofAESGCM256 returns, hex-decoded, only the cases of groups
//     with a 256-bit key, a 96-bit IV and a 128-bit tag. It does not fail
//     when there are none: its callers must check the count.
package vectors
