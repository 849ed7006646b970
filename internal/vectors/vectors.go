package vectors

import (
	"bytes"
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

// AESGCMCase is one Wycheproof AES-GCM test case, hex decoded.
type AESGCMCase struct {
	TcID                       int
	Comment                    string
	Key, IV, AAD, Msg, CT, Tag []byte
	Result                     string // "valid", "invalid" or "acceptable"
}

// WycheproofAESGCM256 returns the AES-256-GCM cases with a 96-bit IV and a
// 128-bit tag of the vendored Wycheproof file testdata/wycheproof/
// aes_gcm_test.json (source and version in its README).
func WycheproofAESGCM256(tb testing.TB) []AESGCMCase {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join(Dir(), "..", "wycheproof", "aes_gcm_test.json"))
	if err != nil {
		tb.Fatalf("vectors: %v", err)
	}
	var f struct {
		TestGroups []struct {
			KeySize, IVSize, TagSize int
			Tests                    []struct {
				TcID                               int
				Comment                            string
				Key, IV, AAD, Msg, CT, Tag, Result string
			}
		}
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		tb.Fatalf("vectors: decode aes_gcm_test.json: %v", err)
	}
	var out []AESGCMCase
	for _, g := range f.TestGroups {
		if g.KeySize != 256 || g.IVSize != 96 || g.TagSize != 128 {
			continue
		}
		for _, tc := range g.Tests {
			out = append(out, AESGCMCase{
				TcID: tc.TcID, Comment: tc.Comment, Result: tc.Result,
				Key: Hex(tb, tc.Key), IV: Hex(tb, tc.IV), AAD: Hex(tb, tc.AAD),
				Msg: Hex(tb, tc.Msg), CT: Hex(tb, tc.CT), Tag: Hex(tb, tc.Tag),
			})
		}
	}
	return out
}

// Payload is one MessagePack document a vector pins, named by its row.
type Payload struct {
	Name  string
	Bytes []byte
}

// BoundsRow is one row of decode-bounds.json, its input built from its
// construction.
type BoundsRow struct {
	Name          string
	Input         []byte
	NestingDepth  int
	DeclaredSlots uint64
	RejectReasons []string
}

// DecodeBounds returns group ("reject_vectors" or "accept_vectors") of
// decode-bounds.json, each row's input built from its construction
// (repeat_hex count times, then suffix_hex) and checked against its
// input_hex, when given, and its input_len.
func DecodeBounds(tb testing.TB, group string) []BoundsRow {
	tb.Helper()
	rows := Group[struct {
		Name         string `json:"name"`
		Construction struct {
			RepeatHex string `json:"repeat_hex"`
			Count     int    `json:"count"`
			SuffixHex string `json:"suffix_hex"`
		} `json:"construction"`
		InputHex      string   `json:"input_hex"`
		InputLen      int      `json:"input_len"`
		NestingDepth  int      `json:"nesting_depth"`
		DeclaredSlots uint64   `json:"declared_slots"`
		RejectReasons []string `json:"reject_reasons"`
	}](tb, "decode-bounds.json", group)
	out := make([]BoundsRow, 0, len(rows))
	for _, r := range rows {
		b := append(bytes.Repeat(Hex(tb, r.Construction.RepeatHex), r.Construction.Count), Hex(tb, r.Construction.SuffixHex)...)
		if (r.InputHex != "" && !bytes.Equal(b, Hex(tb, r.InputHex))) || len(b) != r.InputLen {
			tb.Fatalf("vectors: decode-bounds.json %s: construction disagrees with input_hex or input_len", r.Name)
		}
		out = append(out, BoundsRow{Name: r.Name, Input: b, NestingDepth: r.NestingDepth, DeclaredSlots: r.DeclaredSlots, RejectReasons: r.RejectReasons})
	}
	return out
}

// RejectPayloads returns every document a reader's structural guard must
// refuse: decode-bounds.json's reject_vectors and interop-mode.json's
// reader_reject_vectors (a complete document and a trailing byte). Each
// group fails the test when it is missing or empty.
func RejectPayloads(tb testing.TB) []Payload {
	tb.Helper()
	var out []Payload
	for _, r := range DecodeBounds(tb, "reject_vectors") {
		out = append(out, Payload{Name: r.Name, Bytes: r.Input})
	}
	for _, r := range Group[struct {
		Name       string `json:"name"`
		MsgpackHex string `json:"msgpack_hex"`
	}](tb, "interop-mode.json", "reader_reject_vectors") {
		out = append(out, Payload{Name: r.Name, Bytes: Hex(tb, r.MsgpackHex)})
	}
	return out
}
