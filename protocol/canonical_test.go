package protocol

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"github.com/cachekit-io/cachekit-go/protocol/internal/mp"
	"math"
	"math/big"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/vectors"
)

type iopValueRow struct {
	Name                string          `json:"name"`
	Value               json.RawMessage `json:"value"`
	CanonicalMsgpackHex string          `json:"canonical_msgpack_hex"`
}

// TestInteropValueVectors: every interop-mode.json value row is written by
// the value profile as exactly its canonical bytes and decodes back to its
// value (IOP-17, IOP-21, IOP-35).
func TestInteropValueVectors(t *testing.T) {
	rows := vectors.Group[iopValueRow](t, "interop-mode.json", "value_vectors")
	for _, row := range rows {
		t.Run(row.Name, func(t *testing.T) {
			v := iopDecodeTagged(t, row.Value)
			enc, err := AppendCanonicalValue(nil, v)
			if err != nil {
				t.Fatalf("AppendCanonicalValue: %v", err)
			}
			if got := hex.EncodeToString(enc); got != row.CanonicalMsgpackHex {
				t.Fatalf("value bytes\n got %s\nwant %s", got, row.CanonicalMsgpackHex)
			}
			dec, err := DecodeMsgpack(enc, DecodeLimits{})
			if err != nil {
				t.Fatalf("DecodeMsgpack: %v", err)
			}
			if !reflect.DeepEqual(dec, v) {
				t.Fatalf("decoded %#v, want %#v", dec, v)
			}
		})
	}
}

func TestCanonicalDatetimeValueIsSentinelMap(t *testing.T) {
	// The value profile writes the same bytes as the datetime_sentinel_value
	// vector when handed the time itself.
	want := "82ac5f5f6461746574696d655f5fc3a576616c7565d920323032342d30312d30315431323a33303a34352e3132333435362b30303a3030"
	ts := time.Date(2024, 1, 1, 12, 30, 45, 123456789, time.UTC) // sub-microsecond digits are floored
	enc, err := AppendCanonicalValue(nil, ts)
	if err != nil || hex.EncodeToString(enc) != want {
		t.Fatalf("got %x, %v", enc, err)
	}
	cases := map[string]time.Time{
		"2024-01-01T00:00:00+00:00":        time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC),
		"2024-01-01T18:00:45.123456+05:30": time.Date(2024, 1, 1, 18, 0, 45, 123456000, time.FixedZone("", 5*3600+1800)),
		"1969-12-31T23:59:59.000001-08:00": time.Date(1969, 12, 31, 23, 59, 59, 1000, time.FixedZone("", -8*3600)),
	}
	for iso, ts := range cases {
		enc, err := AppendCanonicalValue(nil, ts)
		if err != nil {
			t.Fatal(err)
		}
		dec, err := DecodeMsgpack(enc, DecodeLimits{})
		if err != nil {
			t.Fatal(err)
		}
		m := dec.(map[string]any)
		if m["__datetime__"] != true || m["value"] != iso || len(m) != 2 {
			t.Errorf("sentinel for %s = %v", iso, m)
		}
	}
}

func TestCanonicalIntegerWidths(t *testing.T) {
	cases := []struct {
		v    any
		want string
	}{
		{0, "00"}, {127, "7f"}, {128, "cc80"}, {255, "ccff"}, {256, "cd0100"}, {65535, "cdffff"},
		{65536, "ce00010000"}, {uint32(math.MaxUint32), "ceffffffff"}, {int64(1) << 32, "cf0000000100000000"},
		{uint64(math.MaxUint64), "cfffffffffffffffff"}, {int64(math.MaxInt64), "cf7fffffffffffffff"},
		{-1, "ff"}, {-32, "e0"}, {-33, "d0df"}, {int8(-128), "d080"}, {-129, "d1ff7f"}, {int16(-32768), "d18000"},
		{-32769, "d2ffff7fff"}, {int32(math.MinInt32), "d280000000"}, {int64(math.MinInt32) - 1, "d3ffffffff7fffffff"},
		{int64(math.MinInt64), "d38000000000000000"}, {uint8(200), "ccc8"}, {uint16(7), "07"}, {uint(1 << 40), "cf0000010000000000"},
		{big.NewInt(-5), "fb"}, {new(big.Int).SetUint64(math.MaxUint64), "cfffffffffffffffff"}, {(*big.Int)(nil), "c0"},
	}
	for _, c := range cases {
		for _, profile := range []string{"args", "value"} {
			got := iopEncode(t, profile, c.v)
			if hex.EncodeToString(got) != c.want {
				t.Errorf("%s %T(%v) = %x, want %s", profile, c.v, c.v, got, c.want)
			}
		}
	}
	tooBig := new(big.Int).Lsh(big.NewInt(1), 64)
	tooSmall := new(big.Int).Sub(big.NewInt(math.MinInt64), big.NewInt(1))
	for _, b := range []*big.Int{tooBig, tooSmall} {
		if _, err := AppendCanonicalValue(nil, b); !errors.Is(err, ErrUnsupported) {
			t.Errorf("out-of-range big.Int: %v", err)
		}
	}
}

