package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/cachekit-io/cachekit-go/internal/vectors"
)

// iopBoundsInput returns the row's input (built and checked against its
// hex and length by vectors.DecodeBounds) after checking the vector's own
// slot and depth counts with an independent walk, so a misread vector
// cannot pass for a decoder bug or success.
func iopBoundsInput(t testing.TB, r vectors.BoundsRow) []byte {
	t.Helper()
	ref, _ := iopRefWalk(r.Input)
	if ref.slots != r.DeclaredSlots || ref.depth != r.NestingDepth {
		t.Fatalf("reference walk: slots %d depth %d, vector says %d and %d", ref.slots, ref.depth, r.DeclaredSlots, r.NestingDepth)
	}
	return r.Input
}

type iopReaderRow struct {
	Name       string `json:"name"`
	MsgpackHex string `json:"msgpack_hex"`
}

var iopReasonErr = map[string]error{"depth": errTooNested, "overclaim": errOverclaim, "incomplete": errIncomplete}

// TestDecodeBoundsRejectVectors: every decode-bounds.json reject vector
// (IOP-33) is refused by the structural guard with the error its reject
// reason names, before anything is materialised (no allocation at all), by
// CheckMsgpack and DecodeMsgpack alike, also at the floor of 32 levels:
// depth beyond 1024 (IOP-26), declared slots beyond the input (IOP-27,
// IOP-28), summed in 64 bits (IOP-30), an incomplete document (IOP-29),
// never a crash (IOP-24).
func TestDecodeBoundsRejectVectors(t *testing.T) {
	rows := vectors.DecodeBounds(t, "reject_vectors")
	for _, row := range rows {
		t.Run(row.Name, func(t *testing.T) {
			in := iopBoundsInput(t, row)
			err := CheckMsgpack(in, DecodeLimits{})
			ok := false
			for _, reason := range row.RejectReasons {
				want, known := iopReasonErr[reason]
				if !known {
					t.Fatalf("unknown reject reason %q", reason)
				}
				ok = ok || err == want
			}
			if !ok {
				t.Fatalf("CheckMsgpack = %v, want the guard's error for %v", err, row.RejectReasons)
			}
			v, derr := DecodeMsgpack(in, DecodeLimits{})
			if derr != err || v != nil {
				t.Fatalf("DecodeMsgpack = %v, %v; want nil and the guard's error", v, derr)
			}
			// Rejected before anything is materialised: no allocation at all.
			if a := testing.AllocsPerRun(5, func() { _, _ = DecodeMsgpack(in, DecodeLimits{}) }); a != 0 {
				t.Fatalf("rejecting allocated %v times", a)
			}
			// The floor bound (32) rejects it too, for the same kind of reason.
			if err := CheckMsgpack(in, DecodeLimits{MaxDepth: minDepthFloor}); err == nil {
				t.Fatal("accepted at depth bound 32")
			}
		})
	}
}

// TestDecodeBoundsAcceptVectors: every decode-bounds.json accept vector
// (IOP-34) passes the structural guard at the default bounds, at the
// protocol's floor of 32 levels and at a size limit of exactly its length,
// decodes, and re-encodes to the same bytes; one level less than a deeper
// vector's depth rejects it with the depth error.
func TestDecodeBoundsAcceptVectors(t *testing.T) {
	rows := vectors.DecodeBounds(t, "accept_vectors")
	for _, row := range rows {
		t.Run(row.Name, func(t *testing.T) {
			in := iopBoundsInput(t, row)
			for _, lim := range []DecodeLimits{{}, DefaultDecodeLimits, {MaxDepth: minDepthFloor}, {MaxBytes: len(in)}} {
				if err := CheckMsgpack(in, lim); err != nil {
					t.Fatalf("CheckMsgpack(%+v): %v", lim, err)
				}
			}
			v, err := DecodeMsgpack(in, DecodeLimits{})
			if err != nil {
				t.Fatalf("DecodeMsgpack: %v", err)
			}
			again, err := AppendCanonicalValue(nil, v)
			if err != nil || !bytes.Equal(again, in) {
				t.Fatalf("re-encoded %x, %v", again, err)
			}
			if row.NestingDepth > minDepthFloor {
				if err := CheckMsgpack(in, DecodeLimits{MaxDepth: row.NestingDepth - 1}); err != errTooNested {
					t.Fatalf("depth bound %d: %v, want the depth error", row.NestingDepth-1, err)
				}
			}
		})
	}
}

