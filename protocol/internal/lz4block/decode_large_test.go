package lz4block

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/pierrec/lz4/v4"
)

// largeSamples are originals that compress into every kind of sequence:
// long literal runs, short and long matches, overlapping matches of
// period 1 to 7.
func largeSamples() [][]byte {
	r := rand.NewChaCha8([32]byte{9})
	random := make([]byte, 300<<10)
	_, _ = r.Read(random)
	text := bytes.Repeat([]byte("the quick brown fox jumps over the lazy dog; "), 8000)
	mixed := make([]byte, 0, 400<<10)
	for i := 0; len(mixed) < 400<<10; i++ {
		mixed = append(mixed, random[i*97%len(random):][:i%300]...)
		mixed = append(mixed, bytes.Repeat([]byte{byte(i)}, i%5000)...)
		mixed = append(mixed, bytes.Repeat([]byte("abcdefg")[:i%7+1], i%900)...)
	}
	return [][]byte{make([]byte, 1<<20), random, text, mixed}
}

// TestDecodeBlockLargeMatchesLibrary: blocks pierrec's compressor writes
// decode to the same bytes through both decoders.
func TestDecodeBlockLargeMatchesLibrary(t *testing.T) {
	for i, orig := range largeSamples() {
		block := make([]byte, lz4.CompressBlockBound(len(orig)))
		var c lz4.Compressor
		m, err := c.CompressBlock(orig, block)
		if err != nil || m == 0 {
			t.Fatalf("sample %d: compress: %v", i, err)
		}
		out := make([]byte, len(orig))
		n, err := decodeLarge(block[:m], out)
		if err != nil || n != len(orig) || !bytes.Equal(out, orig) {
			t.Fatalf("sample %d: decodeLarge = %d, %v; want the original", i, n, err)
		}
		if _, err := decodeLarge(block[:m], out[:len(orig)-1]); err == nil {
			t.Fatalf("sample %d: decoded into too small an output", i)
		}
	}
}

// FuzzDecodeBlockLarge: on any block and output size, decodeLarge
// accepts exactly what lz4.UncompressBlock accepts and writes the same
// bytes.
func FuzzDecodeBlockLarge(f *testing.F) {
	for _, orig := range largeSamples() {
		block := make([]byte, lz4.CompressBlockBound(len(orig)))
		var c lz4.Compressor
		m, _ := c.CompressBlock(orig[:4096], block)
		f.Add(block[:m], uint16(4096))
	}
	f.Add([]byte{0x1f, 'a', 1, 0, 0xff, 10}, uint16(300))
	f.Fuzz(func(t *testing.T, block []byte, size uint16) {
		want := make([]byte, size)
		got := make([]byte, size)
		n1, err1 := lz4.UncompressBlock(block, want)
		n2, err2 := decodeLarge(block, got)
		if err1 == nil && err2 != nil {
			t.Fatalf("library decoded %d bytes, ours refused: %v", n1, err2)
		}
		if err1 == nil && (n1 != n2 || !bytes.Equal(want[:n1], got[:n2])) {
			t.Fatalf("decoded %d vs %d bytes, or different bytes", n1, n2)
		}
		if err1 != nil && err2 == nil {
			// The library refuses some blocks the format allows: it
			// over-copies short literal runs and matches by up to 16
			// bytes and fails when that passes the end of out. Only
			// those may differ.
			if n2 == 0 || n2+16 <= len(got) {
				t.Fatalf("ours decoded %d of %d bytes where the library refused (%v)", n2, len(got), err1)
			}
		}
	})
}
