package protocol

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"

	"github.com/cachekit-io/cachekit-go/internal/vectors"

	"github.com/cachekit-io/cachekit-go/internal/fixture"
)

// The canonical-shape shortcut must never change a verdict: when it
// accepts, the general reader (pre-scan plus strict decode) must accept too
// and yield the identical header, aliasing the same bytes; when it
// declines, readEnvelope falls back to the general reader. These tests
// check that property on the vectors, on fresh seals of every bin width and
// format, on hand-made non-canonical but valid encodings, and on every
// bit flip, cut and one-byte extension of those.

// sameSlice reports whether a and b are the very same slice: same array,
// length and capacity (nil only equals nil).
func sameSlice(a, b []byte) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	return len(a) == len(b) && cap(a) == cap(b) && unsafe.SliceData(a) == unsafe.SliceData(b)
}

// sameRaw reports whether two decoded headers are identical, aliasing
// included.
func sameRaw(a, b rawEnvelope) bool {
	return sameSlice(a.compressed, b.compressed) && sameSlice(a.legacy, b.legacy) &&
		sameSlice(a.format, b.format) && a.compressedLen == b.compressedLen &&
		a.checksum == b.checksum && a.originalSize == b.originalSize
}

// readEnvelopeReference is readEnvelope as it was before the shortcut:
// size cap, pre-scan, strict decode, then the limit checks.
func readEnvelopeReference(env []byte, lim envelopeLimits) (rawEnvelope, error) {
	if uint64(len(env)) > lim.maxEnvelope {
		return rawEnvelope{}, envelopeErr(ErrTooLarge, reasonEnvelopeTooLarge)
	}
	if err := prescanEnvelope(env); err != nil {
		return rawEnvelope{}, err
	}
	r, err := decodeEnvelope(env)
	if err != nil {
		return rawEnvelope{}, err
	}
	switch {
	case r.compressedLen > lim.maxCompressed:
		return rawEnvelope{}, envelopeErr(ErrTooLarge, reasonCompressedTooLarge)
	case r.originalSize > lim.maxOriginal:
		return rawEnvelope{}, envelopeErr(ErrTooLarge, reasonOriginalTooLarge)
	case r.compressedLen == 0:
		return rawEnvelope{}, envelopeErr(ErrMalformed, reasonZeroLength)
	case r.originalSize > MaxCompressionRatio*r.compressedLen:
		return rawEnvelope{}, envelopeErr(ErrTooLarge, reasonRatio)
	}
	return r, nil
}

// sameError reports whether two read-path errors are the same verdict:
// both nil, or *FormatError values with equal op, reason and cause.
func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	fa, oka := a.(*FormatError)
	fb, okb := b.(*FormatError)
	return oka && okb && *fa == *fb
}

// shortcutOutcome classifies one input for the coverage counts.
type shortcutOutcome int

const (
	outcomeShortcut shortcutOutcome = iota // the shortcut decoded it
	outcomeFallback                        // declined; the general reader accepts it
	outcomeRejected                        // declined; the general reader rejects it
)

// checkShortcut asserts the equivalence property for env and returns how
// it was handled. It never prints env: envelopes may carry cached values.
func checkShortcut(t testing.TB, env []byte) shortcutOutcome {
	t.Helper()
	var fast rawEnvelope
	ok := decodeCanonicalEnvelope(env, &fast)
	general, gerr := scanAndDecodeEnvelope(env)
	if ok {
		if gerr != nil {
			t.Fatalf("shortcut accepted a %d-byte input the general reader rejects (%v)", len(env), gerr)
		}
		if !sameRaw(fast, general) {
			t.Fatalf("shortcut and general reader decode a %d-byte input differently", len(env))
		}
	}
	for _, lim := range []envelopeLimits{defaultEnvelopeLimits, {maxEnvelope: 64, maxCompressed: 16, maxOriginal: 32}} {
		var got rawEnvelope
		err := readEnvelope(env, lim, &got)
		want, werr := readEnvelopeReference(env, lim)
		if !sameError(err, werr) {
			t.Fatalf("readEnvelope verdict %v, reference %v (%d-byte input)", err, werr, len(env))
		}
		if err == nil && !sameRaw(got, want) {
			t.Fatalf("readEnvelope and reference decode a %d-byte input differently", len(env))
		}
	}
	switch {
	case ok:
		return outcomeShortcut
	case gerr == nil:
		return outcomeFallback
	default:
		return outcomeRejected
	}
}

