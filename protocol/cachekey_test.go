package protocol_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cachekit-io/cachekit-go/protocol"
)

// The expected keys in this file were computed with the reference algorithm
// (cache-key-format.md pseudocode and cachekit-py's normalizer) under
// msgpack-python 1.0.3, for inputs the vector file does not cover: every
// integer, str, bin, array and map width, floats, datetimes, key ordering,
// the integrity flag, character replacement and the 250-character rule.

// ckUUID is a UUID-like argument: a byte array whose text form is the dashed
// lowercase hex Python's str(uuid) gives.
type ckUUID [16]byte

func (u ckUUID) MarshalText() ([]byte, error) {
	return fmt.Appendf(nil, "%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16]), nil
}

// ckColor is an enum; its key is its integer value, as a Python IntEnum's.
type ckColor int

const ckBlue ckColor = 3

// ckArgsHex64 is the args digest of the single argument 1 (vector
// no_namespace).
const ckArgsHex64 = "386979f533ce537f0c42d385c8174948ebd58566ad81b32bebb830a187cb4387"

func ckSpec(args []any, kwargs map[string]any) protocol.KeySpec {
	return protocol.KeySpec{
		Namespace: "test", Module: "__main__", Function: "get_user",
		Args: args, Kwargs: kwargs, IntegrityCheck: true, Serializer: "std",
	}
}

func ckGoldenCases() []struct {
	name string
	spec protocol.KeySpec
	want string
} {
	rep := strings.Repeat
	zone := func(sec int) *time.Location { return time.FixedZone("", sec) }
	withSpec := func(s protocol.KeySpec, f func(*protocol.KeySpec)) protocol.KeySpec { f(&s); return s }
	prefix := "ns:test:func:__main__.get_user:args:"
	return []struct {
		name string
		spec protocol.KeySpec
		want string
	}{
		{"int_ladder", ckSpec([]any{0, 127, 128, uint8(255), 256, uint16(65535), 65536, uint32(4294967295),
			int64(4294967296), uint64(math.MaxUint64), -1, int8(-32), -33, int8(-128), -129, int16(-32768), -32769,
			int32(-2147483648), int64(-2147483649), int64(math.MinInt64)}, nil),
			prefix + "a0a418404c0b505654e634c2ea8758b33696378a3b0979fade3c299b458d7cbc:1s"},
		{"floats", ckSpec([]any{0.5, math.Copysign(0, -1), 1e300, math.Inf(1), math.Inf(-1), math.NaN(), -2.5, 5e-324}, nil),
			prefix + "bafc1ea654e8b3f4f8cab3070acf721b838715b6e1544b4e97a5468bc4dd2dd3:1s"},
		{"strings", ckSpec([]any{"", rep("a", 31), rep("a", 32), rep("a", 255), rep("a", 256), rep("b", 65535),
			rep("c", 65536), "héllo ✓ 𝄞"}, nil),
			prefix + "2708c82b4f8d1df3a62352d988b88b4089277caa62d3662326716dacbe8b7e47:1s"},
		{"bytes", ckSpec([]any{[]byte{}, []byte{0, 0xff}, []byte(rep("x", 255)), []byte(rep("x", 256)),
			[]byte(rep("y", 65535)), []byte(rep("y", 65536))}, nil),
			prefix + "559679437b27b9b49d83ee804cfcb97cd3fef7d8f782dd240cf53cf33181ebf5:1s"},
		{"lists", ckSpec([]any{ckRange(15), ckRange(16), []any{[]any{[]any{}}}, []any{nil, true, false}, ckRange(65536)}, nil),
			prefix + "bfd8fb40083022d20392ec4833951f76c17f56e7593b106ae74b599e1e224024:1s"},
		{"dict_sizes", ckSpec([]any{ckDict(15), ckDict(16)}, nil),
			prefix + "7b0a1395ba40524f8f23c7085d76d08ce9d6e43470c256c73f9321146c8ccc41:1s"},
		{"dict_int_keys", ckSpec([]any{map[int]string{3: "c", -1: "a", 10: "b", 300: "d"}}, nil),
			prefix + "8c0535c5f23f04c29afc0f843f4e0199579603e71e410ed036516882ce2d25fe:1s"},
		{"dict_unicode_order", ckSpec([]any{map[string]any{"b": 1, "a": 2, "B": 3, "é": 4, "𝄞": 5, "z": 6, "": 7, "ab": 8}}, nil),
			prefix + "d26312b44d9cb0513b268ba9680eca2b3afae8472f3566a68e7e7306c8ac3183:1s"},
		{"kwargs_unicode_order", ckSpec(nil, map[string]any{"b": 1, "a": 2, "B": 3, "é": 4, "𝄞": 5, "z": 6, "ab": 8}),
			prefix + "863fbc882ea2573d87632d77a2516bcca546fe26794c53dc3760bd9133e2a71d:1s"},
		{"datetimes", ckSpec([]any{
			time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC),
			time.Date(2024, 1, 2, 3, 4, 5, 123456000, zone(-(3*3600 + 30*60))),
			time.Date(2024, 6, 1, 12, 0, 0, 500000, zone(5*3600+45*60)),
			time.Date(2024, 6, 1, 12, 0, 0, 0, zone(3601)),
			time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
			time.Date(9999, 12, 31, 23, 59, 59, 999999000, zone(23*3600+59*60)),
		}, nil),
			prefix + "4cdb681079a67e3ae646e89ded904cef03892f3076af704fc6e958de1a3c43ec:1s"},
		{"uuid", ckSpec([]any{ckUUID{0x12, 0x34, 0x56, 0x78, 0x12, 0x34, 0x56, 0x78, 0x12, 0x34, 0x56, 0x78, 0x12, 0x34, 0x56, 0x78}}, nil),
			prefix + "290bd5c785143df818b668a67c6c4ec966a225424242da28a17a27bda8a23e97:1s"},
		{"enum", ckSpec([]any{ckBlue}, nil),
			prefix + "5bad92410553bf971d8fbdbd535385d0c30b94271df125a573165004a76b91c2:1s"},
		{"nested_kwargs", ckSpec(nil, map[string]any{"filters": map[string]any{"b": []int{1, 2}, "a": nil}, "limit": 10, "tags": []string{"x", "y"}}),
			prefix + "5d0e21877189151b9b43bfa3a79cb070b14c22883b227647b4ee9c2617e76f49:1s"},
		{"ic_off_std", withSpec(ckSpec([]any{1}, nil), func(s *protocol.KeySpec) { s.IntegrityCheck = false }),
			prefix + ckArgsHex64 + ":0s"},
		{"ic_off_derived", withSpec(ckSpec([]any{1}, nil), func(s *protocol.KeySpec) { s.IntegrityCheck, s.Serializer = false, "cbor" }),
			prefix + ckArgsHex64 + ":0x23d5"},
		{"char_normalization", withSpec(ckSpec([]any{1}, nil), func(s *protocol.KeySpec) { s.Namespace, s.Function = "my ns\nx\r", "a b" }),
			"ns:my_ns_x_:func:__main__.a_b:args:" + ckArgsHex64 + ":1s"},
		{"long_namespace", withSpec(ckSpec([]any{1}, nil), func(s *protocol.KeySpec) { s.Namespace = rep("n", 300) }),
			"ns:" + rep("n", 47) + ":614abdfe4c17270407a1632892ad0dc0"},
		{"multibyte_cut", withSpec(ckSpec([]any{1}, nil), func(s *protocol.KeySpec) { s.Namespace = "ab" + rep("é", 200) }),
			"ns:ab" + rep("é", 45) + ":94b70ede56db23d2064de17bf159bac0"},
	}
}

