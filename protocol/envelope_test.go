package protocol

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/cachekit-io/cachekit-go/protocol/internal/mp"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cachekit-io/cachekit-go/internal/vectors"

	"github.com/cachekit-io/cachekit-go/internal/fixture"
)

// roundTripSizes covers empty, tiny, the LZ4 end-of-block thresholds and the
// sizes whose literal-only blocks straddle the bin8/bin16/bin32 headers.
var roundTripSizes = []int{0, 1, 2, 4, 5, 11, 12, 13, 15, 16, 17, 31, 32, 64, 252, 253, 254, 255, 256, 257,
	270, 1023, 1024, 4096, 65000, 65278, 65279, 65280, 65535, 65536, 70000, 1 << 20}

// TestEnvelopeRoundTrip: envelopes this package's own LZ4 writer seals, for
// random, JSON-like and zero inputs of many sizes, decode per the Retrieve
// Flow to their input with the shortest bin header: the writer is judged by
// decoding, not by the fixture's compressed bytes (WIRE-6).
func TestEnvelopeRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	gens := map[string]func(int) []byte{
		"random":  func(n int) []byte { return fixture.RandomBytes(rng, n) },
		"jsonish": func(n int) []byte { return fixture.JSONish(rng, n) },
		"zeros":   func(n int) []byte { return make([]byte, n) },
	}
	for name, gen := range gens {
		for _, n := range roundTripSizes {
			t.Run(fmt.Sprintf("%s/%d", name, n), func(t *testing.T) {
				in := gen(n)
				prefix := []byte("prefix")
				env, err := SealEnvelope(prefix, in, FormatMsgpack)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.HasPrefix(env, []byte("prefix")) {
					t.Fatalf("SealEnvelope did not append to dst")
				}
				env = env[len(prefix):]
				if len(env) > SealEnvelopeBound(n) {
					t.Fatalf("envelope %d B exceeds SealEnvelopeBound %d", len(env), SealEnvelopeBound(n))
				}
				e, err := ParseEnvelope(env)
				if err != nil {
					t.Fatal(err)
				}
				// The writer always picks the shortest bin header.
				wantMarker := map[int]byte{2: 0xc4, 3: 0xc5, 5: 0xc6}[mp.BinHeaderLen(len(e.Compressed))]
				if env[1] != wantMarker || e.LegacyArray || e.OriginalSize != uint64(n) || e.Format != FormatMsgpack {
					t.Fatalf("header: marker %#x for %d B, legacy %v", env[1], len(e.Compressed), e.LegacyArray)
				}
				out, err := OpenEnvelope([]byte("x"), env)
				if err != nil || !bytes.Equal(out[1:], in) || out[0] != 'x' {
					t.Fatalf("OpenEnvelope: %v", err)
				}
			})
		}
	}
}

func TestEnvelopeFormats(t *testing.T) {
	for _, f := range []string{FormatMsgpack, FormatOrjson, FormatArrow} {
		env, err := SealEnvelope(nil, []byte("payload"), f)
		if err != nil {
			t.Fatal(err)
		}
		if e, err := ParseEnvelope(env); err != nil || e.Format != f {
			t.Fatalf("format %q: %v", e.Format, err)
		}
	}
	for _, f := range []string{"", "MSGPACK", "json", "msgpack\x00"} {
		got, err := SealEnvelope([]byte("keep"), []byte("payload"), f)
		if !errors.Is(err, ErrMalformed) || string(got) != "keep" {
			t.Fatalf("format %q: err %v, dst %q", f, err, got)
		}
	}
}

