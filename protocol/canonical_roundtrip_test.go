package protocol

import (
	"bytes"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"unicode/utf8"
)

// iopRandValue builds a random value in exactly the Go form DecodeMsgpack
// returns, so a round trip can be compared with reflect.DeepEqual.
func iopRandValue(r *rand.Rand, depth int) any {
	k := r.IntN(10)
	if depth > 4 && k >= 7 {
		k = r.IntN(7)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		x := int64(r.Uint64())
		return x >> r.IntN(64)
	case 3:
		if r.IntN(2) == 0 {
			return uint64(math.MaxInt64) + 1 + r.Uint64N(math.MaxInt64)
		}
		return int64(r.IntN(300)) - 150
	case 4:
		for {
			f := math.Float64frombits(r.Uint64())
			if !math.IsNaN(f) && !math.IsInf(f, 0) {
				return f
			}
		}
	case 5:
		s := iopRandString(r)
		if !utf8.ValidString(s) {
			panic("generator produced invalid UTF-8")
		}
		return s
	case 6:
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	case 7:
		xs := make([]any, r.IntN(20))
		for i := range xs {
			xs[i] = iopRandValue(r, depth+1)
		}
		return xs
	default:
		m := map[string]any{}
		for range r.IntN(20) {
			m[iopRandString(r)] = iopRandValue(r, depth+1)
		}
		return m
	}
}

func TestCanonicalValueRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 2000 {
		v := iopRandValue(r, 0)
		enc, err := AppendCanonicalValue(nil, v)
		if err != nil {
			t.Fatalf("case %d: encode: %v", i, err)
		}
		dec, err := DecodeMsgpack(enc, DecodeLimits{})
		if err != nil {
			t.Fatalf("case %d: decode: %v", i, err)
		}
		if !reflect.DeepEqual(dec, v) {
			t.Fatalf("case %d: round trip changed the value", i)
		}
		again, err := AppendCanonicalValue(nil, dec)
		if err != nil || !bytes.Equal(again, enc) {
			t.Fatalf("case %d: re-encoding differs", i)
		}
	}
}
