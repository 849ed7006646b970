package structdec

import (
	"reflect"
	"testing"

	"github.com/cachekit-io/cachekit-go/internal/fixture"
)

// fuzzTypes are the destinations FuzzDecode decodes into, picked by the
// input's first byte.
var fuzzTypes = []reflect.Type{
	reflect.TypeFor[Record](),
	reflect.TypeFor[Outer](),
	reflect.TypeFor[Named](),
	reflect.TypeFor[Member](),
	reflect.TypeFor[Times](),
	reflect.TypeFor[Ptrs](),
	reflect.TypeFor[Maps](),
	reflect.TypeFor[Slices](),
	reflect.TypeFor[EmbedsDeep](),
}

// fuzzSeeds returns the encoded documents of the other tests.
func fuzzSeeds(tb testing.TB) [][]byte {
	seeds := recordDocs(tb)
	for _, typ := range fuzzTypes {
		for _, mode := range modes {
			seeds = append(seeds, encodings(tb, newDst(typ, mode))...)
		}
	}
	for _, v := range catalogue() {
		seeds = append(seeds, fmap(fixstr("tags"), v), fmap(fixstr("in"), fmap(fixstr("tags"), v)), fmap(fixstr("f32"), v))
	}
	for _, d := range kindDocs() {
		seeds = append(seeds, d)
	}
	for _, size := range []int{0, 300} {
		seeds = append(seeds, encodings(tb, fixture.NewMember(size))...)
	}
	return seeds
}

// FuzzDecode checks the differential property on arbitrary documents, for
// the destination types above and every pre-population.
func FuzzDecode(f *testing.F) {
	seeds := fuzzSeeds(f)
	if len(seeds) == 0 {
		f.Fatal("empty seed corpus")
	}
	for _, s := range seeds {
		if len(s) > 4096 {
			continue // minimizing a large input stalls the fuzzer
		}
		for i := range fuzzTypes {
			f.Add(uint8(i), s)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		if declaresHugeLength(data) {
			t.Skip("msgpack.Unmarshal is too slow on this input to fuzz")
		}
		typ := fuzzTypes[int(which)%len(fuzzTypes)]
		for _, mode := range modes {
			differential(t, typ, mode, data)
		}
	})
}

// hugeLength is the declared length from which declaresHugeLength objects.
const hugeLength = 1 << 10

// declaresHugeLength reports whether data's first value, walked as far as it
// is well formed, declares a string, binary, ext, array or map longer than
// both hugeLength and the bytes left. msgpack.Unmarshal preallocates for
// such a declaration (up to a million strings for a []string) and grows its
// pooled read buffer by up to 1 MiB on every truncated string, copying it
// each time, so such inputs make each run slow and minimizing one stalls
// the fuzzer. TestDifferentialShapes covers them with fixed documents.
func declaresHugeLength(data []byte) bool {
	r := reader{b: data}
	huge := false
	var walk func(depth int) bool
	walk = func(depth int) bool {
		if depth > maxSkipDepth {
			return false
		}
		start := r.i
		c, ok := r.code()
		if !ok {
			return false
		}
		var n int
		switch {
		case c >= 0x80 && c <= 0x8f || c == cMap16 || c == cMap32:
			if n, ok = r.mapLen(c); !ok {
				return false
			}
			n *= 2
		case c >= 0x90 && c <= 0x9f || c == cArr16 || c == cArr32:
			if n, ok = r.arrayLen(c); !ok {
				return false
			}
		default:
			r.i = start
			before := r.i
			if r.skip(maxSkipDepth - 1) {
				return true
			}
			// Find the declared length the skip tripped over, if any.
			r.i = before + 1
			var l int
			switch c {
			case cStr8, cBin8, cExt8:
				l, ok = count(r.u8())
			case cStr16, cBin16, cExt16:
				l, ok = count(r.u16())
			case cStr32, cBin32, cExt32:
				l, ok = count(r.u32())
			}
			huge = ok && l >= hugeLength && l > r.remaining()
			return false
		}
		if n >= hugeLength && n > r.remaining() {
			huge = true
			return false
		}
		for ; n > 0; n-- {
			if !walk(depth + 1) {
				return false
			}
		}
		return true
	}
	walk(0)
	return huge
}