// iopEncode encodes v alone in the named profile: the args profile's
// output has its one-element array header (0x91) stripped.
func iopEncode(t *testing.T, profile string, v any) []byte {
	t.Helper()
	if profile == "value" {
		b, err := AppendCanonicalValue(nil, v)
		if err != nil {
			t.Fatalf("AppendCanonicalValue(%T): %v", v, err)
		}
		return b
	}
	b, err := AppendCanonicalArgs(nil, v)
	if err != nil {
		t.Fatalf("AppendCanonicalArgs(%T): %v", v, err)
	}
	if b[0] != 0x91 {
		t.Fatalf("args header %x", b[0])
	}
	return b[1:]
}

func TestCanonicalFloats(t *testing.T) {
	below264 := math.Nextafter(18446744073709551616.0, 0)
	belowMin := math.Nextafter(-9223372036854775808.0, math.Inf(-1))
	cases := []struct {
		v           any
		args, value string
	}{
		{2.0, "02", "cb4000000000000000"},
		{math.Copysign(0, -1), "00", "cb8000000000000000"},
		{0.5, "cb3fe0000000000000", "cb3fe0000000000000"},
		{-1.0, "ff", "cbbff0000000000000"},
		{float32(1.5), "cb3ff8000000000000", "cb3ff8000000000000"},
		{float32(300), "cd012c", "cb4072c00000000000"},
		{9223372036854775808.0, "cf8000000000000000", "cb43e0000000000000"},
		{below264, "cffffffffffffff800", "cb43efffffffffffff"},
		{18446744073709551616.0, "cb43f0000000000000", "cb43f0000000000000"},
		{-9223372036854775808.0, "d38000000000000000", "cbc3e0000000000000"},
		{belowMin, "cbc3e0000000000001", "cbc3e0000000000001"},
		{1e300, "cb7e37e43c8800759c", "cb7e37e43c8800759c"},
		{math.SmallestNonzeroFloat64, "cb0000000000000001", "cb0000000000000001"},
	}
	for _, c := range cases {
		if got := hex.EncodeToString(iopEncode(t, "args", c.v)); got != c.args {
			t.Errorf("args %v = %s, want %s", c.v, got, c.args)
		}
		if got := hex.EncodeToString(iopEncode(t, "value", c.v)); got != c.value {
			t.Errorf("value %v = %s, want %s", c.v, got, c.value)
		}
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		for _, v := range []any{f, float32(f), []any{f}, map[string]any{"x": f}, Set{f}, []float64{f}} {
			if _, err := AppendCanonicalArgs(nil, v); !errors.Is(err, ErrUnsupported) {
				t.Errorf("args %v accepted: %v", v, err)
			}
			if _, err := AppendCanonicalValue(nil, v); !errors.Is(err, ErrUnsupported) {
				t.Errorf("value %v accepted: %v", v, err)
			}
		}
	}
}

