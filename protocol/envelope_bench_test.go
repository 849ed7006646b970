package protocol

import (
	"math/rand/v2"
	"testing"

	"github.com/cachekit-io/cachekit-go/internal/fixture"
)

// benchSizes are the payload sizes the envelope benchmarks report.
var benchSizes = []struct {
	name string
	n    int
}{
	{"100B", 100},
	{"1KiB", 1 << 10},
	{"16KiB", 16 << 10},
	{"1MiB", 1 << 20},
}

func BenchmarkEnvelopeSeal(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			in := fixture.JSONish(rand.New(rand.NewPCG(11, uint64(s.n))), s.n)
			dst := make([]byte, 0, SealEnvelopeBound(s.n))
			b.ReportAllocs()
			b.SetBytes(int64(s.n))
			for b.Loop() {
				if _, err := SealEnvelope(dst, in, FormatMsgpack); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkEnvelopeOpen(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			in := fixture.JSONish(rand.New(rand.NewPCG(11, uint64(s.n))), s.n)
			env, err := SealEnvelope(nil, in, FormatMsgpack)
			if err != nil {
				b.Fatal(err)
			}
			dst := make([]byte, 0, s.n)
			b.ReportAllocs()
			b.SetBytes(int64(s.n))
			for b.Loop() {
				if _, err := OpenEnvelope(dst, env); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
