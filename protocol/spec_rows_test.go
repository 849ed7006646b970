package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/cachekit-io/cachekit-go/internal/vectors"
)

// Rows of fixture revisions not vendored here (no copy whose sha256 equals
// the conformance index's pin was found; testdata/protocol/README.md), built
// from the spec text, and the rows of python-frame.json, which is vendored.

// pyFrameRow is one row of any python-frame.json group: every row carries
// its bytes as frame_hex, whatever they are (a CK frame, or another
// container fed to cachekit-py's frame reader).
type pyFrameRow struct {
	Name     string `json:"name"`
	FrameHex string `json:"frame_hex"`
}

// pyFrameRows returns every row of python-frame.json's three groups, each
// group failing the test when it is missing or empty.
func pyFrameRows(t testing.TB) []pyFrameRow {
	t.Helper()
	var rows []pyFrameRow
	for _, g := range []string{"frame_vectors", "error_vectors", "encrypted_read_vectors"} {
		rows = append(rows, vectors.Group[pyFrameRow](t, "python-frame.json", g)...)
	}
	return rows
}

// TestPythonFrameRowsRefused runs every row of python-frame.json through
// this package's readers. Every CK frame (a cachekit-py auto-mode
// container, whole, truncated or forged) is refused by the structural guard
// as cachekit-py's (ErrPythonFrame) and by the envelope reader, and has no
// envelope shape: no reader here decodes it (WIRE-21), and a plain reader
// refuses ck_frame_fed_to_interop_reader, where 0x43 alone would be the
// document 67, rather than read it as 67 with trailing bytes (IOP-19). Of the
// two other containers, bare_envelope_fed_to_frame_reader has exactly an
// envelope's shape (what a plain-msgpack Client refuses as another SDK's
// container) and plain_msgpack_fed_to_frame_reader is one plain document
// no envelope reader takes.
func TestPythonFrameRowsRefused(t *testing.T) {
	others := map[string]bool{"bare_envelope_fed_to_frame_reader": false, "plain_msgpack_fed_to_frame_reader": false}
	for _, row := range pyFrameRows(t) {
		t.Run(row.Name, func(t *testing.T) {
			b := vectors.Hex(t, row.FrameHex)
			_, envErr := OpenEnvelope(nil, b)
			switch row.Name {
			case "bare_envelope_fed_to_frame_reader":
				others[row.Name] = true
				if !IsEnvelopeShape(b) || envErr != nil {
					t.Fatalf("IsEnvelopeShape %v, OpenEnvelope %v; want the bare envelope's exact shape", IsEnvelopeShape(b), envErr)
				}
				return
			case "plain_msgpack_fed_to_frame_reader":
				others[row.Name] = true
				if IsEnvelopeShape(b) || envErr == nil || CheckMsgpack(b, DecodeLimits{}) != nil {
					t.Fatalf("plain msgpack: shape %v, envelope %v, guard %v", IsEnvelopeShape(b), envErr, CheckMsgpack(b, DecodeLimits{}))
				}
				return
			}
			if len(b) < 2 || b[0] != 'C' || b[1] != 'K' {
				t.Fatalf("row is not a CK frame: %x", b[:min(len(b), 4)])
			}
			if err := CheckMsgpack(b, DecodeLimits{}); !errors.Is(err, ErrPythonFrame) {
				t.Fatalf("CheckMsgpack = %v, want ErrPythonFrame", err)
			}
			if v, err := DecodeMsgpack(b, DecodeLimits{}); !errors.Is(err, ErrPythonFrame) || v != nil {
				t.Fatalf("DecodeMsgpack = %v, %v; want ErrPythonFrame", v, err)
			}
			if envErr == nil || IsEnvelopeShape(b) {
				t.Fatalf("envelope reader: %v, shape %v; want a refusal", envErr, IsEnvelopeShape(b))
			}
		})
	}
	for name, seen := range others {
		if !seen {
			t.Errorf("python-frame.json has no row %s", name)
		}
	}
}