// shortcutSeeds returns the vector envelopes, fresh seals across the bin
// widths and formats, and valid encodings the shortcut must decline.
func shortcutSeeds(t testing.TB) [][]byte {
	t.Helper()
	var seeds [][]byte
	for _, r := range vectors.Group[wireRow](t, "wire-format.json", "vectors") {
		seeds = append(seeds, vectors.Hex(t, r.EnvelopeHex))
	}
	for _, r := range vectors.Group[rejectRow](t, "wire-format.json", "reject_vectors") {
		seeds = append(seeds, vectors.Hex(t, r.EnvelopeHex))
	}
	for _, r := range specRejectRows() {
		seeds = append(seeds, vectors.Hex(t, r.hex))
	}
	rng := rand.New(rand.NewPCG(7, 11))
	for _, n := range []int{0, 1, 2, 100, 127, 128, 255, 256, 1024} {
		for _, format := range []string{FormatMsgpack, FormatOrjson, FormatArrow} {
			env, err := SealEnvelope(nil, fixture.JSONish(rng, n), format)
			if err != nil {
				t.Fatalf("seal %d B: %v", n, err)
			}
			seeds = append(seeds, env)
		}
	}
	// Literal blocks around the bin8/bin16 and bin16/bin32 boundaries.
	for _, n := range []int{250, 251, 252, 65530, 65531, 65532} {
		env, err := SealEnvelope(nil, fixture.RandomBytes(rng, n), FormatMsgpack)
		if err != nil {
			t.Fatalf("seal %d B: %v", n, err)
		}
		seeds = append(seeds, env)
	}
	// Valid but not canonical: the general reader accepts these, the
	// shortcut must hand them over.
	block := vectors.Hex(t, ssBlock)
	seeds = append(seeds,
		vectors.Hex(t, "94c50012"+ssBlock+ssChecksum+ssSize+ssFormat),              // bin16 for 18 bytes
		vectors.Hex(t, "94c600000012"+ssBlock+ssChecksum+ssSize+ssFormat),          // bin32 for 18 bytes
		vectors.Hex(t, "94c412"+ssBlock+"98cd006d"+ssChecksum[4:]+ssSize+ssFormat), // uint16 checksum element
		vectors.Hex(t, "94c412"+ssBlock+ssChecksum+"cf0000000000000010"+ssFormat),  // uint64 original_size
		vectors.Hex(t, "94c412"+ssBlock+ssChecksum+"cc10"+ssFormat),                // uint8 original_size
		vectors.Hex(t, "94c412"+ssBlock+ssChecksum+ssSize+"d9076d73677061636b"),    // str8 format
		vectors.Hex(t, "94c412"+ssBlock+ssChecksum+ssSize+"a86d7367c3a470636b"),    // non-ASCII UTF-8 format
		vectors.Hex(t, "94c412"+ssBlock+ssChecksum+ssSize+"a0"),                    // empty format
		vectors.Hex(t, "94c400"+ssChecksum+ssSize+ssFormat),                        // empty bin
		vectors.Hex(t, "94c412"+ssBlock+ssChecksum+ssSize+ssFormat+"c0"),           // trailing byte
		legacyEncode(block, beUint64([8]byte{0x6d, 0x8a, 0x34, 0xb6, 0x3a, 0x3c, 0x52, 0xd3}), 16, FormatMsgpack),
	)
	return seeds
}

