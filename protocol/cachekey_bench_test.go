package protocol_test

import (
	"strings"
	"testing"

	"github.com/cachekit-io/cachekit-go/protocol"
)

// ckBenchSpecs are the calls the benchmarks and allocation budgets use.
func ckBenchSpecs() []struct {
	name   string
	spec   protocol.KeySpec
	allocs float64 // budget per GenerateKey call
} {
	long := ckSpec([]any{1}, nil)
	long.Namespace = strings.Repeat("n", 300)
	derived := ckSpec([]any{42}, nil)
	derived.Serializer = "cbor"
	return []struct {
		name   string
		spec   protocol.KeySpec
		allocs float64
	}{
		// The common shapes allocate only the returned string.
		{"single_int", ckSpec([]any{42}, nil), 1},
		{"args_kwargs", ckSpec([]any{"alice"}, map[string]any{"age": 30, "include_profile": true}), 1},
		{"nested", ckSpec([]any{map[string]any{"user": map[string]any{"name": "alice", "ids": []any{1, 2, 3}}}}, nil), 1},
		// Typed slices and maps go through reflect, which boxes each element.
		{"reflect_types", ckSpec([]any{[]string{"a", "b"}, map[string]int{"x": 1}}, nil), 6},
		// A derived code hashes the identity with a heap-allocated digest.
		{"derived_code", derived, 3},
		// An over-long key is assembled on the heap before shortening.
		{"shortened", long, 2},
	}
}

func BenchmarkGenerateKey(b *testing.B) {
	for _, bc := range ckBenchSpecs() {
		b.Run(bc.name, func(b *testing.B) {
			doc, err := protocol.AppendKeyArgs(nil, bc.spec.Args, bc.spec.Kwargs)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := protocol.GenerateKey(bc.spec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkArgsHash(b *testing.B) {
	args := []any{"alice", 42, 1.5, []byte("bytes")}
	kwargs := map[string]any{"age": 30, "include_profile": true}
	doc, err := protocol.AppendKeyArgs(nil, args, kwargs)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := protocol.ArgsHash(args, kwargs); err != nil {
			b.Fatal(err)
		}
	}
}

func TestGenerateKeyAllocs(t *testing.T) {
	if ckRaceEnabled {
		t.Skip("allocation budgets need a build without -race (sync.Pool drops items)")
	}
	for _, bc := range ckBenchSpecs() {
		got := testing.AllocsPerRun(200, func() {
			if _, err := protocol.GenerateKey(bc.spec); err != nil {
				t.Fatal(err)
			}
		})
		if got > bc.allocs {
			t.Errorf("%s: %.0f allocs per key, budget %.0f", bc.name, got, bc.allocs)
		}
	}
}