// A single-bit flip never makes an envelope open to different data. Flips
// in the header, checksum or original_size are always errors. A flip inside
// the format string may still open (format is outside the checksum by
// design), and so may a flip inside the LZ4 block that yields another block
// decoding to the same bytes (LZ4 is not canonical: among repeated bytes a
// match offset can change without changing the output). Both must then
// return exactly the original.
func TestEnvelopeBitFlips(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	inputs := map[string][]byte{
		"hello":    []byte("hello, cachekit!"),
		"jsonish":  fixture.JSONish(rng, 300),
		"random":   fixture.RandomBytes(rng, 80),
		"empty":    {},
		"repeated": bytes.Repeat([]byte("A"), 1024),
	}
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			env, err := SealEnvelope(nil, in, FormatMsgpack)
			if err != nil {
				t.Fatal(err)
			}
			formatStart := len(env) - len(FormatMsgpack)
			e, err := ParseEnvelope(env)
			if err != nil {
				t.Fatal(err)
			}
			blockStart := 1 + mp.BinHeaderLen(len(e.Compressed))
			blockEnd := blockStart + len(e.Compressed)
			inBlock := func(i int) bool { return i >= blockStart && i < blockEnd }
			mut := make([]byte, len(env))
			for i := range env {
				for bit := range 8 {
					copy(mut, env)
					mut[i] ^= 1 << bit
					out, err := OpenEnvelope(nil, mut)
					if err == nil && !bytes.Equal(out, in) {
						t.Fatalf("byte %d bit %d: opened to different data", i, bit)
					}
					if err == nil && i < formatStart && !inBlock(i) {
						t.Fatalf("byte %d bit %d: flip outside format accepted", i, bit)
					}
				}
			}
		})
	}
}

// Every proper prefix of an envelope is rejected, as is every envelope with
// bytes appended.
func TestEnvelopeTruncationAndTrailing(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, in := range [][]byte{{}, []byte("x"), fixture.JSONish(rng, 500), fixture.RandomBytes(rng, 300)} {
		env, err := SealEnvelope(nil, in, FormatMsgpack)
		if err != nil {
			t.Fatal(err)
		}
		for i := range len(env) {
			if _, err := OpenEnvelope(nil, env[:i]); err == nil {
				t.Fatalf("accepted a %d-byte prefix of %d", i, len(env))
			}
			if _, err := ParseEnvelope(env[:i]); err == nil {
				t.Fatalf("ParseEnvelope accepted a %d-byte prefix", i)
			}
		}
		for _, tail := range []string{"\x00", "\xc0", "\x94"} {
			_, err := OpenEnvelope(nil, append(bytes.Clone(env), tail...))
			wantEnvelopeErr(t, err, ErrMalformed, reasonTrailing)
		}
	}
}

// Field encodings the strict decoder accepts or refuses beyond the vectors.
// The checksum is an array of 8 integers, never bin (WIRE-3).
func TestEnvelopeFieldEncodings(t *testing.T) {
	hexes := func(parts ...string) []byte { return vectors.Hex(t, strings.Join(parts, "")) }
	accept := map[string][]byte{
		// Non-shortest widths are legal MessagePack and rmp-serde reads them.
		"bin16_for_short_block":  hexes("94c50012", ssBlock, ssChecksum, ssSize, ssFormat),
		"array16_outer":          hexes("dc0004c412", ssBlock, ssChecksum, ssSize, ssFormat),
		"checksum_uint16_widths": hexes("94c412", ssBlock, "98cd006dcc8a34ccb63a3c52ccd3", ssSize, ssFormat),
		"original_size_uint64":   hexes("94c412", ssBlock, ssChecksum, "cf0000000000000010", ssFormat),
		"format_str8":            hexes("94c412", ssBlock, ssChecksum, ssSize, "d9076d73677061636b"),
		"format_other_token":     hexes("94c412", ssBlock, ssChecksum, ssSize, "a474657874"),
	}
	for name, env := range accept {
		t.Run("accept/"+name, func(t *testing.T) {
			if out, err := OpenEnvelope(nil, env); err != nil || string(out) != "hello, cachekit!" {
				t.Fatalf("rejected: %v", err)
			}
		})
	}
	reject := map[string]struct {
		env    []byte
		reason string
	}{
		"map_form":              {hexes("82c412", ssBlock, ssChecksum, ssSize, ssFormat), reasonNotArray4},
		"checksum_as_bin":       {hexes("94c412", ssBlock, "c4086d8a34b63a3c52d3", ssSize, ssFormat), reasonChecksumArity},
		"checksum_signed":       {hexes("94c412", ssBlock, "98d06dcc8a34ccb63a3c52ccd3", ssSize, ssFormat), reasonChecksumElement},
		"checksum_negative":     {hexes("94c412", ssBlock, "98ffcc8a34ccb63a3c52ccd3", ssSize, ssFormat), reasonChecksumElement},
		"checksum_element_256":  {hexes("94c412", ssBlock, "98cd01006d34ccb63a3c52ccd3", ssSize, ssFormat), reasonChecksumElement},
		"original_size_signed":  {hexes("94c412", ssBlock, ssChecksum, "d010", ssFormat), reasonOriginalSizeType},
		"original_size_float":   {hexes("94c412", ssBlock, ssChecksum, "cb4030000000000000", ssFormat), reasonOriginalSizeType},
		"compressed_as_str":     {hexes("94b2", ssBlock, ssChecksum, ssSize, ssFormat), reasonCompressedType},
		"compressed_nil":        {hexes("94c0", ssChecksum, ssSize, ssFormat), reasonCompressedType},
		"legacy_signed_element": {hexes("9492d0f001", ssChecksum, ssSize, ssFormat), reasonLegacyElement},
		"format_as_bin":         {hexes("94c412", ssBlock, ssChecksum, ssSize, "c4076d73677061636b"), reasonFormatType},
		"format_not_utf8":       {hexes("94c412", ssBlock, ssChecksum, ssSize, "a2c328"), reasonFormatUTF8},
		"reserved_marker":       {hexes("94c1", ssChecksum, ssSize, ssFormat), reasonPrescanMarker},
		"empty_input":           {nil, reasonPrescanTruncated},
	}
	for name, c := range reject {
		t.Run("reject/"+name, func(t *testing.T) {
			_, err := OpenEnvelope(nil, c.env)
			var fe *FormatError
			if !errors.As(err, &fe) || fe.Reason != c.reason {
				t.Fatalf("got %v, want %q", err, c.reason)
			}
		})
	}
}

