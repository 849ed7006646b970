package protocol

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"github.com/cachekit-io/cachekit-go/protocol/internal/mp"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cachekit-io/cachekit-go/internal/vectors"
	"github.com/zeebo/xxh3"
)

// The vendored wire-format.json is 1.3.0. Upstream 1.4.0 adds reject rows
// and width-boundary envelopes; the spec's reject table describes each one
// exactly, so they are rebuilt here from simple_string and run through the
// same assertions as the vendored rows.

const (
	ssBlock    = "f00168656c6c6f2c2063616368656b697421" // simple_string's 18-byte LZ4 block
	ssChecksum = "986dcc8a34ccb63a3c52ccd3"             // its checksum as fixarray(8)
	ssSize     = "10"                                   // original_size 16
	ssFormat   = "a76d73677061636b"                     // fixstr "msgpack"
	ssBin      = "94c412" + ssBlock + ssChecksum + ssSize + ssFormat
)

// specRejectRows returns the reject rows wire-format 1.4.0 adds, built as
// the spec's reject table describes them.
func specRejectRows() map[string]struct {
	hex  string
	step flexUint
} {
	legacyElements := "ccf001" + "cd0168" + ssBlock[6:] // element 2, 0x68, as uint16 360
	return map[string]struct {
		hex  string
		step flexUint
	}{
		"reject_envelope_arity_5":         {"95c412" + ssBlock + ssChecksum + ssSize + ssFormat + "c0", 2},
		"reject_envelope_arity_3":         {"93c412" + ssBlock + ssChecksum + ssSize, 2},
		"reject_checksum_nine_elements":   {"94c412" + ssBlock + "99" + ssChecksum[2:] + "00" + ssSize + ssFormat, 2},
		"reject_checksum_seven_elements":  {"94c412" + ssBlock + "97" + "6dcc8a34ccb63a3c52" + ssSize + ssFormat, 2},
		"reject_legacy_element_above_255": {"94dc0012" + legacyElements + ssChecksum + ssSize + ssFormat, 2},
		"reject_envelope_slots_overclaim": {"94c426" + ssBin[6:], 2},
		"reject_original_size_sign_bit":   {"94c412" + ssBlock + ssChecksum + "cf8000000000000010" + ssFormat, 4},
		"reject_ratio_float32_rounds": {
			"94c58000f0" + strings.Repeat("ff", 32767) + ssChecksum + "ce01f40001" + ssFormat, 5,
		},
	}
}

// TestEnvelopeSpecRejectRows: the reject rows wire-format 1.4.0 adds, built
// from the spec (specRejectRows), are each refused at their step with that
// check's error: arity, checksum arity and elements, the pre-scan,
// original_size with the sign bit set (WIRE-12), a ratio a float32 rounds to
// 1000 (WIRE-14), in the order the spec fixes (WIRE-5, WIRE-7, WIRE-10).
func TestEnvelopeSpecRejectRows(t *testing.T) {
	for name, row := range specRejectRows() {
		t.Run(name, func(t *testing.T) {
			env := vectors.Hex(t, row.hex)
			checkReject(t, rejectRow{Name: name, RejectStep: row.step}, env)
		})
	}
}

// The slots-overclaim row must be refused by the pre-scan itself, before the
// typed decode: calling the guard directly shows the read path's error is its:
// the whole-document slot sum, checked before anything is materialised
// (WIRE-8, WIRE-9).
func TestEnvelopePrescanOwnsOverclaim(t *testing.T) {
	env := vectors.Hex(t, specRejectRows()["reject_envelope_slots_overclaim"].hex)
	if len(env) != 42 {
		t.Fatalf("overclaim row is %d B, the spec says 42", len(env))
	}
	wantEnvelopeErr(t, prescanEnvelope(env), ErrTooLarge, reasonPrescanBudget)
	// Its per-header lengths each fit what follows: only the sum overclaims.
	if _, err := decodeEnvelope(env); err == nil {
		t.Fatalf("typed decode accepted the overclaim row")
	}
}

// literalBlock returns an LZ4 block of exactly size bytes holding only
// literals, and its decoded input, or false when no literal count yields
// exactly size bytes.
func literalBlock(rng *rand.Rand, size int) (block, input []byte, ok bool) {
	for n := size - 300; n <= size; n++ {
		if n < 15 {
			continue
		}
		ext := n - 15
		if 1+ext/255+1+n != size {
			continue
		}
		input = make([]byte, n)
		for i := range input {
			input[i] = byte(rng.Uint32())
		}
		block = append([]byte{0xf0}, bytes.Repeat([]byte{0xff}, ext/255)...)
		block = append(block, byte(ext%255))
		return append(block, input...), input, true
	}
	return nil, nil, false
}

// legacyEncode encodes fields with compressed_data as an array of integers,
// the pre-1.1 writer encoding.
func legacyEncode(block []byte, sum, size uint64, format string) []byte {
	out := []byte{0x94}
	switch n := len(block); {
	case n <= 15:
		out = append(out, 0x90|byte(n))
	case n <= 0xffff:
		out = binary.BigEndian.AppendUint16(append(out, 0xdc), uint16(n))
	default:
		out = binary.BigEndian.AppendUint32(append(out, 0xdd), uint32(n))
	}
	for _, b := range block {
		out = mp.AppendUint(out, uint64(b))
	}
	return appendEnvelopeTail(out, sum, size, format)
}

