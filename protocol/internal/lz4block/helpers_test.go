package lz4block

import (
	"bytes"
	"fmt"
	"math/rand/v2"
)

// jsonish returns n bytes of mildly compressible, JSON-like text: the shape
// of a real cached value. It is package protocol's envelope test input,
// copied so that the compressor tests see the same bytes for the same seed.
func jsonish(rng *rand.Rand, n int) []byte {
	names := []string{"alice", "bob", "carol", "dave", "erin", "frank"}
	var b bytes.Buffer
	b.WriteByte('[')
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, `{"id":%d,"name":%q,"score":%d.%02d,"active":%t,"tags":["t%d","t%d"]},`,
			rng.IntN(1e6), names[rng.IntN(len(names))], rng.IntN(1000), rng.IntN(100),
			rng.IntN(2) == 0, rng.IntN(50), rng.IntN(50))
	}
	return b.Bytes()[:n]
}

// randomBytes returns n incompressible bytes.
func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}
