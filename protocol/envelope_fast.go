package protocol

// This file holds the read path's shortcut for the envelope shape writers
// actually emit. Every L1 and L2 hit opens an envelope, and the general
// reader walks it twice: once as a generic MessagePack document (the
// decode-bounds pre-scan) and once positionally (the strict decode). For an
// envelope that is a complete, well-formed instance of the canonical shape,
// both walks are known to succeed, so one straight-line pass can produce
// the decoded header directly. Anything else, including every input either
// walk would reject, goes to the general reader, which alone decides the
// error.
//
// Why the shortcut's acceptance implies the general reader's: the pre-scan
// rejects only (a) truncation, (b) the reserved byte 0xc1, (c) nesting past
// 32 levels, and (d) declared slots above len(env)-1. The shortcut accepts
// only a complete document nested two deep that contains no 0xc1 (every
// byte it looks at as a marker is one of the markers it names), and in a
// complete document each declared slot (an element of the root array or of
// the checksum array, a byte of the bin or of the str) is backed by at
// least one input byte other than the root's marker, so (d) cannot fire.
// The strict decode then reads the same fields, in the same order, with the
// same widths, and every value the shortcut accepts it accepts too:
// checksum elements in 0..255, any unsigned original_size, an ASCII (hence
// UTF-8) str format, and no trailing bytes. The differential tests in
// envelope_fast_test.go check this against the general reader.

import "github.com/cachekit-io/cachekit-go/protocol/internal/mp"

// decodeCanonicalEnvelope decodes env into *r when env is a complete
// envelope of the shape [bin, fixarray(8) of fixint or uint8, unsigned
// integer, fixstr of ASCII] with nothing after it, storing exactly the
// rawEnvelope the pre-scan plus decodeEnvelope would produce. It returns
// false for every other input, valid or not, leaving *r in an unspecified
// state, and the caller must then run the general reader.
func decodeCanonicalEnvelope(env []byte, r *rawEnvelope) bool {
	// Nothing shorter than 14 bytes has this shape: 0x94, an empty bin8
	// (2), 0x98 and eight fixints (9), a fixint size (1) and an empty
	// fixstr (1). The length also covers the bin32 header read below.
	if len(env) < 14 || env[0] != mp.FixArray|4 {
		return false
	}
	// [0] compressed_data: bin8, bin16 or bin32.
	var size uint64
	var pos int
	switch env[1] {
	case mp.Bin8:
		size, pos = uint64(env[2]), 3
	case mp.Bin16:
		size, pos = uint64(env[2])<<8|uint64(env[3]), 4
	case mp.Bin32:
		size, pos = uint64(env[2])<<24|uint64(env[3])<<16|uint64(env[4])<<8|uint64(env[5]), 6
	default:
		return false
	}
	// At least 11 bytes must follow the block: the checksum array (9 or
	// more), original_size (1 or more) and the format header (1 or more).
	if size > uint64(len(env)-pos) || uint64(len(env)-pos)-size < 11 {
		return false
	}
	end := pos + int(size)
	r.compressed, r.legacy, r.compressedLen = env[pos:end], nil, size
	pos = end

	// [1] checksum: fixarray(8) of fixint or uint8, at most 16 bytes after
	// the array marker. They are read from a 16-byte window; the masked
	// indices never exceed 15 (element i starts at most at 2i), so the
	// mask only spares the bounds checks. Near the end of a short input the
	// window is a zero-padded copy, and an array that would run past the
	// input is caught by the room check after the loop.
	if env[pos] != mp.FixArray|8 {
		return false
	}
	pos++
	w := env[pos:]
	if len(w) < 16 {
		var pad [16]byte
		copy(pad[:], w)
		w = pad[:]
	}
	w = w[:16]
	j := 0
	for i := range r.checksum {
		m := w[j&15]
		if m <= 0x7f {
			r.checksum[i] = m
			j++
			continue
		}
		if m != mp.Uint8 {
			return false
		}
		r.checksum[i] = w[(j+1)&15]
		j += 2
	}
	pos += j

	// [2] original_size: any unsigned integer. The format header must
	// still follow it, so the field may not reach the last byte.
	if len(env)-pos < 2 {
		return false
	}
	m := env[pos]
	pos++
	if m <= 0x7f {
		r.originalSize = uint64(m)
	} else {
		if m < mp.Uint8 || m > mp.Uint64 {
			return false
		}
		w := 1 << (m - mp.Uint8)
		if len(env)-pos <= w {
			return false
		}
		r.originalSize = readBE(env[pos:], w)
		pos += w
	}

	// [3] format: a fixstr of ASCII bytes that ends the input exactly. The
	// checks above leave at least one byte for its header.
	m = env[pos]
	pos++
	if m&0xe0 != mp.FixStr || len(env)-pos != int(m&0x1f) {
		return false
	}
	f := env[pos:]
	if string(f) != FormatMsgpack && !isASCII(f) {
		return false
	}
	r.format = f
	return true
}

// isASCII reports whether every byte of b is below 0x80.
func isASCII(b []byte) bool {
	var high byte
	for _, c := range b {
		high |= c
	}
	return high < 0x80
}

// scanAndDecodeEnvelope is the general reader: the decode-bounds pre-scan,
// then the strict positional decode. It accepts and rejects exactly what
// the protocol says, whatever the encoding widths, and is the only source
// of read-path structural errors.
func scanAndDecodeEnvelope(env []byte) (rawEnvelope, error) {
	if err := prescanEnvelope(env); err != nil {
		return rawEnvelope{}, err
	}
	return decodeEnvelope(env)
}