// TestInteropReaderAcceptVectors: every document interop-mode.json says a
// reader must accept (padded widths, unsorted keys, float32, a non-string
// key, an ext) passes the guard and decodes to its value (IOP-18, IOP-35).
func TestInteropReaderAcceptVectors(t *testing.T) {
	rows := vectors.Group[struct {
		Name       string          `json:"name"`
		MsgpackHex string          `json:"msgpack_hex"`
		Value      json.RawMessage `json:"value"`
	}](t, "interop-mode.json", "reader_accept_vectors")
	special := map[string]any{
		"reader_non_string_map_key": Map{{Key: int64(1), Value: int64(42)}},
		"reader_ext_type":           Ext{Type: 1, Data: []byte{0x2a}},
	}
	for _, row := range rows {
		t.Run(row.Name, func(t *testing.T) {
			in := vectors.Hex(t, row.MsgpackHex)
			if err := CheckMsgpack(in, DecodeLimits{}); err != nil {
				t.Fatalf("CheckMsgpack: %v", err)
			}
			got, err := DecodeMsgpack(in, DecodeLimits{})
			if err != nil {
				t.Fatalf("DecodeMsgpack: %v", err)
			}
			want, isSpecial := special[row.Name]
			switch {
			case isSpecial:
			case len(row.Value) > 0:
				want = iopDecodeTagged(t, []byte(row.Value))
			default:
				t.Fatalf("row has no value and no expectation here")
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("decoded %#v, want %#v", got, want)
			}
		})
	}
}

// TestInteropReaderRejectVectors: a complete document followed by one
// trailing byte is refused as malformed, not read as the document (IOP-19,
// IOP-35).
func TestInteropReaderRejectVectors(t *testing.T) {
	rows := vectors.Group[struct {
		Name       string `json:"name"`
		MsgpackHex string `json:"msgpack_hex"`
	}](t, "interop-mode.json", "reader_reject_vectors")
	for _, row := range rows {
		t.Run(row.Name, func(t *testing.T) {
			in := vectors.Hex(t, row.MsgpackHex)
			err := CheckMsgpack(in, DecodeLimits{})
			if !errors.Is(err, ErrMalformed) || errors.Is(err, ErrPythonFrame) {
				t.Fatalf("CheckMsgpack = %v, want a malformed (not CK) rejection", err)
			}
			if v, derr := DecodeMsgpack(in, DecodeLimits{}); derr != err || v != nil {
				t.Fatalf("DecodeMsgpack = %v, %v", v, derr)
			}
			// Without the trailing byte it is the complete document it was.
			if err := CheckMsgpack(in[:len(in)-1], DecodeLimits{}); err != nil {
				t.Fatalf("document without the trailing byte: %v", err)
			}
		})
	}
}

// iopCKFrame is python-frame.json's raw_payload_frame (not vendored here:
// only its magic matters): "CK", version 3, a JSON header, a payload.
const iopCKFrame = "434b030000004d7b2273223a202264656661756c74222c20226d223a207b22666f726d6174223a20226d73677061636b222c2022636f6d70726573736564223a2066616c73657d2c202276223a2022322e30227d68656c6c6f2c2063616368656b697421"

func TestCheckMsgpackPythonFrame(t *testing.T) {
	for _, in := range [][]byte{vectors.Hex(t, iopCKFrame), []byte("CK"), []byte("CK\x03")} {
		err := CheckMsgpack(in, DecodeLimits{})
		if !errors.Is(err, ErrPythonFrame) || !strings.Contains(err.Error(), "written by the Python SDK (CK frame)") {
			t.Fatalf("CheckMsgpack(%x...) = %v", in[:2], err)
		}
		if _, derr := DecodeMsgpack(in, DecodeLimits{}); derr != err {
			t.Fatalf("DecodeMsgpack = %v", derr)
		}
	}
	// 0x43 alone is the integer 67; 0x43 then anything but 'K' is trailing.
	if v, err := DecodeMsgpack([]byte{0x43}, DecodeLimits{}); err != nil || v != int64(67) {
		t.Fatalf("0x43 = %v, %v", v, err)
	}
	if err := CheckMsgpack([]byte{0x43, 0x00}, DecodeLimits{}); err != errTrailing {
		t.Fatalf("0x43 0x00 = %v", err)
	}
}

// iopNested returns count copies of unit followed by leaf.
func iopNested(unit string, count int, leaf string) []byte {
	return []byte(strings.Repeat(unit, count) + leaf)
}