func ckRange(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func ckDict(n int) map[string]any {
	out := make(map[string]any, n)
	for i := range n {
		out[fmt.Sprintf("k%02d", i)] = i
	}
	return out
}

func TestGenerateKeyGolden(t *testing.T) {
	for _, tc := range ckGoldenCases() {
		t.Run(tc.name, func(t *testing.T) {
			got, err := protocol.GenerateKey(tc.spec)
			if err != nil {
				t.Fatalf("GenerateKey: %v", err)
			}
			if got != tc.want {
				t.Fatalf("key\n got %s\nwant %s", got, tc.want)
			}
			if n := utf8.RuneCountInString(got); n > protocol.MaxKeyLength {
				t.Fatalf("key is %d characters", n)
			}
		})
	}
}

// TestGenerateKeyLengthBoundary puts the assembled key at 249, 250 and 251
// characters with 1-, 2- and 4-byte UTF-8 namespaces: the limit counts
// characters, so a 250-character key of 400 bytes is kept whole.
func TestGenerateKeyLengthBoundary(t *testing.T) {
	if protocol.MaxKeyLength != 250 {
		t.Fatalf("MaxKeyLength = %d, the spec says 250", protocol.MaxKeyLength)
	}
	tail := ":func:__main__.get_user:args:" + ckArgsHex64 + ":1s"
	short := map[string]string{ // the 251-character forms, from the reference
		"q": "ns:" + strings.Repeat("q", 47) + ":d97a2ab6dbd645c08ed534f38c7e4157",
		"é": "ns:" + strings.Repeat("é", 47) + ":06679999a9def727326a48f8370e097d",
		"𝄞": "ns:" + strings.Repeat("𝄞", 47) + ":2ac97abd946efe4f8a5b172b95a4352e",
	}
	for _, unit := range []string{"q", "é", "𝄞"} {
		for _, total := range []int{249, 250, 251} {
			t.Run(fmt.Sprintf("%d_bytes_per_char/%d", len(unit), total), func(t *testing.T) {
				ns := strings.Repeat(unit, total-len(tail)-len("ns:"))
				spec := ckSpec([]any{1}, nil)
				spec.Namespace = ns
				got, err := protocol.GenerateKey(spec)
				if err != nil {
					t.Fatalf("GenerateKey: %v", err)
				}
				full := "ns:" + ns + tail
				if utf8.RuneCountInString(full) != total {
					t.Fatalf("test setup: assembled key is %d characters", utf8.RuneCountInString(full))
				}
				want := full
				if total > 250 {
					want = short[unit]
				}
				if got != want {
					t.Fatalf("key\n got %s\nwant %s", got, want)
				}
				if n := utf8.RuneCountInString(got); n > protocol.MaxKeyLength {
					t.Fatalf("key is %d characters", n)
				}
			})
		}
	}
}

// TestGenerateKeyShortenedShape checks the shortened form on keys far past
// the limit: 50 characters of the key, a colon, 32 lowercase hex digits.
func TestGenerateKeyShortenedShape(t *testing.T) {
	for _, n := range []int{251, 1000, 100000} {
		spec := ckSpec([]any{1}, nil)
		spec.Function = strings.Repeat("f", n)
		got, err := protocol.GenerateKey(spec)
		if err != nil {
			t.Fatalf("GenerateKey: %v", err)
		}
		if utf8.RuneCountInString(got) != 83 || got[50] != ':' || !strings.HasPrefix(got, "ns:test:func:__main__.fff") {
			t.Fatalf("n=%d: shortened key has the wrong shape (%d characters)", n, utf8.RuneCountInString(got))
		}
		for _, c := range got[51:] {
			if !strings.ContainsRune("0123456789abcdef", c) {
				t.Fatalf("n=%d: digest part is not lowercase hex", n)
			}
		}
		spec.Function += "g" // a change past the kept prefix must change the digest
		other, err := protocol.GenerateKey(spec)
		if err != nil {
			t.Fatalf("GenerateKey: %v", err)
		}
		if other == got {
			t.Fatalf("n=%d: keys differing after the prefix collide", n)
		}
	}
}

func TestGenerateKeyNamespaceSegment(t *testing.T) {
	spec := ckSpec([]any{1}, nil)
	spec.Namespace = ""
	got, err := protocol.GenerateKey(spec)
	if err != nil {
		t.Fatal(err)
	}
	if want := "func:__main__.get_user:args:" + ckArgsHex64 + ":1s"; got != want {
		t.Fatalf("empty namespace: got %s want %s", got, want)
	}
	spec.Namespace = "a:b"
	got, err = protocol.GenerateKey(spec)
	if err != nil {
		t.Fatal(err)
	}
	if want := "ns:a:b:func:__main__.get_user:args:" + ckArgsHex64 + ":1s"; got != want {
		t.Fatalf("namespace with colon: got %s want %s", got, want)
	}
}

func TestGenerateKeyRejectsBadSpec(t *testing.T) {
	const secret = "SECRET-ns-\xff"
	cases := map[string]func(*protocol.KeySpec){
		"empty_module":      func(s *protocol.KeySpec) { s.Module = "" },
		"empty_function":    func(s *protocol.KeySpec) { s.Function = "" },
		"bad_utf8_ns":       func(s *protocol.KeySpec) { s.Namespace = secret },
		"bad_utf8_module":   func(s *protocol.KeySpec) { s.Module = secret },
		"bad_utf8_function": func(s *protocol.KeySpec) { s.Function = secret },
		"empty_serializer":  func(s *protocol.KeySpec) { s.Serializer = "" },
		"bad_utf8_serial":   func(s *protocol.KeySpec) { s.Serializer = secret },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			spec := ckSpec([]any{"SECRET-arg"}, nil)
			mutate(&spec)
			key, err := protocol.GenerateKey(spec)
			if err == nil || key != "" {
				t.Fatalf("accepted (key of %d characters)", len(key))
			}
			ckAssertFormatErr(t, err, protocol.ErrInvalidKey)
			if strings.Contains(err.Error(), "SECRET") {
				t.Fatal("error echoes its input")
			}
		})
	}
}

