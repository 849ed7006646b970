package protocol

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/cachekit-io/cachekit-go/internal/vectors"
	"github.com/zeebo/xxh3"
)

// flexUint decodes a JSON number or a JSON string holding one: the vendored
// wire-format.json 1.3.0 writes sizes as strings, newer revisions as numbers.
type flexUint uint64

func (f *flexUint) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	v, err := strconv.ParseUint(s, 10, 64)
	*f = flexUint(v)
	return err
}

// wireRow is one row of wire-format.json's "vectors" group.
type wireRow struct {
	Name             string   `json:"name"`
	EnvelopeHex      string   `json:"envelope_hex"`
	EnvelopeSize     flexUint `json:"envelope_size"`
	InputHex         string   `json:"input_hex"`
	InputSize        flexUint `json:"input_size"`
	Format           string   `json:"format"`
	EnvelopeEncoding string   `json:"envelope_encoding"`
	DerivedFrom      string   `json:"derived_from"`
}

// rejectRow is one row of wire-format.json's "reject_vectors" group.
type rejectRow struct {
	Name         string   `json:"name"`
	EnvelopeHex  string   `json:"envelope_hex"`
	EnvelopeSize flexUint `json:"envelope_size"`
	RejectStep   flexUint `json:"reject_step"`
	RejectCheck  string   `json:"reject_check"`
	OriginalSize flexUint `json:"original_size"`
}

// segment is one entry of a construction list: Hex repeated Count times.
type segment struct {
	Hex   string   `json:"hex"`
	Count flexUint `json:"count"`
}

// constructedRow is one row of wire-format.json's "constructed_vectors".
type constructedRow struct {
	Name                 string    `json:"name"`
	Format               string    `json:"format"`
	OriginalSize         flexUint  `json:"original_size"`
	CompressedSize       flexUint  `json:"compressed_size"`
	EnvelopeSize         flexUint  `json:"envelope_size"`
	ChecksumHex          string    `json:"checksum_hex"`
	EnvelopeConstruction []segment `json:"envelope_construction"`
	InputConstruction    []segment `json:"input_construction"`
}

// construct concatenates each segment's bytes Count times.
func construct(t testing.TB, segs []segment) []byte {
	t.Helper()
	var out []byte
	for _, s := range segs {
		out = append(out, bytes.Repeat(vectors.Hex(t, s.Hex), int(s.Count))...)
	}
	return out
}

// wantEnvelopeErr fails unless err is an envelope *FormatError wrapping
// cause with exactly reason.
func wantEnvelopeErr(t testing.TB, err, cause error, reason string) {
	t.Helper()
	var fe *FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("got %v, want *FormatError %q", err, reason)
	}
	if fe.Op != "envelope" || fe.Reason != reason || !errors.Is(err, cause) {
		t.Fatalf("got %q (op %q), want %q wrapping %v", fe.Reason, fe.Op, reason, cause)
	}
}

// lz4Divergent pins the exact LZ4 block our compressor emits for vectors
// whose pinned block came from a compressor it does not match. LZ4 output
// is not canonical, so such rows are checked by encoding the vector's own
// fields; the pin is a tripwire that fails if the compressor drifts. Since
// the small-input compressor (internal/lz4block) every row matches byte for
// byte, so the map is empty.
var lz4Divergent = map[string]string{}