func TestCanonicalArgsDatetime(t *testing.T) {
	cases := []struct {
		t    time.Time
		want string
	}{
		{time.Date(2024, 1, 1, 12, 30, 45, 123456000, time.UTC), "cb41d964ac1d47e6b4"},
		{time.Date(2024, 1, 1, 12, 30, 45, 123456999, time.UTC), "cb41d964ac1d47e6b4"}, // floored, not rounded
		{time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), "ce65920080"},
		{time.Date(1969, 12, 31, 23, 59, 59, 123456000, time.UTC), "cbbfec0ca600b02928"},
		// -0.8765439 s floors to -876544 microseconds, not -876543.
		{time.Date(1969, 12, 31, 23, 59, 59, 123456100, time.UTC), "cbbfec0ca600b02928"},
		{time.Unix(0, 0), "00"},
		{time.Unix(-1, 0), "ff"},
	}
	for _, c := range cases {
		if got := hex.EncodeToString(iopEncode(t, "args", c.t)); got != c.want {
			t.Errorf("%s = %s, want %s", c.t.Format(time.RFC3339Nano), got, c.want)
		}
	}
	far := time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := AppendCanonicalArgs(nil, far); !errors.Is(err, ErrUnsupported) {
		t.Errorf("time beyond int64 microseconds accepted: %v", err)
	}
}

func TestCanonicalHeaderWidths(t *testing.T) {
	type tc struct {
		v      any
		header string
	}
	cases := []tc{
		{strings.Repeat("a", 31), "bf"}, {strings.Repeat("a", 32), "d920"}, {strings.Repeat("a", 255), "d9ff"},
		{strings.Repeat("a", 256), "da0100"}, {strings.Repeat("a", 65535), "daffff"}, {strings.Repeat("a", 65536), "db00010000"},
		{"", "a0"}, {[]byte{}, "c400"}, {make([]byte, 255), "c4ff"}, {make([]byte, 256), "c50100"},
		{make([]byte, 65535), "c5ffff"}, {make([]byte, 65536), "c600010000"},
		{make([]any, 0), "90"}, {make([]any, 15), "9f"}, {make([]any, 16), "dc0010"}, {make([]any, 65535), "dcffff"},
		{make([]any, 65536), "dd00010000"}, {iopMapOf(0), "80"}, {iopMapOf(15), "8f"}, {iopMapOf(16), "de0010"},
		{iopMapOf(65535), "deffff"}, {iopMapOf(65536), "df00010000"},
	}
	for _, c := range cases {
		got := iopEncode(t, "value", c.v)
		if !strings.HasPrefix(hex.EncodeToString(got[:min(len(got), 8)]), c.header) {
			t.Errorf("%T of length %d: header %x, want %s", c.v, reflect.ValueOf(c.v).Len(), got[:min(len(got), 5)], c.header)
		}
		if err := CheckMsgpack(got, DecodeLimits{}); err != nil {
			t.Errorf("%T of length %d: own output rejected: %v", c.v, reflect.ValueOf(c.v).Len(), err)
		}
	}
	// The root argument array follows the same ladder.
	enc, err := AppendCanonicalArgs(nil, make([]any, 16)...)
	if err != nil || hex.EncodeToString(enc[:3]) != "dc0010" {
		t.Fatalf("root array16 = %x, %v", enc[:3], err)
	}
}

// iopMapOf returns a string-keyed map with n distinct keys.
func iopMapOf(n int) map[string]any {
	m := make(map[string]any, n)
	for i := range n {
		m[strconv.Itoa(i)] = nil
	}
	return m
}

func TestCanonicalMapOrderUnicode(t *testing.T) {
	m := map[string]any{}
	keys := []string{"", "a", "ab", "b", "B", "a-b", "a_b", "é", "e\u0301", "｡", "｡｡", "𐀀", "\u0080", "\u07ff", "\uffff", "\U0010ffff", "\x7f", "__proto__"}
	for i, k := range keys {
		m[k] = i
	}
	want := slices.Clone(keys)
	slices.Sort(want) // Go compares strings bytewise: UTF-8 order, which is code-point order
	enc, err := AppendCanonicalValue(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	dec := iopMapKeysInWireOrder(t, enc)
	if !slices.Equal(dec, want) {
		t.Fatalf("key order %q, want %q", dec, want)
	}
	if slices.Index(dec, "｡") > slices.Index(dec, "𐀀") {
		t.Fatal("U+FF61 must sort before U+10000")
	}
	// The same order at every level, and for typed maps through reflection.
	nested := map[string]map[string]int{"z": {"b": 1, "a": 2}, "a": {"𐀀": 1, "｡": 2}}
	enc, err = AppendCanonicalArgs(nil, nested)
	if err != nil || hex.EncodeToString(enc) != "9182a16182a3efbda102a4f090808001a17a82a16102a16201" {
		t.Fatalf("nested typed map = %x, %v", enc, err)
	}
	// Random maps: keys always come out strictly increasing.
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		m := map[string]any{}
		for range r.IntN(40) {
			m[iopRandString(r)] = true
		}
		enc, err := AppendCanonicalValue(nil, m)
		if err != nil {
			t.Fatal(err)
		}
		got := iopMapKeysInWireOrder(t, enc)
		for i := 1; i < len(got); i++ {
			if got[i-1] >= got[i] {
				t.Fatalf("keys out of order at %d", i)
			}
		}
	}
}

