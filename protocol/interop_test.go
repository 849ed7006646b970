package protocol

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/cachekit-io/cachekit-go/internal/vectors"
	"golang.org/x/crypto/blake2b"
)

type iopKeyRow struct {
	Name             string          `json:"name"`
	Namespace        string          `json:"namespace"`
	Operation        string          `json:"operation"`
	Args             json.RawMessage `json:"args"`
	CanonicalArgsHex string          `json:"canonical_args_hex"`
	ArgsHash         string          `json:"args_hash"`
	ExpectedKey      string          `json:"expected_key"`
}

type iopErrorRow struct {
	Name      string          `json:"name"`
	Namespace *string         `json:"namespace"`
	Operation *string         `json:"operation"`
	Args      json.RawMessage `json:"args"`
}

// TestInteropKeyVectors: every interop-mode.json key row gives its canonical
// argument bytes, Blake2b-256 args hash and full key, and the bytes decode
// and re-encode to themselves (IOP-21, IOP-22, IOP-35, IOP-36).
func TestInteropKeyVectors(t *testing.T) {
	rows := vectors.Group[iopKeyRow](t, "interop-mode.json", "key_vectors")
	for _, row := range rows {
		t.Run(row.Name, func(t *testing.T) {
			args := iopDecodeTaggedArgs(t, row.Args)
			enc, err := AppendCanonicalArgs(nil, args...)
			if err != nil {
				t.Fatalf("AppendCanonicalArgs: %v", err)
			}
			if got := hex.EncodeToString(enc); got != row.CanonicalArgsHex {
				t.Fatalf("canonical args\n got %s\nwant %s", got, row.CanonicalArgsHex)
			}
			sum := blake2b.Sum256(enc)
			if got := hex.EncodeToString(sum[:]); got != row.ArgsHash {
				t.Fatalf("args hash %s, want %s", got, row.ArgsHash)
			}
			key, err := InteropKey(row.Namespace, row.Operation, args...)
			if err != nil {
				t.Fatalf("InteropKey: %v", err)
			}
			if key != row.ExpectedKey {
				t.Fatalf("key %s, want %s", key, row.ExpectedKey)
			}
			if err := ValidateInteropKey(key); err != nil {
				t.Fatalf("ValidateInteropKey(expected key): %v", err)
			}
			// The canonical bytes decode and re-encode to themselves: the
			// reader and the writer agree on every key vector.
			dec, err := DecodeMsgpack(enc, DecodeLimits{})
			if err != nil {
				t.Fatalf("DecodeMsgpack(canonical args): %v", err)
			}
			again, err := AppendCanonicalArgs(nil, dec.([]any)...)
			if err != nil || hex.EncodeToString(again) != row.CanonicalArgsHex {
				t.Fatalf("decode then re-encode = %x, %v", again, err)
			}
		})
	}
}

// TestInteropErrorVectors: every interop-mode.json error row is refused: a
// segment off the grammar (IOP-2, IOP-3), a reserved namespace (IOP-4), a
// `..` (IOP-5) with ErrInvalidKey and no echo of the segment; an argument
// outside the data model (IOP-8), an integer out of range among them
// (IOP-9), with ErrUnsupported (IOP-22, IOP-35).
func TestInteropErrorVectors(t *testing.T) {
	rows := vectors.Group[iopErrorRow](t, "interop-mode.json", "error_vectors")
	for _, row := range rows {
		t.Run(row.Name, func(t *testing.T) {
			args := iopDecodeTaggedArgs(t, row.Args)
			if row.Namespace == nil && row.Operation == nil {
				// An argument outside the data model.
				if _, err := AppendCanonicalArgs(nil, args...); !errors.Is(err, ErrUnsupported) {
					t.Fatalf("AppendCanonicalArgs error = %v, want ErrUnsupported", err)
				}
				if _, err := InteropKey("t", "op", args...); !errors.Is(err, ErrUnsupported) {
					t.Fatalf("InteropKey error = %v, want ErrUnsupported", err)
				}
				return
			}
			ns, op := "users", "get_user"
			if row.Namespace != nil {
				ns = *row.Namespace
			}
			if row.Operation != nil {
				op = *row.Operation
			}
			key, err := InteropKey(ns, op, args...)
			if !errors.Is(err, ErrInvalidKey) || key != "" {
				t.Fatalf("InteropKey = %q, %v; want ErrInvalidKey", key, err)
			}
			iopNoLeak(t, err, ns, op)
			if err := ValidateInteropSegments(ns, op); !errors.Is(err, ErrInvalidKey) {
				t.Fatalf("ValidateInteropSegments error = %v", err)
			}
			forged := ns + ":" + op + ":" + strings.Repeat("0", InteropHashLen)
			if err := ValidateInteropKey(forged); !errors.Is(err, ErrInvalidKey) {
				t.Fatalf("ValidateInteropKey(forged) error = %v", err)
			}
		})
	}
}

