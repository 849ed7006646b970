// Package vectors loads the vendored CacheKit protocol test vectors from
// testdata/protocol for tests. It is test support, not public API.
package vectors

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Dir returns the absolute path of the vendored vector directory.
func Dir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		panic("vectors: cannot locate source file")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "protocol")
}

// Read returns the raw bytes of a vendored vector file, such as
// "wire-format.json". It fails the test when the file is missing.
func Read(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(Dir(), name))
	if err != nil {
		tb.Fatalf("vectors: %v", err)
	}
	return b
}

// Decode unmarshals a vendored vector file into v.
func Decode(tb testing.TB, name string, v any) {
	tb.Helper()
	if err := json.Unmarshal(Read(tb, name), v); err != nil {
		tb.Fatalf("vectors: decode %s: %v", name, err)
	}
}

// Group decodes one top-level array of a vector file into rows and fails the
// test when the group is missing or empty: a vector group that yields no
// cases must never pass silently.
func Group[T any](tb testing.TB, name, group string) []T {
	tb.Helper()
	var top map[string]json.RawMessage
	Decode(tb, name, &top)
	raw, ok := top[group]
	if !ok {
		tb.Fatalf("vectors: %s has no group %q", name, group)
	}
	var rows []T
	if err := json.Unmarshal(raw, &rows); err != nil {
		tb.Fatalf("vectors: decode %s/%s: %v", name, group, err)
	}
	if len(rows) == 0 {
		tb.Fatalf("vectors: %s/%s yields zero rows", name, group)
	}
	return rows
}

// Hex decodes a hex field of a vector, failing the test on bad hex.
func Hex(tb testing.TB, s string) []byte {
	tb.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		tb.Fatalf("vectors: bad hex in vector: %v", err)
	}
	return b
}

// Wycheproof returns the raw bytes of a vendored Wycheproof vector file,
// such as "aes_gcm_test.json" (testdata/wycheproof: source and version in
// its README).
func Wycheproof(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(Dir(), "..", "wycheproof", name))
	if err != nil {
		tb.Fatalf("vectors: %v", err)
	}
	return b
}