// iopMapKeysInWireOrder returns the keys of the root map of enc in the
// order they were written.
func iopMapKeysInWireOrder(t *testing.T, enc []byte) []string {
	t.Helper()
	d := decoder{b: enc}
	c := enc[0]
	d.pos = 1
	var n uint64
	switch {
	case c&0xf0 == mp.FixMap:
		n = uint64(c & 0x0f)
	case c == mp.Map16:
		n = d.length(2)
	default:
		t.Fatalf("root is not a map: %x", c)
	}
	keys := make([]string, 0, n)
	for range n {
		keys = append(keys, d.item().(string))
		d.item()
	}
	return keys
}

func iopRandString(r *rand.Rand) string {
	var sb strings.Builder
	for range r.IntN(6) {
		switch r.IntN(4) {
		case 0:
			sb.WriteByte(byte(0x20 + r.IntN(0x5f)))
		case 1:
			sb.WriteRune(rune(0x80 + r.IntN(0x780)))
		case 2:
			sb.WriteRune(rune(0xe000 + r.IntN(0x2000)))
		default:
			sb.WriteRune(rune(0x10000 + r.IntN(0x100000)))
		}
	}
	return sb.String()
}

func TestCanonicalSets(t *testing.T) {
	cases := []struct {
		set         Set
		args, value string
	}{
		{Set{3, 1, 2}, "93010203", "93010203"},
		{Set{2, 2.0}, "9102", "9202cb4000000000000000"},
		{Set{-5, "a", 1.5}, "93a161cb3ff8000000000000fb", "93a161cb3ff8000000000000fb"},
		{Set{}, "90", "90"},
		{Set{Set{1}, []any{1}, Set{1, 1}}, "919101", "919101"},
		{Set{map[string]any{"b": 1, "a": 2}, map[string]any{"a": 2, "b": 1}}, "9182a16102a16201", "9182a16102a16201"},
		{Set{nil, true, false, "", []byte{}}, "95a0c0c2c3c400", "95a0c0c2c3c400"},
	}
	for _, c := range cases {
		if got := hex.EncodeToString(iopEncode(t, "args", c.set)); got != c.args {
			t.Errorf("args %v = %s, want %s", c.set, got, c.args)
		}
		if got := hex.EncodeToString(iopEncode(t, "value", c.set)); got != c.value {
			t.Errorf("value %v = %s, want %s", c.set, got, c.value)
		}
	}
	// Sorting is by encoded bytes, so element order on input never matters.
	r := rand.New(rand.NewPCG(3, 4))
	base := Set{1, -1, 300, "x", "xy", []byte{1}, 2.5, nil, true, []any{1, 2}, map[string]any{"k": 1}, int64(-1) << 40}
	want := iopEncode(t, "args", base)
	for range 100 {
		s := slices.Clone(base)
		r.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
		s = append(s, s[r.IntN(len(s))]) // a duplicate
		if got := iopEncode(t, "args", s); !bytes.Equal(got, want) {
			t.Fatalf("shuffled set encodes as %x, want %x", got, want)
		}
	}
}