// TestDepthFloorIsRaised: a caller's MaxDepth of 1 to 31 is raised to the
// protocol's floor of 32 (IOP-25), so a document 32 levels deep (both
// depth-32 accept vectors of decode-bounds.json, and arrays and maps built
// here) passes at every such setting and 33 levels do not.
func TestDepthFloorIsRaised(t *testing.T) {
	rows := vectors.DecodeBounds(t, "accept_vectors")
	at32 := 0
	for _, row := range rows {
		if row.NestingDepth != minDepthFloor {
			continue
		}
		at32++
		t.Run(row.Name, func(t *testing.T) {
			in := iopBoundsInput(t, row)
			for depth := 1; depth <= minDepthFloor; depth++ {
				if err := CheckMsgpack(in, DecodeLimits{MaxDepth: depth}); err != nil {
					t.Fatalf("MaxDepth %d: %v, want the floor of 32 to accept it", depth, err)
				}
				if _, err := DecodeMsgpack(in, DecodeLimits{MaxDepth: depth}); err != nil {
					t.Fatalf("DecodeMsgpack at MaxDepth %d: %v", depth, err)
				}
			}
		})
	}
	if at32 == 0 {
		t.Fatal("decode-bounds.json has no depth-32 accept vector")
	}
	for _, unit := range []string{"\x91", "\x81\xa0"} {
		for depth := 1; depth < minDepthFloor; depth++ {
			lim := DecodeLimits{MaxDepth: depth}
			if err := CheckMsgpack(iopNested(unit, minDepthFloor, "\xc0"), lim); err != nil {
				t.Fatalf("%x x 32 at MaxDepth %d: %v", unit, depth, err)
			}
			if err := CheckMsgpack(iopNested(unit, minDepthFloor+1, "\xc0"), lim); err != errTooNested {
				t.Fatalf("%x x 33 at MaxDepth %d: %v, want the depth error", unit, depth, err)
			}
		}
	}
}

// TestDepthLimits: the default bound is the protocol's ceiling of 1024
// levels (IOP-26): 1024 levels of arrays or maps, empty ones counting,
// pass; 1025 fail at every setting above the ceiling too; a bound of 32
// takes exactly 32.
func TestDepthLimits(t *testing.T) {
	for _, unit := range []string{"\x91", "\x81\xa0", "\xdc\x00\x01", "\xde\x00\x01\xa0"} {
		for _, leaf := range []string{"\xc0", "\x90", "\x80"} {
			// An empty collection is a level too.
			extra := 0
			if leaf != "\xc0" {
				extra = 1
			}
			ok := iopNested(unit, 1024-extra, leaf)
			if err := CheckMsgpack(ok, DecodeLimits{}); err != nil {
				t.Fatalf("%x x %d + %x: %v", unit, 1024-extra, leaf, err)
			}
			if _, err := DecodeMsgpack(ok, DecodeLimits{}); err != nil {
				t.Fatalf("decode at the ceiling: %v", err)
			}
			bad := iopNested(unit, 1025-extra, leaf)
			for _, lim := range []DecodeLimits{{}, {MaxDepth: 5000}, {MaxDepth: -1}} {
				if err := CheckMsgpack(bad, lim); err != errTooNested {
					t.Fatalf("%x x %d + %x at %+v: %v", unit, 1025-extra, leaf, lim, err)
				}
			}
			at32 := iopNested(unit, 32-extra, leaf)
			if err := CheckMsgpack(at32, DecodeLimits{MaxDepth: 32}); err != nil {
				t.Fatalf("depth 32 at bound 32: %v", err)
			}
			if err := CheckMsgpack(iopNested(unit, 33-extra, leaf), DecodeLimits{MaxDepth: 32}); err != errTooNested {
				t.Fatalf("depth 33 at bound 32: %v", err)
			}
		}
	}
}

func TestMillionNestedArraysRejectedCleanly(t *testing.T) {
	for _, in := range [][]byte{
		iopNested("\x91", 1_000_000, "\xc0"),
		iopNested("\x81\xa0", 1_000_000, "\xc0"),
		iopNested("\x91", 1_000_000, ""),
		iopNested("\xdd\x00\x00\x00\x01", 1_000_000, "\xc0"),
	} {
		if err := CheckMsgpack(in, DecodeLimits{}); err != errTooNested {
			t.Fatalf("CheckMsgpack = %v", err)
		}
		if v, err := DecodeMsgpack(in, DecodeLimits{}); err != errTooNested || v != nil {
			t.Fatalf("DecodeMsgpack = %v", err)
		}
	}
}