func TestSerializerCode(t *testing.T) {
	cases := map[string]string{
		"default": "s", "std": "s", "auto": "a", "pythonic": "a", "orjson": "o", "arrow": "w", "local": "l",
		"cbor": "x23d5", "toml": "x0c41", "<custom>:ArrowSerializer": "x2263", "<custom>:Café": "x2f62",
		// Not aliases here: each takes its own derived code.
		"standard": "", "Default": "", "std ": "",
	}
	seen := map[string]string{}
	for id, want := range cases {
		got, err := protocol.SerializerCode(id)
		if err != nil {
			t.Fatalf("%q: %v", id, err)
		}
		if want != "" && got != want {
			t.Fatalf("%q: got %s want %s", id, got, want)
		}
		if want == "" && (len(got) != 5 || got[0] != 'x') {
			t.Fatalf("%q: got %s, want a derived x code", id, got)
		}
		if prev, dup := seen[got]; dup && protocol.CanonicalSerializer(prev) != protocol.CanonicalSerializer(id) {
			t.Fatalf("%q and %q share code %s", prev, id, got)
		}
		seen[got] = id
	}
	for _, bad := range []string{"", "\xff\xfe"} {
		if _, err := protocol.SerializerCode(bad); err == nil {
			t.Fatalf("%q accepted", bad)
		} else {
			ckAssertFormatErr(t, err, protocol.ErrInvalidKey)
		}
	}
}

