package protocol

import (
	"encoding/binary"
	"unicode/utf8"
)

// This file holds the reading half of the ByteStorage envelope codec: the
// structural pre-scan (decode bounds) and the strict positional decode of the
// four fields. Neither allocates: byte fields alias the input, and the legacy
// array-of-integers form is only located here and copied out later, after
// every limit has been checked.

// prescanMaxDepth bounds container nesting during the pre-scan. The envelope
// itself never nests deeper than two levels; 32 is the smallest depth bound
// the protocol lets a reader choose.
const prescanMaxDepth = 32

// Reasons a *FormatError carries for the envelope read path. Tests compare
// against these, so each Retrieve Flow check has its own wording. Pre-scan
// reasons start with "pre-scan: " so the decode-bounds guard is recognisable.
const (
	reasonEnvelopeTooLarge   = "envelope exceeds 512 MiB"
	reasonPrescanBudget      = "pre-scan: declared lengths exceed what the input can hold"
	reasonPrescanDepth       = "pre-scan: nesting exceeds 32 levels"
	reasonPrescanTruncated   = "pre-scan: truncated document"
	reasonPrescanMarker      = "pre-scan: reserved marker 0xc1"
	reasonNotArray4          = "envelope is not a 4-element array"
	reasonCompressedType     = "compressed_data is neither bin nor an array of integers"
	reasonLegacyElement      = "compressed_data element is not an integer in 0..255"
	reasonChecksumArity      = "checksum is not an array of exactly 8 integers"
	reasonChecksumElement    = "checksum element is not an integer in 0..255"
	reasonOriginalSizeType   = "original_size is not an unsigned integer"
	reasonFormatType         = "format is not a string"
	reasonFormatUTF8         = "format is not valid UTF-8"
	reasonTrailing           = "trailing bytes after the envelope"
	reasonTruncated          = "truncated envelope"
	reasonCompressedTooLarge = "compressed_data exceeds 512 MiB"
	reasonOriginalTooLarge   = "original_size exceeds 512 MiB"
	reasonZeroLength         = "compressed_data is empty"
	reasonRatio              = "original_size exceeds 1000 times the compressed size (decompression bomb)"
	reasonLength             = "decompressed length differs from original_size"
	reasonBadBlock           = "compressed_data is not a valid LZ4 block of at most original_size bytes"
	reasonChecksumMismatch   = "checksum does not match the decompressed bytes"
)

// envelopeErr builds an envelope *FormatError.
func envelopeErr(cause error, reason string) error { return formatErr("envelope", cause, reason) }

// prescanEnvelope walks env as one generic MessagePack document, reading
// headers only, and rejects it when the slots its headers declare (container
// elements, two per map pair, and str/bin/ext bytes), summed over the whole
// document, exceed len(env)-1, when it nests deeper than prescanMaxDepth, or
// when it ends before the document does. The sum is checked after every
// header, in 64 bits, so it cannot wrap: each term is below 2^33. It stops at
// the end of the first document; trailing bytes are the typed decode's
// business.
func prescanEnvelope(env []byte) error {
	if len(env) == 0 {
		return envelopeErr(ErrMalformed, reasonPrescanTruncated)
	}
	var stack [prescanMaxDepth]uint64
	_, err := walkMsgpack(env, prescanMaxDepth, stack[:], true)
	switch err {
	case nil:
		return nil
	case errReservedByte:
		return envelopeErr(ErrMalformed, reasonPrescanMarker)
	case errOverclaim:
		return envelopeErr(ErrTooLarge, reasonPrescanBudget)
	case errTooNested:
		return envelopeErr(ErrTooLarge, reasonPrescanDepth)
	default: // errIncomplete
		return envelopeErr(ErrMalformed, reasonPrescanTruncated)
	}
}

// readBE reads a big-endian unsigned integer of width 1, 2, 4 or 8 bytes.
// The caller has checked that b holds width bytes.
func readBE(b []byte, width int) uint64 {
	switch width {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.BigEndian.Uint16(b))
	case 4:
		return uint64(binary.BigEndian.Uint32(b))
	default:
		return binary.BigEndian.Uint64(b)
	}
}

// rawEnvelope is the decoded header of an envelope, with every byte field
// aliasing the input. For the legacy encoding, legacy holds the encoded
// integer elements and compressedLen their count; compressed is nil.
type rawEnvelope struct {
	compressed    []byte
	legacy        []byte
	compressedLen uint64
	checksum      [8]byte
	originalSize  uint64
	format        []byte
}

// isLegacy reports whether compressed_data used the array-of-integers form.
func (r *rawEnvelope) isLegacy() bool { return r.legacy != nil }

// envDecoder is a bounds-checked cursor over the envelope bytes.
type envDecoder struct {
	b   []byte
	pos int
}

// take returns the next n bytes, or false when fewer remain.
func (d *envDecoder) take(n uint64) ([]byte, bool) {
	if uint64(len(d.b)-d.pos) < n {
		return nil, false
	}
	out := d.b[d.pos : d.pos+int(n)]
	d.pos += int(n)
	return out, true
}

