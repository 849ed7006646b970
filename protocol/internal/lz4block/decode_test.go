package lz4block

import (
	"bytes"
	"testing"

	"github.com/pierrec/lz4/v4"
)

// literalBlocks returns LZ4 blocks of one literal run of every length up to
// max, as the compressor writes them.
func literalBlocks(max int) [][]byte {
	var out [][]byte
	for n := 0; n <= max; n++ {
		lit := make([]byte, n)
		for i := range lit {
			lit[i] = byte(i*31 + n)
		}
		dst := make([]byte, lz4.CompressBlockBound(n)+1)
		out = append(out, dst[:putLastLiterals(dst, 0, lit)])
	}
	return out
}

// checkLikeLibrary decodes block into outs of several sizes through
// Decompress and through the library decoder alone, and fails unless
// both return the same length, both fail or both succeed, and write the
// same bytes.
func checkLikeLibrary(t *testing.T, block []byte, size int) {
	t.Helper()
	for _, n := range []int{size - 1, size, size + 1, size + 16} {
		if n <= 0 {
			continue // an empty out never reaches the library (see Decompress)
		}
		got, want := make([]byte, n), make([]byte, n)
		gn, gerr := Decompress(block, got)
		wn, werr := lz4.UncompressBlock(block, want)
		if (gerr == nil) != (werr == nil) || (gerr == nil && gn != wn) {
			t.Fatalf("block % x into %d bytes: got (%d, %v), library (%d, %v)", block[:min(len(block), 8)], n, gn, gerr, wn, werr)
		}
		if gerr == nil && !bytes.Equal(got[:gn], want[:wn]) {
			t.Fatalf("block % x into %d bytes: output differs from the library's", block[:min(len(block), 8)], n)
		}
	}
}

// TestUncompressBlockLiteralRun: a literal-only block decodes to its
// literals, and every variation of one (a match nibble set, a cut at every
// length, a byte more, each header bit flipped, a non-minimal length) gets
// the library's verdict, so the fast path accepts nothing the library does
// not and decodes nothing differently.
func TestUncompressBlockLiteralRun(t *testing.T) {
	blocks := literalBlocks(600) // lengths cross 15, 270 and 525, where extension bytes begin
	for n, block := range blocks {
		lit, ok := literalRun(block)
		if !ok || len(lit) != n {
			t.Fatalf("literal block of %d bytes: literalRun = (%d bytes, %v)", n, len(lit), ok)
		}
		checkLikeLibrary(t, block, n)
		for nib := byte(1); nib <= runMask; nib++ {
			v := bytes.Clone(block)
			v[0] |= nib
			if _, ok := literalRun(v); ok {
				t.Fatalf("literal block of %d bytes with match nibble %d taken as a literal run", n, nib)
			}
			checkLikeLibrary(t, v, n)
		}
		for cut := range len(block) {
			checkLikeLibrary(t, block[:cut], n)
		}
		checkLikeLibrary(t, append(bytes.Clone(block), 0), n)
		header := len(block) - n
		for i := range header * 8 {
			v := bytes.Clone(block)
			v[i/8] ^= 1 << (i % 8)
			checkLikeLibrary(t, v, n)
		}
	}
	// 15 literals written as 15 plus an extension byte of 0, and 270 as
	// 15+255+0: legal, if not what a compressor writes.
	for _, n := range []int{15, 270} {
		lit := bytes.Repeat([]byte{'x'}, n)
		block := []byte{0xF0}
		for rest := n - 15; ; rest -= 255 {
			if rest < 255 {
				block = append(block, byte(rest))
				break
			}
			block = append(block, 255)
		}
		block = append(block, lit...)
		if got, ok := literalRun(block); !ok || !bytes.Equal(got, lit) {
			t.Fatalf("%d literals with a trailing zero extension: literalRun = (%d bytes, %v)", n, len(got), ok)
		}
		checkLikeLibrary(t, block, n)
	}
}

// TestUncompressBlockCompressed: blocks with matches still decode through
// the library, to their input.
func TestUncompressBlockCompressed(t *testing.T) {
	for _, n := range []int{64, 1 << 10, 16 << 10} {
		src := bytes.Repeat([]byte("cachekit "), n/9+1)[:n]
		dst := make([]byte, lz4.CompressBlockBound(n))
		block := dst[:Compress(dst, src)]
		if _, ok := literalRun(block); ok {
			t.Fatalf("%d compressible bytes: block taken as a literal run", n)
		}
		out := make([]byte, n)
		if k, err := Decompress(block, out); err != nil || k != n || !bytes.Equal(out, src) {
			t.Fatalf("%d compressible bytes: Decompress = (%d, %v), output equal %v", n, k, err, bytes.Equal(out, src))
		}
		checkLikeLibrary(t, block, n)
	}
}

// FuzzUncompressBlock holds Decompress to the library decoder's
// verdict and output on any block, seeded with literal runs and the wire
// vectors' blocks.
func FuzzUncompressBlock(f *testing.F) {
	for _, b := range literalBlocks(300)[:40] {
		f.Add(b, uint16(len(b)))
	}
	for _, r := range binWireRows(f) {
		f.Add(r.block, uint16(min(len(r.input), 1<<16-1)))
	}
	f.Fuzz(func(t *testing.T, block []byte, size uint16) {
		checkLikeLibrary(t, block, int(size))
	})
}
