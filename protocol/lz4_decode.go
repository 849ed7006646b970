package protocol

import (
	"github.com/pierrec/lz4/v4"

	"github.com/cachekit-io/cachekit-go/internal/chunked"
)

// uncompressBlock decodes one LZ4 block into out and returns the decoded
// length: less than len(out) when the block is shorter, an error when it is
// invalid or longer. An empty out accepts only the empty block, a single
// zero token, without asking the library to decode into no room at all.
//
// A block that is one run of literals and nothing else, which is what the
// compressor writes for a value it cannot shrink (most values under about
// 100 bytes), is copied out here; every other block, and every literal run
// that does not fit out, goes to the library decoder, so the two paths
// accept and reject the same blocks.
func uncompressBlock(src, out []byte) (int, error) {
	if len(out) == 0 {
		if len(src) == 1 && src[0] == 0 {
			return 0, nil
		}
		return 0, errBlockTooLong
	}
	// The match nibble is tested here, inline, so that a block with a
	// match pays no call for the literal-run check.
	if len(src) > 0 && src[0]&lz4RunMask == 0 {
		if lit, ok := lz4LiteralRun(src); ok && len(lit) <= len(out) {
			return chunked.Copy(out, lit), nil
		}
	}
	if len(out) > chunked.Size {
		return decodeBlockLarge(src, out)
	}
	return lz4.UncompressBlock(src, out)
}

// errBlockTooLong is internal: the block is not the empty block although
// original_size is zero. It surfaces as reasonBadBlock.
var errBlockTooLong = envelopeErr(ErrMalformed, reasonBadBlock)

// lz4LiteralRun returns the literals of src when src is exactly one LZ4
// sequence of literals with no match: a token whose match nibble is zero,
// the literal length (the token's high nibble, 15 continuing into bytes of
// 255 ended by a byte below 255), then exactly that many bytes. It reports
// false for anything else, leaving the verdict to a full decoder.
func lz4LiteralRun(src []byte) ([]byte, bool) {
	if len(src) == 0 || src[0]&lz4RunMask != 0 {
		return nil, false
	}
	n, i := int(src[0]>>4), 1
	if n == lz4RunMask {
		for {
			if i >= len(src) || n > len(src) {
				return nil, false
			}
			b := src[i]
			i++
			n += int(b)
			if b != 255 {
				break
			}
		}
	}
	if len(src)-i != n {
		return nil, false
	}
	return src[i:], true
}
