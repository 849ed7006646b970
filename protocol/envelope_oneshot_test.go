package protocol

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/pierrec/lz4/v4"
	"github.com/zeebo/xxh3"
)

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
			env, err := SealEnvelope(nil, original, FormatMsgpack)
			if err != nil {
				t.Fatal(err)
			}
			e, err := ParseEnvelope(env)
			if err != nil {
				t.Fatal(err)
			}
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