// TestHugeDeclaredLengthsAllocateNothing: headers declaring up to 4 GiB of
// elements or bytes from a few input bytes are refused as overclaims (the
// declared slots exceed the input, IOP-27) before anything is materialised:
// 100 rejections allocate under 64 KiB (IOP-28).
func TestHugeDeclaredLengthsAllocateNothing(t *testing.T) {
	inputs := []string{"ddffffffff", "dfffffffff", "c6ffffffff41", "dbffffffff41", "c9ffffffff0541", "df80000000",
		"dc ffff", "de ffff c0", "91 ddffffffff", "ddffffffffdd00000001", "c7ff05", "c8ffff05"}
	for _, h := range inputs {
		in := vectors.Hex(t, strings.ReplaceAll(h, " ", ""))
		if err := CheckMsgpack(in, DecodeLimits{}); err != errOverclaim {
			t.Errorf("%s: %v, want overclaim", h, err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range 100 {
			if _, err := DecodeMsgpack(in, DecodeLimits{}); err == nil {
				t.Fatalf("%s accepted", h)
			}
		}
		runtime.ReadMemStats(&after)
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<10 {
			t.Errorf("%s: 100 rejections allocated %d bytes", h, grew)
		}
	}
}

func TestMaxBytes(t *testing.T) {
	in := vectors.Hex(t, "94c0c0c0c0")
	if err := CheckMsgpack(in, DecodeLimits{MaxBytes: 4}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("5 bytes at MaxBytes 4: %v", err)
	}
	if err := CheckMsgpack(in, DecodeLimits{MaxBytes: 5}); err != nil {
		t.Fatalf("5 bytes at MaxBytes 5: %v", err)
	}
	if err := CheckMsgpack(nil, DecodeLimits{}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("empty input: %v", err)
	}
}

func TestDecodeMsgpackTypes(t *testing.T) {
	cases := []struct {
		hex  string
		want any
	}{
		{"c0", nil}, {"c2", false}, {"c3", true}, {"7f", int64(127)}, {"e0", int64(-32)}, {"ff", int64(-1)},
		{"ccff", int64(255)}, {"cdffff", int64(65535)}, {"ceffffffff", int64(math.MaxUint32)},
		{"cf7fffffffffffffff", int64(math.MaxInt64)}, {"cf8000000000000000", uint64(1 << 63)},
		{"cfffffffffffffffff", uint64(math.MaxUint64)}, {"d080", int64(-128)}, {"d18000", int64(-32768)},
		{"d280000000", int64(math.MinInt32)}, {"d38000000000000000", int64(math.MinInt64)}, {"d07f", int64(127)},
		{"ca3fc00000", 1.5}, {"ca7f800000", math.Inf(1)}, {"cb3ff8000000000000", 1.5},
		{"a0", ""}, {"a3616263", "abc"}, {"d903616263", "abc"}, {"da0001ff", "\xff"}, {"db0000000178", "x"},
		{"c400", []byte{}}, {"c50001ab", []byte{0xab}}, {"c600000001ab", []byte{0xab}},
		{"d4ff01", Ext{Type: -1, Data: []byte{1}}}, {"d50100ff", Ext{Type: 1, Data: []byte{0, 0xff}}},
		{"d60200000000", Ext{Type: 2, Data: make([]byte, 4)}}, {"d7ff" + strings.Repeat("00", 8), Ext{Type: -1, Data: make([]byte, 8)}},
		{"d803" + strings.Repeat("11", 16), Ext{Type: 3, Data: bytes.Repeat([]byte{0x11}, 16)}},
		{"c70005", Ext{Type: 5, Data: []byte{}}}, {"c8000105aa", Ext{Type: 5, Data: []byte{0xaa}}},
		{"c90000000105aa", Ext{Type: 5, Data: []byte{0xaa}}},
		{"90", []any{}}, {"dc0000", []any{}}, {"dd00000001c0", []any{nil}}, {"80", map[string]any{}},
		{"de0000", map[string]any{}}, {"df00000001a16101", map[string]any{"a": int64(1)}},
		{"82a16101a16102", map[string]any{"a": int64(2)}},
		{"82a16101c0c3", Map{{"a", int64(1)}, {nil, true}}},
		{"81c40161c0", Map{{[]byte("a"), nil}}},
		{"81910102", Map{{[]any{int64(1)}, int64(2)}}},
	}
	for _, c := range cases {
		in := vectors.Hex(t, c.hex)
		got, err := DecodeMsgpack(in, DecodeLimits{})
		if err != nil {
			t.Errorf("%s: %v", c.hex, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.hex, got, c.want)
		}
		// Every strict prefix is incomplete, every extension trailing.
		for cut := range len(in) {
			if err := CheckMsgpack(in[:cut], DecodeLimits{}); err == nil {
				t.Errorf("%s cut at %d accepted", c.hex, cut)
			}
		}
		if err := CheckMsgpack(append(slices.Clone(in), 0xc0), DecodeLimits{}); err != errTrailing {
			t.Errorf("%s + c0: %v", c.hex, err)
		}
	}
	if err := CheckMsgpack([]byte{0xc1}, DecodeLimits{}); err != errReservedByte {
		t.Errorf("0xc1: %v", err)
	}
	if err := CheckMsgpack([]byte{0x91, 0xc1}, DecodeLimits{}); err != errReservedByte {
		t.Errorf("[0xc1]: %v", err)
	}
	// Decoded bytes never alias the input.
	in := vectors.Hex(t, "c40161")
	v, _ := DecodeMsgpack(in, DecodeLimits{})
	in[2] = 'z'
	if string(v.([]byte)) != "a" {
		t.Error("decoded bin aliases the input")
	}
}

func TestCheckMsgpackAllocations(t *testing.T) {
	docs := map[string][]byte{
		"100B":     iopStructLike(100),
		"1KiB":     iopStructLike(1024),
		"depth32":  iopNested("\x91", 32, "\xc0"),
		"overflow": vectors.Hex(t, "dfffffffff"),
		"trailing": vectors.Hex(t, "c0c0"),
		"ck":       []byte("CK\x03"),
		"toodeep":  iopNested("\x91", 2000, "\xc0"),
	}
	for name, doc := range docs {
		if a := testing.AllocsPerRun(100, func() { _ = CheckMsgpack(doc, DecodeLimits{}) }); a != 0 {
			t.Errorf("CheckMsgpack(%s) allocates %v per call, budget 0", name, a)
		}
	}
	// Past 32 levels the walk borrows pooled state; the race detector makes
	// sync.Pool drop items at random, so allow at most one.
	deep := iopNested("\x91", 1024, "\xc0")
	if a := testing.AllocsPerRun(100, func() { _ = CheckMsgpack(deep, DecodeLimits{}) }); a > 1 {
		t.Errorf("CheckMsgpack(depth 1024) allocates %v per call, budget 1", a)
	}
}

// iopStructLike returns a canonical map shaped like a cached record, about
// size bytes long.
func iopStructLike(size int) []byte {
	m := map[string]any{"id": int64(123456789), "name": "Alice Example", "active": true, "score": 98.25}
	for i := 0; ; i++ {
		b, err := AppendCanonicalValue(nil, m)
		if err != nil {
			panic(err)
		}
		if len(b) >= size {
			return b
		}
		switch i % 3 {
		case 0:
			m[fmt.Sprintf("tag_%02d", i)] = fmt.Sprintf("value-%d", i)
		case 1:
			m[fmt.Sprintf("count_%02d", i)] = int64(i * 1000)
		default:
			m[fmt.Sprintf("item_%02d", i)] = map[string]any{"sku": "SKU-1", "qty": int64(i), "tags": []any{"a", "b"}}
		}
	}
}

func BenchmarkCheckMsgpack(b *testing.B) {
	for _, size := range []int{100, 1024} {
		doc := iopStructLike(size)
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				if err := CheckMsgpack(doc, DecodeLimits{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecodeMsgpack(b *testing.B) {
	doc := iopStructLike(1024)
	b.ReportAllocs()
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if _, err := DecodeMsgpack(doc, DecodeLimits{}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestDecodeNestedMixedKeyMapsIsLinear(t *testing.T) {
	// {"": {"": ... {} ..., nil: nil}, nil: nil}: every level turns into a
	// Map only at its second key. A decoder that restarts a map on its
	// first non-string key re-decodes the subtree at every level: 2^1000.
	in := append(iopNested("\x82\xa0", 1000, "\x80"), bytes.Repeat([]byte{0xc0, 0xc0}, 1000)...)
	v, err := DecodeMsgpack(in, DecodeLimits{})
	if err != nil {
		t.Fatal(err)
	}
	for range 1000 {
		m, ok := v.(Map)
		if !ok || len(m) != 2 || m[0].Key != "" || m[1].Key != nil {
			t.Fatalf("level decoded as %T", v)
		}
		v = m[0].Value
	}
	if m, ok := v.(map[string]any); !ok || len(m) != 0 {
		t.Fatalf("innermost = %#v", v)
	}
}