// TestCanonicalGoTypes: the Go types the canonical encoders take write the
// pinned bytes, and everything outside the interop data model is refused
// with ErrUnsupported in both profiles, never coerced (IOP-8): a struct, a
// non-string map key (IOP-13), invalid UTF-8 and an encoded lone surrogate,
// in a value or a map key (IOP-10, IOP-11).
func TestCanonicalGoTypes(t *testing.T) {
	type myString string
	type myInt int16
	type myBytes []byte
	n := 7
	var nilPtr *int
	uuid, _ := ParseUUID("550E8400-E29B-41D4-A716-446655440000")
	cases := []struct {
		v    any
		want string
	}{
		{myString("hi"), "a26869"}, {myInt(-2), "fe"}, {myBytes{1}, "c40101"}, {[2]byte{1, 2}, "c4020102"},
		{[]int{1, 2}, "920102"}, {[]string{"a"}, "91a161"}, {[2]int8{-1, 1}, "92ff01"},
		{map[string]int{"b": 1, "a": 2}, "82a16102a16201"}, {map[myString]bool{"k": true}, "81a16bc3"},
		{&n, "07"}, {nilPtr, "c0"}, {uuid, "d924" + hex.EncodeToString([]byte("550e8400-e29b-41d4-a716-446655440000"))},
		{&uuid, "d924" + hex.EncodeToString([]byte("550e8400-e29b-41d4-a716-446655440000"))},
		{[]any{nil, true, false}, "93c0c3c2"}, {[][]byte{nil}, "91c400"}, {[]float64{1.5}, "91cb3ff8000000000000"},
	}
	for _, c := range cases {
		if got := hex.EncodeToString(iopEncode(t, "value", c.v)); got != c.want {
			t.Errorf("%T = %s, want %s", c.v, got, c.want)
		}
	}
	unsupported := []any{
		struct{}{}, make(chan int), func() {}, map[int]string{1: "a"}, map[any]any{"a": 1}, complex(1, 2),
		Ext{Type: 1}, Map{{Key: 1, Value: 2}}, iopNaiveDateTime{}, []any{struct{ X int }{}}, "bad\xffutf8",
		"\xed\xa0\x80", // an encoded lone surrogate
		map[string]any{"\xff": 1}, uintptr(1),
	}
	for _, v := range unsupported {
		for _, enc := range []func() ([]byte, error){
			func() ([]byte, error) { return AppendCanonicalArgs(nil, v) },
			func() ([]byte, error) { return AppendCanonicalValue(nil, v) },
		} {
			if _, err := enc(); !errors.Is(err, ErrUnsupported) {
				t.Errorf("%T: error %v, want ErrUnsupported", v, err)
			}
		}
	}
}

func TestCanonicalAppendSemantics(t *testing.T) {
	prefix := []byte("prefix")
	out, err := AppendCanonicalArgs(prefix, 1, "a")
	if err != nil || string(out[:6]) != "prefix" || hex.EncodeToString(out[6:]) != "9201a161" {
		t.Fatalf("append = %q, %v", out, err)
	}
	out, err = AppendCanonicalArgs(prefix, 1, math.NaN())
	if err == nil || len(out) != len(prefix) {
		t.Fatalf("failed append returned %d bytes, %v", len(out), err)
	}
	out, err = AppendCanonicalValue(prefix, []any{1, map[string]any{"a": math.Inf(1)}})
	if err == nil || len(out) != len(prefix) {
		t.Fatalf("failed append returned %d bytes, %v", len(out), err)
	}
}

func TestCanonicalDepthAndCycles(t *testing.T) {
	deep := any(nil)
	for range 1024 {
		deep = []any{deep}
	}
	enc, err := AppendCanonicalValue(nil, deep)
	if err != nil {
		t.Fatalf("1024 levels rejected: %v", err)
	}
	if err := CheckMsgpack(enc, DecodeLimits{}); err != nil {
		t.Fatalf("reader rejects the writer's 1024 levels: %v", err)
	}
	if _, err := AppendCanonicalValue(nil, []any{deep}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("1025 levels: %v", err)
	}
	if _, err := AppendCanonicalArgs(nil, deep); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("args with 1024-level argument (1025 with the root): %v", err)
	}
	cyc := make([]any, 1)
	cyc[0] = cyc
	if _, err := AppendCanonicalValue(nil, cyc); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("self-referencing slice: %v", err)
	}
	m := map[string]any{}
	m["self"] = m
	if _, err := AppendCanonicalArgs(nil, m); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("self-referencing map: %v", err)
	}
}

func BenchmarkAppendCanonicalArgs(b *testing.B) {
	args := []any{int64(42), "alice@example.com", map[string]any{"active": true, "limit": 50}, 2.5}
	buf, _ := AppendCanonicalArgs(nil, args...)
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		buf, _ = AppendCanonicalArgs(buf[:0], args...)
	}
}