// iopNoLeak fails when an error message quotes a caller's segment.
func iopNoLeak(t *testing.T, err error, segs ...string) {
	t.Helper()
	for _, s := range segs {
		if len(s) >= 4 && strings.Contains(err.Error(), s) {
			t.Fatalf("error message quotes its input: %q", err.Error())
		}
	}
}

// TestInteropSegmentGrammar: namespace and operation match the segment
// grammar as a whole string (IOP-2), anything else is an error, never
// normalised (IOP-3), `ns` and `nsapi` are reserved as namespaces (IOP-4)
// and `..` is refused anywhere in a segment while a lone dot stays valid
// (IOP-5).
func TestInteropSegmentGrammar(t *testing.T) {
	valid := []string{"a", "0", "a.b", "a.", "a-", "a_", "9-lives", "users.fetch.by_id", strings.Repeat("z", 64), "nsapix", "n.s"}
	invalid := []string{"", ".a", "-a", "_a", "A", "aB", "a..b", "a..", "a b", "a/b", "a:b", "a\n", "\na", "a\x00",
		"é", "a\u0663", strings.Repeat("z", 65), "ａ"}
	for _, s := range valid {
		if err := ValidateInteropSegments(s, s); err != nil && s != "ns" {
			t.Errorf("segment %q rejected: %v", s, err)
		}
	}
	for _, s := range invalid {
		if ValidateInteropSegments(s, "op") == nil {
			t.Errorf("namespace %q accepted", s)
		}
		if ValidateInteropSegments("ns1", s) == nil {
			t.Errorf("operation %q accepted", s)
		}
	}
	for _, ns := range []string{"ns", "nsapi"} {
		if err := ValidateInteropSegments(ns, "op"); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("reserved namespace %q accepted", ns)
		}
		if err := ValidateInteropSegments("app", ns); err != nil {
			t.Errorf("operation %q rejected: %v", ns, err)
		}
	}
	// Every single byte value as a one-character segment: exactly [a-z0-9].
	for c := 0; c < 256; c++ {
		s := string([]byte{byte(c)})
		want := (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
		if got := ValidateInteropSegments(s, "op") == nil; got != want {
			t.Errorf("one-byte namespace 0x%02x accepted=%v", c, got)
		}
		tail := "a" + s
		want = want || c == '.' || c == '_' || c == '-'
		if got := ValidateInteropSegments("ns1", tail) == nil; got != want {
			t.Errorf("operation ending in 0x%02x accepted=%v", c, got)
		}
	}
}

func TestValidateInteropKey(t *testing.T) {
	hash := strings.Repeat("ab", 32)
	good := []string{"a:b:" + hash, "nsapix:nsapi:" + hash,
		strings.Repeat("a", 64) + ":" + strings.Repeat("b", 64) + ":" + hash}
	for _, k := range good {
		if err := ValidateInteropKey(k); err != nil {
			t.Errorf("%q rejected: %v", k, err)
		}
	}
	bad := []string{"", "a", "a:b", "a:b:", "a:b:" + hash[:63], "a:b:" + hash + "0", "a:b:" + strings.ToUpper(hash),
		"a:b:" + hash[:63] + "g", "a:b:c:" + hash, "ns:b:" + hash, "A:b:" + hash, "a::" + hash, ":b:" + hash,
		"a:b:" + hash + "\n", strings.Repeat("a", 65) + ":b:" + hash}
	for _, k := range bad {
		if err := ValidateInteropKey(k); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("%q: error %v, want ErrInvalidKey", k, err)
		}
	}
}

func TestInteropKeyLongestIs194(t *testing.T) {
	key, err := InteropKey(strings.Repeat("a", 64), strings.Repeat("b", 64), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(key) != 194 || InteropKeyMaxLen != 194 {
		t.Fatalf("longest key is %d bytes (const %d), want 194", len(key), InteropKeyMaxLen)
	}
}

func TestInteropKeyArgumentErrorsNameNoValue(t *testing.T) {
	_, err := InteropKey("t", "op", map[string]any{"secret-key-\xff": 1})
	if !errors.Is(err, ErrUnsupported) {
		t.Fatalf("error = %v", err)
	}
	if strings.Contains(err.Error(), "secret") {
		t.Fatalf("error quotes a map key: %q", err)
	}
}

func TestInteropKeyAllocations(t *testing.T) {
	allocs := testing.AllocsPerRun(200, func() {
		_, _ = InteropKey("users", "get_user", int64(42), "alice", true)
	})
	// One allocation: the returned string. The encoding buffer is pooled.
	if allocs > 1 {
		t.Fatalf("InteropKey allocates %v times per call, budget 1", allocs)
	}
}

func BenchmarkInteropKey(b *testing.B) {
	args := []any{int64(42), "alice@example.com", map[string]any{"active": true, "limit": 50}}
	enc, err := AppendCanonicalArgs(nil, args...)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(enc)))
	for b.Loop() {
		if _, err := InteropKey("users", "get_user", args...); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkInteropKeyScalars(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(3)
	for b.Loop() {
		if _, err := InteropKey("users", "get_user", int64(42)); err != nil {
			b.Fatal(err)
		}
	}
}