type ckGeneric[T any] struct{ v T }

type ckNamedInt int

func TestSerializerIdentity(t *testing.T) {
	good := map[string]any{
		"std":                      "std",
		"<custom>:auto":            auto{},
		"<custom>:AutoSerializer":  &AutoSerializer{},
		"<custom>:ckNamedInt":      ckNamedInt(0),
		"<custom>:ckGeneric[int]":  ckGeneric[int]{v: 1},
		"<custom>:ArrowSerializer": func() **ArrowSerializer { p := &ArrowSerializer{}; return &p }(),
	}
	for want, v := range good {
		got, err := protocol.SerializerIdentity(v)
		if err != nil || got != want {
			t.Fatalf("%T: got %q, %v; want %q", v, got, err, want)
		}
	}
	bad := []any{nil, "", 0, 1, int64(1), true, 1.5, []byte("std"), struct{}{}, new(int), (*string)(nil), []any{"std"}}
	for _, v := range bad {
		if got, err := protocol.SerializerIdentity(v); err == nil {
			t.Fatalf("%T accepted as identity %q", v, got)
		} else {
			ckAssertFormatErr(t, err, protocol.ErrInvalidKey)
		}
	}
}

func ExampleGenerateKey() {
	key, err := protocol.GenerateKey(protocol.KeySpec{
		Namespace:      "test",
		Module:         "__main__",
		Function:       "get_user",
		Args:           []any{42},
		IntegrityCheck: true,
		Serializer:     protocol.SerializerDefault,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(key)
	// Output:
	// ns:test:func:__main__.get_user:args:3870b2ea5735ae639ded9450ef117768db676f037bec636503796c5b81095153:1s
}

func ExampleSerializerIdentity() {
	type auto struct{} // a user type named like a table entry
	id, _ := protocol.SerializerIdentity(auto{})
	code, _ := protocol.SerializerCode(id)
	named, _ := protocol.SerializerCode("auto")
	fmt.Println(id, code, named)
	// Output:
	// <custom>:auto xf932 a
}
