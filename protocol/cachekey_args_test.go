package protocol_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/protocol"
)

func TestAppendKeyArgsBytes(t *testing.T) {
	cases := []struct {
		name   string
		args   []any
		kwargs map[string]any
		hex    string // from the reference packer
	}{
		{"empty", nil, nil, "929080"},
		{"int_keys", []any{map[int]string{3: "c", -1: "a", 10: "b", 300: "d"}}, nil, "929184ffa16103a1630aa162cd012ca16480"},
		{"enum", []any{ckBlue}, nil, "92910380"},
		{"kwargs", []any{"alice"}, map[string]any{"age": 30}, "9291a5616c69636581a36167651e"},
		{"nan_and_neg_zero", []any{math.Float64frombits(0x7ff8dead00000001), math.Copysign(0, -1)}, nil,
			"9292cb7ff8000000000000cb000000000000000080"},
		{"time_us", []any{time.Date(2024, 1, 2, 3, 4, 5, 123456000, time.FixedZone("", -(3*3600+30*60)))}, nil,
			"9291" + "d920" + hex.EncodeToString([]byte("2024-01-02T03:04:05.123456-03:30")) + "80"},
		{"time_offset_seconds", []any{time.Date(2024, 1, 2, 3, 4, 5, 0, time.FixedZone("", -(3600+2*60+3)))}, nil,
			"9291" + "bc" + hex.EncodeToString([]byte("2024-01-02T03:04:05-01:02:03")) + "80"},
		{"negative_keys", []any{map[int]int{2: 0, -1: 0, -3: 0, -200: 0}}, nil, "929184d1ff3800fd00ff00020080"},
		{"time_ns", []any{time.Date(2024, 1, 2, 3, 4, 5, 7, time.UTC)}, nil,
			"9291" + "d923" + hex.EncodeToString([]byte("2024-01-02T03:04:05.000000007+00:00")) + "80"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prefix := []byte("keep")
			got, err := protocol.AppendKeyArgs(prefix, tc.args, tc.kwargs)
			if err != nil {
				t.Fatalf("AppendKeyArgs: %v", err)
			}
			if !bytes.HasPrefix(got, []byte("keep")) {
				t.Fatal("dst prefix lost")
			}
			if h := hex.EncodeToString(got[4:]); h != tc.hex {
				t.Fatalf("doc\n got %s\nwant %s", h, tc.hex)
			}
		})
	}
}

// TestArgsHashGoForms checks that each Go spelling of a value hashes like the
// plain form a Python caller would pass.
func TestArgsHashGoForms(t *testing.T) {
	type myString string
	type myBytes []byte
	fortyTwo := 42
	ptr := &fortyTwo
	cases := []struct {
		name  string
		plain any
		forms []any
	}{
		{"int", 42, []any{int8(42), int16(42), int32(42), int64(42), uint(42), uint8(42), uint16(42), uint32(42),
			uint64(42), ckColor(42), &fortyTwo, &ptr, big.NewInt(42), *big.NewInt(42)}},
		{"big_uint", uint64(math.MaxUint64), []any{new(big.Int).SetUint64(math.MaxUint64)}},
		{"float", 0.5, []any{float32(0.5)}},
		{"zero", 0.0, []any{math.Copysign(0, -1), float32(math.Copysign(0, -1))}},
		{"nan", math.NaN(), []any{math.Float64frombits(0xfff0000000000001), float32(math.NaN())}},
		{"string", "abc", []any{myString("abc")}},
		{"bytes", []byte{1, 2}, []any{myBytes{1, 2}, [2]byte{1, 2}}},
		{"list", []any{"a", "b"}, []any{[]string{"a", "b"}, [2]string{"a", "b"}, &[]any{"a", "b"}}},
		{"empty_list", []any{}, []any{[]any(nil), []int(nil), [0]int{}}},
		{"empty_bytes", []byte{}, []any{[]byte(nil)}},
		{"map", map[string]any{"a": 1, "b": 2}, []any{map[string]int{"b": 2, "a": 1}, map[any]any{"a": 1, "b": 2},
			map[myString]uint8{"a": 1, "b": 2}}},
		{"empty_map", map[string]any{}, []any{map[string]any(nil), map[int]int{}}},
		{"int_map", map[int]any{-5: 1, 7: 2}, []any{map[int8]int{7: 2, -5: 1}, map[any]int{int64(-5): 1, uint8(7): 2}}},
		{"bool_map", map[bool]int{false: 0, true: 1}, []any{map[any]int{true: 1, false: 0}}},
		{"nil", nil, []any{(*int)(nil), (*ckUUID)(nil), (*big.Int)(nil), (*time.Time)(nil)}},
		{"time", time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC), []any{time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC).Round(0)}},
		{"uuid_text", "12345678-1234-5678-1234-567812345678", []any{ckUUID{0x12, 0x34, 0x56, 0x78, 0x12, 0x34, 0x56, 0x78, 0x12, 0x34, 0x56, 0x78, 0x12, 0x34, 0x56, 0x78}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want, err := protocol.ArgsHash([]any{tc.plain}, nil)
			if err != nil {
				t.Fatalf("plain form: %v", err)
			}
			for _, f := range tc.forms {
				got, err := protocol.ArgsHash([]any{f}, nil)
				if err != nil {
					t.Fatalf("%T: %v", f, err)
				}
				if got != want {
					t.Fatalf("%T hashes differently from %T", f, tc.plain)
				}
			}
		})
	}
}

