package lz4block

import (
	"bytes"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/cachekit-io/cachekit-go/internal/fixture"
	"github.com/cachekit-io/cachekit-go/internal/testenv"
	"github.com/pierrec/lz4/v4"
)

// The compressor against pierrec/lz4 (ratio, skipped noise), its refusals,
// allocations, fuzzing and benchmarks.
// On compressible input the blocks are no more than 10% larger than
// pierrec's.
func TestLZ4CompressRatio(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, k := range lz4Kinds() {
		if k.name == "random" || k.name == "fixture" {
			continue // fixture is covered at the sizes where it repeats
		}
		for _, n := range []int{1 << 10, 4 << 10, 16 << 10, 64 << 10} {
			in := k.gen(rng, n)
			ours := len(checkLZ4Compress(t, in, nil))
			ref := pierrecBlockLen(t, in)
			t.Logf("%s/%d: ours %d, pierrec %d", k.name, n, ours, ref)
			if ours*10 > ref*11 {
				t.Errorf("%s/%d: %d bytes, pierrec %d", k.name, n, ours, ref)
			}
		}
	}
	for _, n := range []int{4 << 10, 16 << 10, 64 << 10} {
		in := fixture.NewBytes(n)
		ours, ref := len(checkLZ4Compress(t, in, nil)), pierrecBlockLen(t, in)
		t.Logf("fixture/%d: ours %d, pierrec %d", n, ours, ref)
		if ours*10 > ref*11 {
			t.Errorf("fixture/%d: %d bytes, pierrec %d", n, ours, ref)
		}
	}
}

// pierrecBlockLen is the length of pierrec's block for in.
func pierrecBlockLen(t testing.TB, in []byte) int {
	t.Helper()
	var c lz4.Compressor
	dst := make([]byte, lz4.CompressBlockBound(len(in)))
	m, err := c.CompressBlock(in, dst)
	if err != nil || m <= 0 {
		t.Fatalf("pierrec: %d, %v", m, err)
	}
	return m
}

// Incompressible input stays within the bound, and the search's growing
// stride still finds a long repeat that follows a long stretch of noise
// (backward extension recovers the start it strode past).
func TestLZ4CompressSkipsNoise(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, n := range []int{4 << 10, 32 << 10} {
		noise := fixture.RandomBytes(rng, n)
		block := checkLZ4Compress(t, append(noise, noise...), nil)
		if len(block) > n+n/32 {
			t.Fatalf("%d B of noise repeated once: %d-byte block", n, len(block))
		}
	}
	// Each probe records its position in the table, so a search that
	// probed every position of 16 KiB of noise would leave most of the
	// 16384 entries set; the growing stride probes about 1000 positions.
	n := 16 << 10
	tab := new(table)
	tab.compress(make([]byte, lz4.CompressBlockBound(n)), fixture.RandomBytes(rng, n))
	set := 0
	for _, p := range tab.pos[:1<<hashLog(n)] {
		if p != 0 {
			set++
		}
	}
	t.Logf("16 KiB of noise left %d of %d table entries set", set, 1<<hashLog(n))
	if set > n/8 {
		t.Fatalf("16 KiB of noise: %d table entries set, the search did not stride", set)
	}
}

func TestLZ4CompressRefusals(t *testing.T) {
	over := make([]byte, MaxCompressLen+1)
	if m := Compress(make([]byte, lz4.CompressBlockBound(len(over))), over); m != 0 {
		t.Fatalf("compressed %d bytes, above the 64 KiB limit", len(over))
	}
	in := fixture.JSONish(rand.New(rand.NewPCG(1, 1)), 1000)
	dst := bytes.Repeat([]byte{0xaa}, lz4.CompressBlockBound(len(in))-1)
	if m := Compress(dst, in); m != 0 {
		t.Fatalf("wrote a %d-byte block into a dst below the bound", m)
	}
	if bytes.Count(dst, []byte{0xaa}) != len(dst) {
		t.Fatal("a refused call wrote to dst")
	}
}

func TestAllocLZ4Compress(t *testing.T) {
	if testenv.RaceEnabled {
		t.Skip("sync.Pool drops tables at random under -race")
	}
	rng := rand.New(rand.NewPCG(9, 9))
	for _, n := range []int{100, 1 << 10, 16 << 10, MaxCompressLen} {
		in := fixture.JSONish(rng, n)
		dst := make([]byte, lz4.CompressBlockBound(n))
		allocs := testing.AllocsPerRun(100, func() {
			if Compress(dst, in) <= 0 {
				t.Fatal("compression refused")
			}
		})
		if allocs != 0 {
			t.Fatalf("%d bytes: %v allocs per compress into a sized dst", n, allocs)
		}
	}
}

func FuzzLZ4Compress(f *testing.F) {
	seeds := 0
	rng := rand.New(rand.NewPCG(10, 10))
	for _, k := range lz4Kinds() {
		for _, n := range []int{0, 12, 13, 17, 64, 300, 1 << 10} {
			f.Add(k.gen(rng, n))
			seeds++
		}
	}
	if seeds == 0 {
		f.Fatal("FuzzLZ4Compress has no seeds")
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > MaxCompressLen {
			in = in[:MaxCompressLen]
		}
		checkLZ4Compress(t, in, nil)
	})
}

// pierrecCompressors pools pierrec's compressors for the benchmark, as
// protocol's SealEnvelope pools them for originals above MaxCompressLen.
var pierrecCompressors = sync.Pool{New: func() any { return new(lz4.Compressor) }}

// BenchmarkLZ4Compress compares this compressor with pierrec's (pooled, as
// SealEnvelope used it) on the sizes and inputs of a cached value. "text" is
// the JSON-like value of the envelope benchmarks.
func BenchmarkLZ4Compress(b *testing.B) {
	inputs := []struct {
		name string
		gen  func(n int) []byte
	}{
		{"fixture", fixture.NewBytes},
		{"text", func(n int) []byte { return fixture.JSONish(rand.New(rand.NewPCG(11, uint64(n))), n) }},
		{"random", func(n int) []byte { return fixture.RandomBytes(rand.New(rand.NewPCG(12, uint64(n))), n) }},
	}
	impls := []struct {
		name     string
		compress func(dst, src []byte) int
	}{
		{"ours", Compress},
		{"pierrec", func(dst, src []byte) int {
			c := pierrecCompressors.Get().(*lz4.Compressor)
			m, _ := c.CompressBlock(src, dst)
			pierrecCompressors.Put(c)
			return m
		}},
	}
	for _, impl := range impls {
		b.Run(impl.name, func(b *testing.B) {
			for _, s := range []struct {
				name string
				n    int
			}{{"100B", 100}, {"1KiB", 1 << 10}, {"16KiB", 16 << 10}} {
				b.Run(s.name, func(b *testing.B) {
					for _, in := range inputs {
						b.Run(in.name, func(b *testing.B) {
							src := in.gen(s.n)
							dst := make([]byte, lz4.CompressBlockBound(s.n))
							b.ReportAllocs()
							b.SetBytes(int64(s.n))
							for b.Loop() {
								if impl.compress(dst, src) <= 0 {
									b.Fatal("compression failed")
								}
							}
						})
					}
				})
			}
		})
	}
}
