package protocol

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/pierrec/lz4/v4"
	"github.com/zeebo/xxh3"

	"github.com/cachekit-io/cachekit-go/protocol/internal/lz4block"

	"github.com/cachekit-io/cachekit-go/internal/fixture"
)

// The LZ4 block codec itself is tested in internal/lz4block; these tests
// hold SealEnvelope's choice among its writers.

// SealEnvelope uses this compressor up to 64 KiB and pierrec above.
func TestSealEnvelopeCompressorChoice(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	for _, n := range []int{100, 1 << 10, lz4block.MaxCompressLen, lz4block.MaxCompressLen + 1, 100000} {
		in := fixture.JSONish(rng, n)
		_, e := sealParsed(t, in)
		want := make([]byte, lz4.CompressBlockBound(n))
		var m int
		if n <= lz4block.MaxCompressLen {
			m = lz4block.Compress(want, in)
		} else {
			var c lz4.Compressor
			m, _ = c.CompressBlock(in, want)
		}
		if !bytes.Equal(e.Compressed, want[:m]) {
			t.Fatalf("%d bytes: the envelope's block is not the expected compressor's", n)
		}
	}
}

// TestLiteralBlockForIncompressibleLargeInput: a large original whose start
// does not compress is sealed as one literals-only block, which the library
// decoder and ours both read back; a compressible one still compresses.
// The originals are those of the large-block tests in internal/lz4block:
// 300 KiB of ChaCha8 noise and 360,000 bytes of repeated text.
func TestLiteralBlockForIncompressibleLargeInput(t *testing.T) {
	random := make([]byte, 300<<10)
	_, _ = rand.NewChaCha8([32]byte{9}).Read(random)
	text := bytes.Repeat([]byte("the quick brown fox jumps over the lazy dog; "), 8000)
	for _, c := range []struct {
		orig    []byte
		literal bool
	}{{random, true}, {text, false}, {append(bytes.Clone(random), make([]byte, 100<<10)...), true}} {
		env, err := SealEnvelope(nil, c.orig, FormatMsgpack)
		if err != nil {
			t.Fatal(err)
		}
		e, err := ParseEnvelope(env)
		if err != nil {
			t.Fatal(err)
		}
		// A literals-only block of c.orig is the one lz4block.PutLiterals
		// writes: its length encoding is the shortest, the one every
		// writer here uses.
		lit := make([]byte, lz4.CompressBlockBound(len(c.orig)))
		lit = lit[:lz4block.PutLiterals(lit, c.orig)]
		isLit := bytes.Equal(e.Compressed, lit)
		if isLit != c.literal {
			t.Fatalf("%d bytes: literals-only block %v, want %v", len(c.orig), isLit, c.literal)
		}
		if !c.literal && len(e.Compressed) >= len(c.orig) {
			t.Fatalf("%d compressible bytes: a %d-byte block", len(c.orig), len(e.Compressed))
		}
		lib := make([]byte, len(c.orig))
		if n, err := lz4.UncompressBlock(e.Compressed, lib); err != nil || n != len(c.orig) || !bytes.Equal(lib, c.orig) {
			t.Fatalf("%d bytes: the library does not read the block back: %v", len(c.orig), err)
		}
		got, err := OpenEnvelope(nil, env)
		if err != nil || !bytes.Equal(got, c.orig) {
			t.Fatalf("%d bytes: OpenEnvelope: %v", len(c.orig), err)
		}
	}
}

// TestEnvelopeChunkedIsOneShot: large envelopes sealed and opened on the
// chunked path carry what the one-shot libraries the chunked calls stand
// in for compute: the checksum is xxh3.Hash of the whole original, the
// block decodes with pierrec/lz4's one-shot UncompressBlock (when it is
// compressed) to the original, and OpenEnvelope returns it; for
// compressible, incompressible and mixed originals. (It used to flip the
// process-wide chunked.SetOneShot switch; nothing but the benchmark does.)
func TestEnvelopeChunkedIsOneShot(t *testing.T) {
	incompressible := make([]byte, 3<<20+5)
	x := uint32(1)
	for i := range incompressible {
		x = x*1664525 + 1013904223
		incompressible[i] = byte(x >> 24)
	}
	mixed := append(bytes.Repeat([]byte("cachekit "), 200<<10), incompressible[:1<<20]...)
	for name, original := range map[string][]byte{
		"compressible":   bytes.Repeat([]byte{7, 8, 9}, 1<<20),
		"incompressible": incompressible,
		"mixed":          mixed,
	} {
		t.Run(name, func(t *testing.T) {
			env, e := sealParsed(t, original)
			var sum [8]byte
			binary.BigEndian.PutUint64(sum[:], xxh3.Hash(original))
			if e.Checksum != sum {
				t.Fatalf("checksum %x, one-shot xxh3 %x", e.Checksum, sum)
			}
			if len(e.Compressed) != len(original) || !bytes.Equal(e.Compressed, original) {
				block := make([]byte, len(original))
				n, err := lz4.UncompressBlock(e.Compressed, block)
				if err != nil || !bytes.Equal(block[:n], original) {
					t.Fatalf("the block does not decode to the original with one-shot lz4: %d bytes, %v", n, err)
				}
			}
			got, err := OpenEnvelope(nil, env)
			if err != nil || !bytes.Equal(got, original) {
				t.Fatalf("open: %d bytes, %v", len(got), err)
			}
		})
	}
}

// sealParsed seals in into an envelope (msgpack format) and parses it,
// failing t on an error of either.
func sealParsed(t *testing.T, in []byte) ([]byte, Envelope) {
	t.Helper()
	env, err := SealEnvelope(nil, in, FormatMsgpack)
	if err != nil {
		t.Fatal(err)
	}
	e, err := ParseEnvelope(env)
	if err != nil {
		t.Fatal(err)
	}
	return env, e
}
