package protocol

import (
	"bytes"
	"testing"

	"github.com/cachekit-io/cachekit-go/internal/chunked"
)

// TestEnvelopeChunkedIsOneShot: large envelopes sealed and opened on the
// chunked path are byte-identical to the one-shot path's (the library
// calls chunked.SetOneShot stands in for), for compressible,
// incompressible and mixed originals, and each opens the other's.
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
			defer chunked.SetOneShot(false)
			var env [2][]byte
			for i, oneShot := range []bool{false, true} {
				chunked.SetOneShot(oneShot)
				e, err := SealEnvelope(nil, original, FormatMsgpack)
				if err != nil {
					t.Fatal(err)
				}
				env[i] = e
			}
			if !bytes.Equal(env[0], env[1]) {
				t.Fatalf("chunked and one-shot envelopes differ (%d and %d bytes)", len(env[0]), len(env[1]))
			}
			for _, oneShot := range []bool{false, true} {
				chunked.SetOneShot(oneShot)
				got, err := OpenEnvelope(nil, env[0])
				if err != nil || !bytes.Equal(got, original) {
					t.Fatalf("open (one-shot %v): %d bytes, %v", oneShot, len(got), err)
				}
			}
		})
	}
}