func TestEnvelopeShortcutMatchesGeneralReader(t *testing.T) {
	seeds := shortcutSeeds(t)
	if len(seeds) == 0 {
		t.Fatal("no seeds")
	}
	var counts [3]int
	for _, seed := range seeds {
		counts[checkShortcut(t, seed)]++
		if len(seed) > 4096 {
			continue // the large boundary seals are covered whole; mutate the small ones
		}
		env := bytes.Clone(seed)
		for i := range env {
			for bit := 0; bit < 8; bit++ {
				env[i] ^= 1 << bit
				counts[checkShortcut(t, env)]++
				env[i] ^= 1 << bit
			}
		}
		for n := 0; n < len(seed); n++ {
			counts[checkShortcut(t, seed[:n:n])]++
		}
		for _, extra := range []byte{0x00, 0xc0, 0xc1, 0xff} {
			counts[checkShortcut(t, append(bytes.Clone(seed), extra))]++
		}
	}
	t.Logf("shortcut %d, fallback accepted %d, rejected %d", counts[outcomeShortcut], counts[outcomeFallback], counts[outcomeRejected])
	// Each class must be exercised, or the property above is vacuous.
	for o, n := range counts {
		if n < 20 {
			t.Fatalf("outcome %d seen only %d times", o, n)
		}
	}
}

// TestEnvelopeShortcutTakesCanonicalSeals is the positive control: every
// envelope SealEnvelope writes is the canonical shape and must take the
// shortcut, or the hot path silently stays on the slow reader.
func TestEnvelopeShortcutTakesCanonicalSeals(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for _, n := range []int{0, 1, 16, 100, 1000, 70000} {
		for _, format := range []string{FormatMsgpack, FormatOrjson, FormatArrow} {
			env, err := SealEnvelope(nil, fixture.JSONish(rng, n), format)
			if err != nil {
				t.Fatal(err)
			}
			var r rawEnvelope
			if !decodeCanonicalEnvelope(env, &r) {
				t.Fatalf("shortcut declined a canonical %d-byte %s seal", n, format)
			}
		}
	}
	// Short tails, where fewer than 16 bytes follow the checksum marker and
	// the checksum is read through the zero-padded window: all-fixint
	// checksums with a small size and a short format. The shortcut must take
	// them whole and, cut anywhere, hand them over.
	block := vectors.Hex(t, ssBlock)
	for _, format := range []string{"", "a", FormatArrow, FormatOrjson} {
		env := appendEnvelopeFields(nil, block, 0x0102030405060708, 16, format)
		var r rawEnvelope
		if !decodeCanonicalEnvelope(env, &r) || r.originalSize != 16 || string(r.format) != format ||
			beUint64(r.checksum) != 0x0102030405060708 {
			t.Fatalf("shortcut mishandled a short-tail envelope (format of %d bytes)", len(format))
		}
		for n := range len(env) {
			if decodeCanonicalEnvelope(env[:n:n], &r) {
				t.Fatalf("shortcut took a %d-byte cut of a short-tail envelope", n)
			}
		}
		checkShortcut(t, env)
	}

	// And declines each non-canonical width it does not handle.
	for name, h := range map[string]string{
		"uint16 checksum element": "94c412" + ssBlock + "98cd006d" + ssChecksum[4:] + ssSize + ssFormat,
		"str8 format":             "94c412" + ssBlock + ssChecksum + ssSize + "d9076d73677061636b",
		"legacy array":            "94dc0012" + strings.Repeat("00", 18) + ssChecksum + ssSize + ssFormat,
	} {
		var r rawEnvelope
		if decodeCanonicalEnvelope(vectors.Hex(t, h), &r) {
			t.Fatalf("shortcut took the %s", name)
		}
	}
}

// FuzzEnvelopeShortcut checks the equivalence property on arbitrary input.
func FuzzEnvelopeShortcut(f *testing.F) {
	seeds := shortcutSeeds(f)
	if len(seeds) == 0 {
		f.Fatal("FuzzEnvelopeShortcut has no seeds")
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, env []byte) {
		checkShortcut(t, env)
	})
}