// TestIsEnvelopeShape: the exact-shape check a plain-msgpack reader uses to
// refuse another SDK's auto-mode container (WIRE-21) takes every envelope
// SealEnvelope writes and the legacy array-of-integers form, under every
// registry format, and nothing one element off: another arity, a checksum
// of 7 or 9 integers, an element above 255, a signed or float
// original_size, a format outside the registry, a trailing byte. Its one
// false positive, a value that has exactly that shape, is what the
// cachekit package refuses to store with DisableCompression.
func TestIsEnvelopeShape(t *testing.T) {
	for _, f := range []string{FormatMsgpack, FormatOrjson, FormatArrow} {
		env, err := SealEnvelope(nil, []byte("\xa5hello"), f)
		if err != nil {
			t.Fatal(err)
		}
		if !IsEnvelopeShape(env) {
			t.Fatalf("a sealed %s envelope: not an envelope's shape", f)
		}
		if IsEnvelopeShape(append(bytes.Clone(env), 0xc0)) {
			t.Fatalf("a %s envelope with a trailing byte has the shape", f)
		}
	}
	checksum := "98" + "0102030405060708"
	yes := []string{
		"94" + "c40101" + checksum + "01" + "a76d73677061636b",           // bin compressed_data
		"94" + "9101" + checksum + "cf0000000000000001" + "a56172726f77", // legacy array, uint64 size, "arrow"
		"94" + "90" + checksum + "00" + "a66f726a736f6e",                 // empty legacy array, "orjson"
	}
	no := map[string]string{
		"arity 3":            "93" + "c40101" + checksum + "01",
		"arity 5":            "95" + "c40101" + checksum + "01" + "a76d73677061636b" + "c0",
		"checksum of 7":      "94" + "c40101" + "97" + "01020304050607" + "01" + "a76d73677061636b",
		"checksum of 9":      "94" + "c40101" + "99" + "010203040506070809" + "01" + "a76d73677061636b",
		"checksum element":   "94" + "c40101" + "98" + "cd0100" + "02030405060708" + "01" + "a76d73677061636b",
		"legacy element 256": "94" + "91cd0100" + checksum + "01" + "a76d73677061636b",
		"signed size":        "94" + "c40101" + checksum + "d001" + "a76d73677061636b",
		"negative size":      "94" + "c40101" + checksum + "ff" + "a76d73677061636b",
		"float size":         "94" + "c40101" + checksum + "cb3ff0000000000000" + "a76d73677061636b",
		"format json":        "94" + "c40101" + checksum + "01" + "a46a736f6e",
		"format bin":         "94" + "c40101" + checksum + "01" + "c4076d73677061636b",
		"str data":           "94" + "a101" + checksum + "01" + "a76d73677061636b",
		"map":                "81a0c0",
	}
	for _, h := range yes {
		if b := vectors.Hex(t, h); !IsEnvelopeShape(b) {
			t.Errorf("%s: not an envelope's shape", h)
		}
	}
	for name, h := range no {
		if b := vectors.Hex(t, h); IsEnvelopeShape(b) {
			t.Errorf("%s (%s): an envelope's shape", name, h)
		}
	}
}

// specErrorRows are the error rows interop-mode.json e1ca6c23 adds, as the
// spec's data model states them (an integer outside [-2^63, 2^64-1] is an
// error wherever it sits): with reject_int_overflow_in_list and
// reject_int_underflow_in_map, each bound is pinned inside a list and inside
// a map value.
var specErrorRows = []string{
	`{"name": "reject_int_overflow_in_map", "args": [{"id": {"$int": "18446744073709551616"}}]}`,
	`{"name": "reject_int_underflow_in_list", "args": [[1, {"$int": "-9223372036854775809"}]]}`,
}

// TestInteropSpecErrorRows: the two error rows of interop-mode.json
// e1ca6c23, built here, are refused as the vendored error rows are: an
// integer above 2^64-1 in a map value and one below -2^63 in a list are
// outside the data model (IOP-9), so both canonical argument encoding and
// key derivation fail with ErrUnsupported (IOP-22, IOP-35), naming no value.
func TestInteropSpecErrorRows(t *testing.T) {
	for _, text := range specErrorRows {
		var row iopErrorRow
		if err := json.Unmarshal([]byte(text), &row); err != nil {
			t.Fatal(err)
		}
		t.Run(row.Name, func(t *testing.T) {
			args := iopDecodeTaggedArgs(t, row.Args)
			if _, err := AppendCanonicalArgs(nil, args...); !errors.Is(err, ErrUnsupported) {
				t.Fatalf("AppendCanonicalArgs error = %v, want ErrUnsupported", err)
			}
			key, err := InteropKey("t", "op", args...)
			if !errors.Is(err, ErrUnsupported) || key != "" {
				t.Fatalf("InteropKey = %q, %v; want ErrUnsupported", key, err)
			}
			iopNoLeak(t, err, "18446744073709551616", "9223372036854775809")
			if _, err := AppendCanonicalValue(nil, args[0]); !errors.Is(err, ErrUnsupported) {
				t.Fatalf("AppendCanonicalValue error = %v, want ErrUnsupported", err)
			}
		})
	}
}