// The pre-scan's depth bound and its 64-bit running sum.
// The slots are summed over the whole document in 64 bits (IOP-30, WIRE-8,
// WIRE-9).
func TestEnvelopePrescanBounds(t *testing.T) {
	deep := append(bytes.Repeat([]byte{0x91}, prescanMaxDepth+1), 0xc0)
	wantEnvelopeErr(t, prescanEnvelope(deep), ErrTooLarge, reasonPrescanDepth)
	ok := append(bytes.Repeat([]byte{0x91}, prescanMaxDepth), 0xc0)
	if err := prescanEnvelope(ok); err != nil {
		t.Fatalf("depth %d rejected: %v", prescanMaxDepth, err)
	}
	// Two array32 headers claiming 2^32-1 each: the sum passes 2^32 and must
	// not wrap into the budget.
	wraps := vectors.Hex(t, "92ddffffffffddffffffff")
	wantEnvelopeErr(t, prescanEnvelope(wraps), ErrTooLarge, reasonPrescanBudget)
	// A map pair counts two slots.
	wantEnvelopeErr(t, prescanEnvelope(vectors.Hex(t, "82c0c0c0")), ErrTooLarge, reasonPrescanBudget)
	// A bin32 header claiming 4 GiB from a tiny input.
	wantEnvelopeErr(t, prescanEnvelope(vectors.Hex(t, "94c6ffffffff00")), ErrTooLarge, reasonPrescanBudget)
	// Structurally incomplete although within budget.
	wantEnvelopeErr(t, prescanEnvelope(vectors.Hex(t, "92dc0000")), ErrMalformed, reasonPrescanTruncated)
}

func TestEnvelopeOverlapRefused(t *testing.T) {
	buf := make([]byte, 16, 4096)
	copy(buf, "hello, cachekit!")
	if _, err := SealEnvelope(buf[:0], buf[:16], FormatMsgpack); !errors.Is(err, ErrMalformed) {
		t.Fatalf("SealEnvelope into its own input: %v", err)
	}
	env, err := SealEnvelope(make([]byte, 0, 4096), []byte("hello, cachekit!"), FormatMsgpack)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenEnvelope(env[:0], env); !errors.Is(err, ErrMalformed) {
		t.Fatalf("OpenEnvelope into its own input: %v", err)
	}
}
