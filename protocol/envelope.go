package protocol

import (
	"github.com/zeebo/xxh3"

	"github.com/cachekit-io/cachekit-go/internal/chunked"
	"github.com/cachekit-io/cachekit-go/protocol/internal/lz4block"
)

// Limits of the ByteStorage envelope. Every reader and writer enforces all
// three; the ratio is checked with an exact 64-bit product, never a division
// or a floating-point ratio.
const (
	// MaxEnvelopeOriginalSize is the largest original (uncompressed) payload,
	// in bytes: 512 MiB. It also caps the size of a whole envelope.
	MaxEnvelopeOriginalSize = 512 << 20
	// MaxEnvelopeCompressedSize is the largest compressed_data field, in
	// bytes: 512 MiB.
	MaxEnvelopeCompressedSize = 512 << 20
	// MaxCompressionRatio bounds original_size by this many times the length
	// of compressed_data (1000:1), so a small envelope cannot claim a huge
	// output.
	MaxCompressionRatio = 1000
)

// Envelope is the parsed header of a ByteStorage envelope, for inspection
// tools. ParseEnvelope fills it after the structural and limit checks but
// without decompressing, so the checksum has not been verified.
type Envelope struct {
	// Compressed is the LZ4 block. For the bin encoding it aliases the bytes
	// given to ParseEnvelope; for the legacy encoding it is a fresh copy.
	Compressed []byte
	// Checksum is the big-endian xxHash3-64 of the original bytes, as stored.
	Checksum [8]byte
	// OriginalSize is the declared length of the original bytes.
	OriginalSize uint64
	// Format is the stored serialization-format string (normally
	// FormatMsgpack). Readers do not check it.
	Format string
	// LegacyArray reports that compressed_data used the pre-1.1 encoding, an
	// array of integers, rather than bin.
	LegacyArray bool
}

// envelopeLimits are the caps a read enforces. Production reads always use
// defaultEnvelopeLimits; tests lower them to reach checks that a real-size
// input would need hundreds of MiB to trigger.
type envelopeLimits struct {
	maxEnvelope   uint64
	maxCompressed uint64
	maxOriginal   uint64
}

var defaultEnvelopeLimits = envelopeLimits{
	maxEnvelope:   MaxEnvelopeOriginalSize,
	maxCompressed: MaxEnvelopeCompressedSize,
	maxOriginal:   MaxEnvelopeOriginalSize,
}

// afterDecodeHook, when set by a test, runs on the read path right after the
// envelope has been decoded and before its limits are checked. The
// allocation-bound test uses it as the positive control of its probe.
var afterDecodeHook func(originalSize uint64)

// readEnvelope runs Retrieve Flow steps 1 to 5: the envelope-size cap, the
// decode-bounds pre-scan, the strict decode, both size caps, the zero-length
// check and the ratio bound. Nothing is allocated and nothing decompressed.
// A complete envelope of the canonical shape takes the one-pass shortcut,
// which yields what the pre-scan and the decode would; every other input
// goes through both, so errors always come from the general reader.
//
// The header is stored in *r, which the hot path keeps on its own stack
// rather than copying a dozen words through each return. On error *r is
// unspecified.
func readEnvelope(env []byte, lim envelopeLimits, r *rawEnvelope) error {
	if uint64(len(env)) > lim.maxEnvelope {
		return envelopeErr(ErrTooLarge, reasonEnvelopeTooLarge)
	}
	if !decodeCanonicalEnvelope(env, r) {
		var err error
		if *r, err = scanAndDecodeEnvelope(env); err != nil {
			return err
		}
	}
	if h := afterDecodeHook; h != nil {
		h(r.originalSize)
	}
	if r.compressedLen > lim.maxCompressed {
		return envelopeErr(ErrTooLarge, reasonCompressedTooLarge)
	}
	if r.originalSize > lim.maxOriginal {
		return envelopeErr(ErrTooLarge, reasonOriginalTooLarge)
	}
	if r.compressedLen == 0 {
		return envelopeErr(ErrMalformed, reasonZeroLength)
	}
	// Both operands are at most 2^29 here, so the product is below 2^39.
	if r.originalSize > MaxCompressionRatio*r.compressedLen {
		return envelopeErr(ErrTooLarge, reasonRatio)
	}
	return nil
}

// ParseEnvelope decodes and validates an envelope's structure and limits —
// everything OpenEnvelope checks before decompressing — and returns its
// fields. It does not decompress and so does not verify the checksum. Errors
// are *FormatError values with Op "envelope".
func ParseEnvelope(env []byte) (Envelope, error) {
	var r rawEnvelope
	if err := readEnvelope(env, defaultEnvelopeLimits, &r); err != nil {
		return Envelope{}, err
	}
	e := Envelope{
		Checksum:     r.checksum,
		OriginalSize: r.originalSize,
		Format:       formatString(r.format),
		LegacyArray:  r.isLegacy(),
	}
	if r.isLegacy() {
		e.Compressed = copyLegacy(make([]byte, 0, r.compressedLen), r.legacy)
	} else {
		e.Compressed = r.compressed
	}
	return e, nil
}

