package protocol

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/cachekit-io/cachekit-go/internal/vectors"
	"github.com/zeebo/xxh3"
)

// FuzzEnvelopeOpen feeds arbitrary bytes to the envelope reader. It must
// never panic, must leave dst's contents alone on error, and whatever it
// accepts must be self-consistent: ParseEnvelope agrees, the output has
// original_size bytes and the stored checksum, and both a fresh seal of the
// output and the canonical re-encode of the parsed fields reopen to it.
func FuzzEnvelopeOpen(f *testing.F) {
	seeds := 0
	for _, r := range vectors.Group[wireRow](f, "wire-format.json", "vectors") {
		f.Add(vectors.Hex(f, r.EnvelopeHex))
		seeds++
	}
	for _, r := range vectors.Group[rejectRow](f, "wire-format.json", "reject_vectors") {
		f.Add(vectors.Hex(f, r.EnvelopeHex))
		seeds++
	}
	for _, r := range specRejectRows() {
		f.Add(vectors.Hex(f, r.hex))
		seeds++
	}
	if seeds == 0 {
		f.Fatal("FuzzEnvelopeOpen has no seeds")
	}

	f.Fuzz(func(t *testing.T, env []byte) {
		dst := []byte("dst")
		out, err := OpenEnvelope(dst, env)
		e, perr := ParseEnvelope(env)
		if err != nil {
			if string(out) != "dst" {
				t.Fatalf("dst changed on error")
			}
			if _, ok := err.(*FormatError); !ok {
				t.Fatalf("error is %T, want *FormatError", err)
			}
			return
		}
		if perr != nil {
			t.Fatalf("OpenEnvelope accepted what ParseEnvelope rejects: %v", perr)
		}
		got := out[3:]
		if uint64(len(got)) != e.OriginalSize {
			t.Fatalf("output %d B, original_size %d", len(got), e.OriginalSize)
		}
		var sum [8]byte
		binary.BigEndian.PutUint64(sum[:], xxh3.Hash(got))
		if sum != e.Checksum {
			t.Fatalf("accepted output does not match its checksum")
		}
		enc := appendEnvelopeFields(nil, e.Compressed, beUint64(e.Checksum), e.OriginalSize, e.Format)
		if again, err := OpenEnvelope(nil, enc); err != nil || !bytes.Equal(again, got) {
			t.Fatalf("canonical re-encode does not reopen: %v", err)
		}
		if !knownFormat(e.Format) {
			return
		}
		sealed, err := SealEnvelope(nil, got, e.Format)
		if err != nil {
			t.Fatalf("re-seal: %v", err)
		}
		if again, err := OpenEnvelope(nil, sealed); err != nil || !bytes.Equal(again, got) {
			t.Fatalf("re-sealed envelope does not reopen: %v", err)
		}
	})
}