// TestArgsHashDistinguishes checks values that must not share a key.
func TestArgsHashDistinguishes(t *testing.T) {
	values := []any{nil, false, true, 0, 1, -1, 1.0, 0.0, "1", "", []byte("1"), []byte{}, []any{}, []any{1},
		map[string]any{}, map[string]any{"1": nil}, map[int]any{1: nil}, []any{nil}, math.Inf(1), math.NaN(),
		uint64(math.MaxUint64), int64(math.MinInt64), time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2024, 1, 1, 1, 0, 0, 0, time.FixedZone("", 3600))}
	seen := map[[32]byte]int{}
	for i, v := range values {
		h, err := protocol.ArgsHash([]any{v}, nil)
		if err != nil {
			t.Fatalf("value %d (%T): %v", i, v, err)
		}
		if j, dup := seen[h]; dup {
			t.Fatalf("values %d (%T) and %d (%T) share a hash", j, values[j], i, v)
		}
		seen[h] = i
	}
	// Positional and named arguments are different calls.
	a, _ := protocol.ArgsHash([]any{1}, nil)
	b, _ := protocol.ArgsHash(nil, map[string]any{"0": 1})
	if a == b {
		t.Fatal("positional and named argument share a hash")
	}
}

func TestArgsHashStable(t *testing.T) {
	// single_integer's args segment, pinned so a change of encoding fails here too.
	const want = "3870b2ea5735ae639ded9450ef117768db676f037bec636503796c5b81095153"
	sum, err := protocol.ArgsHash([]any{42}, nil)
	if err != nil || hex.EncodeToString(sum[:]) != want {
		t.Fatalf("ArgsHash(42) = %x, %v", sum, err)
	}
	kwargs := map[string]any{}
	inner := map[any]any{}
	for i := range 40 {
		kwargs[string(rune('a'+i%26))+strings.Repeat("z", i/26)] = i
		inner[i-20] = i
		inner[uint(i+100)] = -i
	}
	kwargs["inner"] = inner
	first, err := protocol.ArgsHash([]any{inner}, kwargs)
	if err != nil {
		t.Fatal(err)
	}
	for range 100 { // map iteration order differs from run to run
		again, err := protocol.ArgsHash([]any{inner}, kwargs)
		if err != nil || again != first {
			t.Fatalf("hash changed between calls: %x vs %x (%v)", again, first, err)
		}
	}
	// Kwargs built in reverse insertion order hash the same.
	rev := map[string]any{}
	keys := make([]string, 0, len(kwargs))
	for k := range kwargs {
		keys = append(keys, k)
	}
	for i := len(keys) - 1; i >= 0; i-- {
		rev[keys[i]] = kwargs[keys[i]]
	}
	if again, _ := protocol.ArgsHash([]any{inner}, rev); again != first {
		t.Fatal("kwargs order changed the hash")
	}
}

type ckStruct struct{ A int }

type ckFailingText struct{}

func (ckFailingText) MarshalText() ([]byte, error) { return nil, errors.New("SECRET marshal failure") }

type ckBadText struct{}

func (ckBadText) MarshalText() ([]byte, error) { return []byte("SECRET\xff"), nil }