// formatString converts the stored format to a string, without allocating
// for the registry tokens.
func formatString(b []byte) string {
	switch string(b) {
	case FormatMsgpack:
		return FormatMsgpack
	case FormatOrjson:
		return FormatOrjson
	case FormatArrow:
		return FormatArrow
	}
	return string(b)
}

// IsEnvelopeShape reports whether b has exactly the shape of a ByteStorage
// envelope: a 4-element array of compressed_data (bin, or an array of
// integers 0-255), a checksum of exactly 8 integers 0-255, an unsigned
// original_size and a format string of the registry (FormatMsgpack,
// FormatOrjson, FormatArrow), with nothing after it. It checks the shape
// only (no limit, checksum or decompression) and allocates nothing.
//
// It exists to refuse, never to decode: a reader configured for plain
// MessagePack uses it to refuse another SDK's auto-mode container (a bare
// envelope, cachekit-ts's default) rather than return the envelope's four
// fields as a value. A value that has this shape by itself is refused with
// it: the one false positive, which a writer of plain MessagePack refuses
// up front for the same reason.
func IsEnvelopeShape(b []byte) bool {
	r, err := decodeEnvelope(b)
	if err != nil {
		return false
	}
	switch string(r.format) {
	case FormatMsgpack, FormatOrjson, FormatArrow:
		return true
	}
	return false
}

// OpenEnvelope validates the ByteStorage envelope env, decompresses it and
// appends the original bytes to dst, returning the extended slice. It
// accepts both encodings of compressed_data (bin and the legacy array of
// integers) and rejects everything else the protocol rejects: wrong arity or
// element types, checksum arrays of other than 8 integers, integers out of
// range, trailing bytes, declared lengths the input cannot hold, sizes over
// 512 MiB, empty compressed_data, ratios above 1000:1, a decoded length other
// than original_size, and a checksum mismatch.
//
// All limit checks run before any buffer is sized from the header, so a
// hostile header cannot make OpenEnvelope allocate what it claims. The
// stored format is not checked; use ParseEnvelope to read it.
//
// On error OpenEnvelope returns dst unchanged (any bytes written into its
// spare capacity are zeroed) and a *FormatError with Op "envelope" wrapping
// ErrMalformed, ErrTooLarge or ErrChecksum. It does not allocate when env
// uses the bin encoding and dst has original_size bytes of spare capacity.
// env must not overlap dst's spare capacity.
func OpenEnvelope(dst, env []byte) ([]byte, error) {
	return openEnvelope(dst, env, defaultEnvelopeLimits)
}

// OpenEnvelopeMax is OpenEnvelope with a lower cap on the original size: an
// envelope claiming more than maxOriginal bytes is refused with ErrTooLarge
// before anything is allocated or decompressed. maxOriginal <= 0, or above
// MaxEnvelopeOriginalSize, means MaxEnvelopeOriginalSize.
func OpenEnvelopeMax(dst, env []byte, maxOriginal int) ([]byte, error) {
	lim := defaultEnvelopeLimits
	if maxOriginal > 0 && uint64(maxOriginal) < lim.maxOriginal {
		lim.maxOriginal = uint64(maxOriginal)
	}
	return openEnvelope(dst, env, lim)
}

func openEnvelope(dst, env []byte, lim envelopeLimits) ([]byte, error) {
	var r rawEnvelope
	if err := readEnvelope(env, lim, &r); err != nil {
		return dst, err
	}
	src := r.compressed
	if r.isLegacy() {
		// Bounded by the envelope's own length, and only after every check.
		src = copyLegacy(make([]byte, 0, r.compressedLen), r.legacy)
	}
	size := int(r.originalSize) // at most maxOriginal, which fits an int
	start := len(dst)
	if cap(dst)-start < size {
		dst = chunked.Grow(dst, size)
	}
	out := dst[start : start+size]
	if overlaps(out, env) {
		return dst[:start], envelopeErr(ErrMalformed, "env overlaps dst's spare capacity")
	}
	n, err := lz4block.Decompress(src, out)
	if err != nil {
		chunked.Clear(out)
		return dst[:start], envelopeErr(ErrMalformed, reasonBadBlock)
	}
	if n != size {
		chunked.Clear(out)
		return dst[:start], envelopeErr(ErrMalformed, reasonLength)
	}
	// chunked.XXH3 does not inline; a small value, nearly every one,
	// calls xxh3 directly (15 instructions per read, bench-ir).
	var sum uint64
	if len(out) <= chunked.Size {
		sum = xxh3.Hash(out)
	} else {
		sum = chunked.XXH3(out)
	}
	if sum != beUint64(r.checksum) {
		chunked.Clear(out)
		return dst[:start], envelopeErr(ErrChecksum, reasonChecksumMismatch)
	}
	return dst[:start+size], nil
}

// beUint64 interprets a stored checksum as the big-endian integer it is.
func beUint64(b [8]byte) uint64 {
	return uint64(b[0])<<56 | uint64(b[1])<<48 | uint64(b[2])<<40 | uint64(b[3])<<32 |
		uint64(b[4])<<24 | uint64(b[5])<<16 | uint64(b[6])<<8 | uint64(b[7])
}