// TestEnvelopeWireVectors: every wire-format.json vectors row opens to its
// input (WIRE-4), in the bin and the legacy array-of-integers encodings
// (WIRE-2) with the checksum as 8 integers in both (WIRE-3), and each bin
// row's input is sealed to exactly its envelope, shortest bin header first
// (WIRE-1).
func TestEnvelopeWireVectors(t *testing.T) {
	rows := vectors.Group[wireRow](t, "wire-format.json", "vectors")
	byName := map[string]wireRow{}
	for _, r := range rows {
		byName[r.Name] = r
	}
	for _, r := range rows {
		t.Run(r.Name, func(t *testing.T) {
			env, input := vectors.Hex(t, r.EnvelopeHex), vectors.Hex(t, r.InputHex)
			if uint64(len(env)) != uint64(r.EnvelopeSize) || uint64(len(input)) != uint64(r.InputSize) {
				t.Fatalf("vector sizes disagree with its hex")
			}
			got, err := OpenEnvelope(nil, env)
			if err != nil || !bytes.Equal(got, input) {
				t.Fatalf("OpenEnvelope: err %v, output matches %v", err, bytes.Equal(got, input))
			}
			e, err := ParseEnvelope(env)
			if err != nil {
				t.Fatalf("ParseEnvelope: %v", err)
			}
			legacy := r.EnvelopeEncoding == ""
			if e.LegacyArray != legacy || e.OriginalSize != uint64(len(input)) || e.Format != r.Format {
				t.Fatalf("fields: legacy %v size %d format %q", e.LegacyArray, e.OriginalSize, e.Format)
			}
			var sum [8]byte
			binary.BigEndian.PutUint64(sum[:], xxh3.Hash(input))
			if e.Checksum != sum {
				t.Fatalf("checksum field %x, want %x", e.Checksum, sum)
			}

			// The canonical encoding of these fields is the bin twin (or the
			// row itself when it is a bin row), byte for byte.
			twin := r
			if legacy {
				var ok bool
				if twin, ok = byName[r.Name+"_bin"]; !ok {
					t.Fatalf("legacy row has no bin twin")
				}
			}
			enc := appendEnvelopeFields(nil, e.Compressed, binary.BigEndian.Uint64(e.Checksum[:]), e.OriginalSize, e.Format)
			if !bytes.Equal(enc, vectors.Hex(t, twin.EnvelopeHex)) {
				t.Fatalf("canonical re-encode\n got %x\nwant %s", enc, twin.EnvelopeHex)
			}
			if legacy {
				return
			}

			// The writer reproduces bin rows exactly, except where the LZ4
			// block itself is compressor-specific.
			sealed, err := SealEnvelope(nil, input, r.Format)
			if err != nil {
				t.Fatalf("SealEnvelope: %v", err)
			}
			if pin, ok := lz4Divergent[r.Name]; ok {
				se, err := ParseEnvelope(sealed)
				if err != nil || hex.EncodeToString(se.Compressed) != pin {
					t.Fatalf("declared-divergent LZ4 block drifted: %x (err %v)", se.Compressed, err)
				}
			} else if !bytes.Equal(sealed, env) {
				t.Fatalf("SealEnvelope\n got %x\nwant %x", sealed, env)
			}
			if back, err := OpenEnvelope(nil, sealed); err != nil || !bytes.Equal(back, input) {
				t.Fatalf("sealed envelope does not reopen: %v", err)
			}
		})
	}
}

// expectedReject names the error each known reject vector must produce. Rows
// a newer fixture adds are checked by their reject_step instead.
var expectedReject = map[string]struct {
	cause  error
	reason string
}{
	"reject_envelope_arity_5":             {ErrMalformed, reasonNotArray4},
	"reject_envelope_arity_3":             {ErrMalformed, reasonNotArray4},
	"reject_checksum_nine_elements":       {ErrMalformed, reasonChecksumArity},
	"reject_checksum_seven_elements":      {ErrMalformed, reasonChecksumArity},
	"reject_legacy_element_above_255":     {ErrMalformed, reasonLegacyElement},
	"reject_envelope_slots_overclaim":     {ErrTooLarge, reasonPrescanBudget},
	"reject_original_size_over_cap":       {ErrTooLarge, reasonOriginalTooLarge},
	"reject_original_size_wraps_u32":      {ErrTooLarge, reasonOriginalTooLarge},
	"reject_original_size_sign_bit":       {ErrTooLarge, reasonOriginalTooLarge},
	"reject_zero_length_compressed_data":  {ErrMalformed, reasonZeroLength},
	"reject_ratio_bomb":                   {ErrTooLarge, reasonRatio},
	"reject_ratio_float32_rounds":         {ErrTooLarge, reasonRatio},
	"reject_decompressed_length_mismatch": {ErrMalformed, reasonLength},
	"reject_checksum_mismatch":            {ErrChecksum, reasonChecksumMismatch},
}

// checkReject drives env through the read path and asserts the error the
// protocol's reject table names for it.
func checkReject(t *testing.T, r rejectRow, env []byte) {
	t.Helper()
	dst := make([]byte, 3, 64)
	got, err := OpenEnvelope(dst, env)
	if err == nil {
		t.Fatalf("accepted a reject vector")
	}
	if len(got) != 3 {
		t.Fatalf("dst length changed on error")
	}
	if want, ok := expectedReject[r.Name]; ok {
		wantEnvelopeErr(t, err, want.cause, want.reason)
	} else {
		checkRejectStep(t, err, uint64(r.RejectStep), r.RejectCheck)
	}
	// ParseEnvelope stops before decompression, so it rejects exactly the
	// rows that break steps 1 to 5, with the same error.
	_, perr := ParseEnvelope(env)
	if r.RejectStep <= 5 && (perr == nil || perr.Error() != err.Error()) {
		t.Fatalf("ParseEnvelope: %v, OpenEnvelope: %v", perr, err)
	}
	if r.RejectStep > 5 && perr != nil {
		t.Fatalf("ParseEnvelope rejected a structurally valid envelope: %v", perr)
	}
}