// Both sides of the bin16 -> bin32 boundary, and the array32 legacy form,
// as wire-format 1.4.0's constructed rows place them.
// It stands for wire-format 1.4.0's boundary rows (WIRE-1, WIRE-2, WIRE-4).
func TestEnvelopeBin16Bin32Boundary(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 32))
	cases := []struct {
		name   string
		size   int
		marker string
		legacy bool
	}{
		{"envelope_bin16_max", 0xffff, "94c5ffff", false},
		{"envelope_bin32_min", 0x10000, "94c600010000", false},
		{"envelope_legacy_array32_min", 0x10000, "94dd00010000", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			block, input, ok := literalBlock(rng, c.size)
			if !ok {
				t.Fatalf("no literal-only block of %d B", c.size)
			}
			var env []byte
			if c.legacy {
				env = legacyEncode(block, xxh3.Hash(input), uint64(len(input)), FormatMsgpack)
			} else {
				env = appendEnvelopeFields(nil, block, xxh3.Hash(input), uint64(len(input)), FormatMsgpack)
			}
			if !strings.HasPrefix(hex.EncodeToString(env), c.marker) {
				t.Fatalf("envelope starts %x, want %s", env[:6], c.marker)
			}
			got, err := OpenEnvelope(nil, env)
			if err != nil || !bytes.Equal(got, input) {
				t.Fatalf("OpenEnvelope: err %v", err)
			}
			e, err := ParseEnvelope(env)
			if err != nil || e.LegacyArray != c.legacy || !bytes.Equal(e.Compressed, block) {
				t.Fatalf("ParseEnvelope: err %v legacy %v", err, e.LegacyArray)
			}
		})
	}
}

// The writer's own bin8 -> bin16 edge: the first 253 and 254 bytes of
// width_boundary_bin16's incompressible input compress to 255 and 256 bytes.
// The writer picks the shortest bin form on both sides (WIRE-1).
func TestEnvelopeSealBin8Bin16Boundary(t *testing.T) {
	var input []byte
	for _, r := range vectors.Group[wireRow](t, "wire-format.json", "vectors") {
		if r.Name == "width_boundary_bin16" {
			input = vectors.Hex(t, r.InputHex)
		}
	}
	if len(input) != 300 {
		t.Fatalf("width_boundary_bin16 not found")
	}
	for _, c := range []struct {
		name   string
		n      int
		marker string
	}{
		{"width_boundary_bin8_max", 253, "94c4ff"},
		{"width_boundary_bin16_min", 254, "94c50100"},
	} {
		t.Run(c.name, func(t *testing.T) {
			env, err := SealEnvelope(nil, input[:c.n], FormatMsgpack)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(hex.EncodeToString(env), c.marker) {
				t.Fatalf("envelope starts %x, want %s", env[:4], c.marker)
			}
			if got, err := OpenEnvelope(nil, env); err != nil || !bytes.Equal(got, input[:c.n]) {
				t.Fatalf("reopen: %v", err)
			}
		})
	}
}

// Steps 1 and 3 need envelopes over 512 MiB; the spec says to test them with
// lowered caps through the same read path.
// It covers the three limits (WIRE-7) and steps 1 and 3, which no vector
// reaches (WIRE-19).
func TestEnvelopeLoweredCaps(t *testing.T) {
	env := vectors.Hex(t, ssBin)
	lim := defaultEnvelopeLimits
	lim.maxEnvelope = uint64(len(env)) - 1
	_, err := openEnvelope(nil, env, lim)
	wantEnvelopeErr(t, err, ErrTooLarge, reasonEnvelopeTooLarge)

	lim = defaultEnvelopeLimits
	lim.maxCompressed = 17
	_, err = openEnvelope(nil, env, lim)
	wantEnvelopeErr(t, err, ErrTooLarge, reasonCompressedTooLarge)

	lim = defaultEnvelopeLimits
	lim.maxOriginal = 15
	_, err = openEnvelope(nil, env, lim)
	wantEnvelopeErr(t, err, ErrTooLarge, reasonOriginalTooLarge)

	// At exactly the caps the envelope is accepted.
	lim = envelopeLimits{maxEnvelope: uint64(len(env)), maxCompressed: 18, maxOriginal: 16}
	if _, err := openEnvelope(nil, env, lim); err != nil {
		t.Fatalf("rejected at exactly the caps: %v", err)
	}
}

// The ratio bound is exact at 1000:1 and uses a 64-bit product: a header
// claiming exactly 1000 x compressed passes the bound (and fails later, on
// length), one byte more is a ratio error.
// The product is exact (WIRE-13) and a multiplication, never a ratio
// (WIRE-14).
func TestEnvelopeRatioEdge(t *testing.T) {
	for _, c := range []struct {
		size   uint64
		reason string
	}{
		{18000, reasonLength},
		{18001, reasonRatio},
	} {
		env := vectors.Hex(t, "94c412"+ssBlock+ssChecksum)
		env = mp.AppendUint(env, c.size)
		env = append(env, vectors.Hex(t, ssFormat)...)
		_, err := OpenEnvelope(nil, env)
		var fe *FormatError
		if !errors.As(err, &fe) || fe.Reason != c.reason {
			t.Fatalf("original_size %d: %v, want %q", c.size, err, c.reason)
		}
	}
}

// TestOpenEnvelopeMax: the caller's cap refuses a larger original before
// decompressing; 0 means the protocol's cap.
func TestOpenEnvelopeMax(t *testing.T) {
	orig := make([]byte, 4096)
	env, err := SealEnvelope(nil, orig, FormatMsgpack)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenEnvelopeMax(nil, env, 4095); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("cap 4095 on a 4096-byte original: %v, want ErrTooLarge", err)
	}
	for _, max := range []int{4096, 0, -1} {
		if out, err := OpenEnvelopeMax(nil, env, max); err != nil || len(out) != 4096 {
			t.Fatalf("cap %d: %d bytes, %v", max, len(out), err)
		}
	}
}
