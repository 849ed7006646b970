package protocol

import (
	"github.com/cachekit-io/cachekit-go/protocol/internal/mp"
	"sync"
	"unsafe"

	"github.com/pierrec/lz4/v4"

	"github.com/cachekit-io/cachekit-go/internal/chunked"
	"github.com/cachekit-io/cachekit-go/protocol/internal/lz4block"
)

// This file holds the writing half of the ByteStorage envelope codec. The
// writer emits only the canonical encoding: fixarray(4), compressed_data as
// the shortest bin, the checksum as fixarray(8) of shortest unsigned
// integers, original_size as the shortest unsigned integer, format as a
// fixstr.

// envelopeFixedBound is the most a sealed envelope adds around its LZ4 block:
// the array marker (1), a bin32 header (5), the checksum array with every
// byte in two-byte form (1+16), a uint32 original_size (5) and the longest
// registry token as fixstr (1+7).
const envelopeFixedBound = 1 + 5 + 1 + 16 + 5 + 1 + len(FormatMsgpack)

// compressors pools LZ4 compressors: each holds a 136 KiB hash table that is
// too large to allocate per call.
var compressors = sync.Pool{New: func() any { return new(lz4.Compressor) }}

// SealEnvelopeBound returns an upper bound, in bytes, of what SealEnvelope
// appends for an original of n bytes (n at most MaxEnvelopeOriginalSize).
// Giving dst that much spare capacity makes SealEnvelope allocation-free.
func SealEnvelopeBound(n int) int {
	if n < 0 {
		n = 0
	}
	return lz4.CompressBlockBound(n) + envelopeFixedBound
}

// SealEnvelope wraps original in a ByteStorage envelope and appends it to
// dst, returning the extended slice. The envelope is the canonical
// MessagePack 4-array [compressed_data as the shortest bin, the big-endian
// xxHash3-64 of original as an array of 8 integers, len(original) as the
// shortest unsigned integer, format as a str]. compressed_data is one LZ4
// block; incompressible input is stored as a literals-only block, and empty
// input as the one-byte empty block, so every envelope SealEnvelope writes is
// readable by OpenEnvelope and by the other SDKs.
//
// format must be a registry token (FormatMsgpack, FormatOrjson or
// FormatArrow). original may be at most MaxEnvelopeOriginalSize bytes, and the
// LZ4 block and the whole envelope must also fit 512 MiB. On error
// SealEnvelope returns dst unchanged (bytes written to its spare capacity are
// zeroed) and a *FormatError with Op "envelope". original must not overlap
// dst's spare capacity. SealEnvelope does not allocate when dst has
// SealEnvelopeBound(len(original)) bytes of spare capacity.
func SealEnvelope(dst, original []byte, format string) ([]byte, error) {
	if !knownFormat(format) {
		return dst, envelopeErr(ErrMalformed, "format is not a registered token")
	}
	if len(original) > MaxEnvelopeOriginalSize {
		return dst, envelopeErr(ErrTooLarge, "original exceeds 512 MiB")
	}
	lzBound := lz4.CompressBlockBound(len(original))
	start := len(dst)
	dst = chunked.Grow(dst, lzBound+envelopeFixedBound)
	work := dst[start : start+lzBound+envelopeFixedBound]
	if overlaps(work, original) {
		return dst[:start], envelopeErr(ErrMalformed, "original overlaps dst's spare capacity")
	}

	// Compress behind the widest bin header the bound allows, then slide the
	// block down if the real length needs a shorter header.
	reserved := 1 + mp.BinHeaderLen(lzBound)
	// Originals up to 64 KiB, nearly every cached value, go through the
	// compressor sized for them (lz4block.Compress); larger ones through
	// pierrec's, unless their first 64 KiB do not compress: pierrec ends
	// an incompressible input with one memmove of all of it (about 50 ms
	// the runtime cannot preempt for 64 MiB), so those are written as a
	// literals-only block, copied in pieces (lz4block.PutLiterals).
	var m int
	var err error
	switch {
	case len(original) <= lz4block.MaxCompressLen:
		m = lz4block.Compress(work[reserved:reserved+lzBound], original)
	case incompressible(work[reserved:reserved+lzBound], original):
		m = lz4block.PutLiterals(work[reserved:reserved+lzBound], original)
	default:
		c := compressors.Get().(*lz4.Compressor)
		m, err = c.CompressBlock(original, work[reserved:reserved+lzBound])
		compressors.Put(c)
	}
	if err != nil || m <= 0 {
		// Unreachable with a full-bound destination; refuse rather than
		// emit an empty block no reader accepts.
		chunked.Clear(work)
		return dst[:start], envelopeErr(ErrMalformed, "lz4 compression failed")
	}
	if m > MaxEnvelopeCompressedSize {
		chunked.Clear(work)
		return dst[:start], envelopeErr(ErrTooLarge, "compressed_data exceeds 512 MiB")
	}
	head := 1 + mp.BinHeaderLen(m)
	if head < reserved {
		chunked.Copy(work[head:], work[reserved:reserved+m])
	}
	work[0] = mp.FixArray | 4
	mp.PutBinHeader(work[1:head], m)

	out := dst[:start+head+m]
	out = appendEnvelopeTail(out, chunked.XXH3(original), uint64(len(original)), format)
	if len(out)-start > MaxEnvelopeOriginalSize {
		chunked.Clear(work)
		return dst[:start], envelopeErr(ErrTooLarge, "envelope exceeds 512 MiB")
	}
	return out, nil
}

// incompressible reports whether src's first lz4block.MaxCompressLen bytes
// shrink by less than 1/64 under lz4block.Compress; scratch (at least
// CompressBlockBound(lz4block.MaxCompressLen) bytes) receives the trial
// block.
func incompressible(scratch, src []byte) bool {
	probe := src[:lz4block.MaxCompressLen]
	return lz4block.Compress(scratch, probe) > len(probe)-len(probe)/64
}

// appendEnvelopeFields encodes given fields canonically. The writer checks
// in tests use it to compare the encoding with vectors whose LZ4 bytes come
// from another compressor.
func appendEnvelopeFields(dst, compressed []byte, checksum uint64, originalSize uint64, format string) []byte {
	dst = append(dst, mp.FixArray|4)
	var h [5]byte
	n := mp.BinHeaderLen(len(compressed))
	mp.PutBinHeader(h[:n], len(compressed))
	dst = append(dst, h[:n]...)
	dst = append(dst, compressed...)
	return appendEnvelopeTail(dst, checksum, originalSize, format)
}

// appendEnvelopeTail appends elements [1] to [3]: the checksum as an array of
// 8 integers, original_size and the format string.
func appendEnvelopeTail(dst []byte, checksum, originalSize uint64, format string) []byte {
	dst = append(dst, mp.FixArray|8)
	for shift := 56; shift >= 0; shift -= 8 {
		dst = mp.AppendUint(dst, uint64(byte(checksum>>shift)))
	}
	dst = mp.AppendUint(dst, originalSize)
	dst = mp.AppendStr(dst, format)
	return dst
}

// overlaps reports whether x and y share any memory, the check
// cipher.AEAD implementations make before writing into dst's spare capacity.
func overlaps(x, y []byte) bool {
	if len(x) == 0 || len(y) == 0 {
		return false
	}
	xs := uintptr(unsafe.Pointer(unsafe.SliceData(x)))
	ys := uintptr(unsafe.Pointer(unsafe.SliceData(y)))
	return xs <= ys+uintptr(len(y)-1) && ys <= xs+uintptr(len(x)-1)
}