func TestArgsHashRejects(t *testing.T) {
	deep := any(1)
	for range protocol.MaxKeyArgsDepth {
		deep = []any{deep}
	}
	cyclic := []any{nil}
	cyclic[0] = cyclic
	var self any
	self = &self
	huge := new(big.Int).Lsh(big.NewInt(1), 64)
	cases := []struct {
		name string
		v    any
		want error
	}{
		{"struct", ckStruct{A: 1}, protocol.ErrUnsupported},
		{"struct_in_list", []any{1, ckStruct{}}, protocol.ErrUnsupported},
		{"struct_pointer", &ckStruct{}, protocol.ErrUnsupported},
		{"chan", make(chan int), protocol.ErrUnsupported},
		{"func", func() {}, protocol.ErrUnsupported},
		{"complex", complex(1, 2), protocol.ErrUnsupported},
		{"uintptr", uintptr(1), protocol.ErrUnsupported},
		{"set_like", map[string]struct{}{"SECRET": {}}, protocol.ErrUnsupported},
		{"float_keys", map[float64]int{1.5: 1}, protocol.ErrUnsupported},
		{"mixed_keys", map[any]int{1: 1, "SECRET": 2}, protocol.ErrUnsupported},
		{"nil_key", map[any]int{nil: 1}, protocol.ErrUnsupported},
		{"duplicate_keys", map[any]int{int(1): 1, int64(1): 2}, protocol.ErrUnsupported},
		{"bad_utf8", "SECRET\xff", protocol.ErrUnsupported},
		{"bad_utf8_key", map[string]any{"SECRET\xff": 1}, protocol.ErrUnsupported},
		{"year_0", time.Date(0, 12, 31, 0, 0, 0, 0, time.UTC), protocol.ErrUnsupported},
		{"year_10000", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), protocol.ErrUnsupported},
		{"offset_day", time.Date(2024, 1, 1, 0, 0, 0, 0, time.FixedZone("", 86400)), protocol.ErrUnsupported},
		{"offset_minus_day", time.Date(2024, 1, 1, 0, 0, 0, 0, time.FixedZone("", -86400)), protocol.ErrUnsupported},
		{"big_2_64", huge, protocol.ErrUnsupported},
		{"big_below_int64", new(big.Int).Sub(big.NewInt(math.MinInt64), big.NewInt(1)), protocol.ErrUnsupported},
		{"text_error", ckFailingText{}, protocol.ErrUnsupported},
		{"text_bad_utf8", ckBadText{}, protocol.ErrUnsupported},
		{"too_deep", deep, protocol.ErrTooLarge},
		{"cyclic_slice", cyclic, protocol.ErrTooLarge},
		{"cyclic_pointer", self, protocol.ErrTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, call := range []struct {
				args   []any
				kwargs map[string]any
			}{{[]any{tc.v}, nil}, {nil, map[string]any{"x": tc.v}}} {
				sum, err := protocol.ArgsHash(call.args, call.kwargs)
				if err == nil {
					t.Fatalf("accepted, hash %x", sum)
				}
				if sum != ([32]byte{}) {
					t.Fatal("non-zero hash returned with an error")
				}
				ckAssertFormatErr(t, err, tc.want)
				if strings.Contains(err.Error(), "SECRET") {
					t.Fatal("error echoes argument data")
				}
				dst := []byte("dst")
				out, err := protocol.AppendKeyArgs(dst, call.args, call.kwargs)
				if err == nil || string(out) != "dst" {
					t.Fatalf("AppendKeyArgs: err %v, dst changed to %d bytes", err, len(out))
				}
				spec := ckSpec(call.args, call.kwargs)
				if key, err := protocol.GenerateKey(spec); err == nil || key != "" {
					t.Fatal("GenerateKey accepted the argument")
				}
			}
		})
	}
}

// TestArgsHashDepthLimit accepts arguments nested exactly to the limit.
func TestArgsHashDepthLimit(t *testing.T) {
	nest := func(levels int) any {
		v := any(1)
		for range levels {
			v = []any{v}
		}
		return v
	}
	// The argument list is level 1, so MaxKeyArgsDepth-1 more lists fit.
	if _, err := protocol.ArgsHash([]any{nest(protocol.MaxKeyArgsDepth - 1)}, nil); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	_, err := protocol.ArgsHash([]any{nest(protocol.MaxKeyArgsDepth)}, nil)
	ckAssertFormatErr(t, err, protocol.ErrTooLarge)
}