// marker returns the next byte, or false at the end of input.
func (d *envDecoder) marker() (byte, bool) {
	if d.pos >= len(d.b) {
		return 0, false
	}
	m := d.b[d.pos]
	d.pos++
	return m, true
}

// length reads a big-endian length field of width bytes.
func (d *envDecoder) length(width int) (uint64, bool) {
	b, ok := d.take(uint64(width))
	if !ok {
		return 0, false
	}
	return readBE(b, width), true
}

// uint reads an unsigned MessagePack integer of any width (positive fixint,
// uint8/16/32/64) at its full value. Signed markers are refused, as the
// protocol's reference reader does: no conforming writer emits them.
// ok is false for a wrong type; trunc is true when input ended.
func (d *envDecoder) uint() (v uint64, ok, trunc bool) {
	m, more := d.marker()
	if !more {
		return 0, false, true
	}
	if m <= 0x7f {
		return uint64(m), true, false
	}
	if m < 0xcc || m > 0xcf {
		return 0, false, false
	}
	v, more = d.length(1 << (m - 0xcc))
	return v, more, !more
}

// arrayLen reads an array header (fixarray, array16, array32).
func (d *envDecoder) arrayLen() (n uint64, ok, trunc bool) {
	m, more := d.marker()
	if !more {
		return 0, false, true
	}
	switch {
	case m&0xf0 == 0x90:
		return uint64(m & 0x0f), true, false
	case m == 0xdc:
		n, more = d.length(2)
	case m == 0xdd:
		n, more = d.length(4)
	default:
		return 0, false, false
	}
	return n, more, !more
}

// decodeEnvelope decodes the positional 4-array strictly: exact arity, bin or
// array-of-integers compressed_data with every element in 0..255, a checksum
// of exactly 8 such integers, an unsigned original_size at its full 64-bit
// value, a UTF-8 str format, and nothing after the document.
func decodeEnvelope(env []byte) (rawEnvelope, error) {
	var r rawEnvelope
	d := envDecoder{b: env}
	trunc := func() (rawEnvelope, error) { return rawEnvelope{}, envelopeErr(ErrMalformed, reasonTruncated) }
	bad := func(reason string) (rawEnvelope, error) { return rawEnvelope{}, envelopeErr(ErrMalformed, reason) }

	n, ok, t := d.arrayLen()
	if t {
		return trunc()
	}
	if !ok || n != 4 {
		return bad(reasonNotArray4)
	}

	// [0] compressed_data: bin (canonical) or array of integers (legacy).
	if d.pos >= len(env) {
		return trunc()
	}
	switch m := env[d.pos]; {
	case m == 0xc4 || m == 0xc5 || m == 0xc6:
		d.pos++
		size, more := d.length(1 << (m - 0xc4))
		if !more {
			return trunc()
		}
		b, more := d.take(size)
		if !more {
			return trunc()
		}
		r.compressed, r.compressedLen = b, size
	case m&0xf0 == 0x90 || m == 0xdc || m == 0xdd:
		count, _, t := d.arrayLen()
		if t {
			return trunc()
		}
		start := d.pos
		for i := uint64(0); i < count; i++ {
			v, ok, t := d.uint()
			if t {
				return trunc()
			}
			if !ok || v > 0xff {
				return bad(reasonLegacyElement)
			}
		}
		// A non-nil, possibly empty, slice marks the legacy form.
		r.legacy, r.compressedLen = env[start:d.pos:d.pos], count
	default:
		return bad(reasonCompressedType)
	}

	// [1] checksum: always an array of exactly 8 integers.
	n, ok, t = d.arrayLen()
	if t {
		return trunc()
	}
	if !ok || n != 8 {
		return bad(reasonChecksumArity)
	}
	for i := range r.checksum {
		v, ok, t := d.uint()
		if t {
			return trunc()
		}
		if !ok || v > 0xff {
			return bad(reasonChecksumElement)
		}
		r.checksum[i] = byte(v)
	}

	// [2] original_size, kept at its full wire value.
	v, ok, t := d.uint()
	if t {
		return trunc()
	}
	if !ok {
		return bad(reasonOriginalSizeType)
	}
	r.originalSize = v

	// [3] format: a str of any width holding UTF-8.
	m, more := d.marker()
	if !more {
		return trunc()
	}
	var size uint64
	switch {
	case m&0xe0 == 0xa0:
		size = uint64(m & 0x1f)
	case m == 0xd9 || m == 0xda || m == 0xdb:
		w := 1 << (m - 0xd9)
		if size, more = d.length(w); !more {
			return trunc()
		}
	default:
		return bad(reasonFormatType)
	}
	f, more := d.take(size)
	if !more {
		return trunc()
	}
	if !utf8.Valid(f) {
		return bad(reasonFormatUTF8)
	}
	r.format = f

	if d.pos != len(env) {
		return bad(reasonTrailing)
	}
	return r, nil
}

// copyLegacy appends the bytes of a validated legacy array-of-integers
// region to dst.
func copyLegacy(dst, region []byte) []byte {
	d := envDecoder{b: region}
	for d.pos < len(region) {
		v, _, _ := d.uint()
		dst = append(dst, byte(v))
	}
	return dst
}