// checkRejectStep maps a Retrieve Flow step to the errors that step raises.
func checkRejectStep(t *testing.T, err error, step uint64, check string) {
	t.Helper()
	var fe *FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("got %v, want *FormatError", err)
	}
	prescan := strings.HasPrefix(fe.Reason, "pre-scan: ")
	switch {
	case step == 2 && (strings.Contains(check, "scan") || strings.Contains(check, "bound")):
		if !prescan {
			t.Fatalf("step 2 pre-scan row rejected by %q", fe.Reason)
		}
	case step == 2:
		if !errors.Is(err, ErrMalformed) && !prescan {
			t.Fatalf("step 2 row rejected by %q", fe.Reason)
		}
	case step == 4:
		wantEnvelopeErr(t, err, ErrTooLarge, reasonOriginalTooLarge)
	case step == 5:
		if fe.Reason != reasonRatio && fe.Reason != reasonZeroLength {
			t.Fatalf("step 5 row rejected by %q", fe.Reason)
		}
	case step == 6 || step == 9:
		wantEnvelopeErr(t, err, ErrMalformed, reasonLength)
	case step == 8:
		wantEnvelopeErr(t, err, ErrChecksum, reasonChecksumMismatch)
	default:
		t.Fatalf("unknown reject_step %d (%q)", step, fe.Reason)
	}
}

// TestEnvelopeRejectVectors: each wire-format.json reject_vectors row is
// refused by the envelope read path at the step its reject_step names, with
// that check's own error (WIRE-16): the size caps before the ratio bound
// (WIRE-10), original_size at its full wire value (WIRE-12), the three
// limits (WIRE-7) and the Retrieve Flow's order (WIRE-5).
func TestEnvelopeRejectVectors(t *testing.T) {
	for _, r := range vectors.Group[rejectRow](t, "wire-format.json", "reject_vectors") {
		t.Run(r.Name, func(t *testing.T) {
			env := vectors.Hex(t, r.EnvelopeHex)
			if uint64(len(env)) != uint64(r.EnvelopeSize) {
				t.Fatalf("vector size disagrees with its hex")
			}
			checkReject(t, r, env)
		})
	}
}

// TestEnvelopeConstructedVectors: each constructed_vectors row, built from
// its segments, opens to its input (WIRE-4), including
// envelope_ratio_product_wraps_32_bits, which a 32-bit ratio product refuses
// (WIRE-13), and its fields re-encode to the same bytes.
func TestEnvelopeConstructedVectors(t *testing.T) {
	for _, r := range vectors.Group[constructedRow](t, "wire-format.json", "constructed_vectors") {
		t.Run(r.Name, func(t *testing.T) {
			env := construct(t, r.EnvelopeConstruction)
			input := construct(t, r.InputConstruction)
			if uint64(len(env)) != uint64(r.EnvelopeSize) || uint64(len(input)) != uint64(r.OriginalSize) {
				t.Fatalf("constructed sizes %d/%d disagree with the row", len(env), len(input))
			}
			got, err := OpenEnvelope(make([]byte, 0, len(input)), env)
			if err != nil || !bytes.Equal(got, input) {
				t.Fatalf("OpenEnvelope: err %v, output matches %v", err, bytes.Equal(got, input))
			}
			e, err := ParseEnvelope(env)
			if err != nil {
				t.Fatalf("ParseEnvelope: %v", err)
			}
			if uint64(len(e.Compressed)) != uint64(r.CompressedSize) || hex.EncodeToString(e.Checksum[:]) != r.ChecksumHex {
				t.Fatalf("fields: compressed %d B, checksum %x", len(e.Compressed), e.Checksum)
			}
			// No compressor emits this block for this input, so the writer
			// is checked by encoding the row's fields.
			enc := appendEnvelopeFields(nil, e.Compressed, binary.BigEndian.Uint64(e.Checksum[:]), e.OriginalSize, e.Format)
			if e.LegacyArray {
				t.Fatalf("constructed row unexpectedly legacy")
			}
			if !bytes.Equal(enc, env) {
				t.Fatalf("canonical re-encode differs from the constructed envelope")
			}
		})
	}
}
