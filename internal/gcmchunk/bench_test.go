package gcmchunk

import (
	"strconv"
	"testing"
)

// BenchmarkSeal compares the chunked path with crypto/cipher's one-shot
// GCM on large messages.
func BenchmarkSeal(b *testing.B) {
	for _, n := range []int{1 << 20, 64 << 20} {
		msg := make([]byte, n)
		out := make([]byte, 0, n+TagSize)
		nonce := make([]byte, NonceSize)
		for _, chunk := range []int{0, 64 << 10, 256 << 10} {
			std, a := pair(b, make([]byte, 32), max(chunk, 16))
			name := "oneshot"
			if chunk > 0 {
				name = "chunk" + strconv.Itoa(chunk>>10) + "K"
			}
			b.Run(strconv.Itoa(n>>20)+"MiB/"+name, func(b *testing.B) {
				b.SetBytes(int64(n))
				for b.Loop() {
					if chunk == 0 {
						std.Seal(out[:0], nonce, msg, nil)
					} else {
						a.Seal(out[:0], nonce, msg, nil)
					}
				}
			})
		}
	}
}
