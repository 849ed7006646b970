package lz4block

import (
	"errors"

	"github.com/pierrec/lz4/v4"

	"github.com/cachekit-io/cachekit-go/internal/chunked"
)

// Decompress decodes the LZ4 block src into out and returns the decoded
// length: less than len(out) when the block decodes to fewer bytes, an
// error when it is invalid or decodes to more. An empty out accepts only
// the empty block, a single zero token, without asking the library to
// decode into no room at all.
//
// A block that is one run of literals and nothing else, which is what the
// compressor writes for a value it cannot shrink (most values under about
// 100 bytes), is copied out here, and that path accepts and rejects the
// same blocks as the library decoder. Every other block, and every literal
// run that does not fit out, goes to the library decoder (pierrec/lz4), or,
// when out is larger than chunked.Size, to a decoder written in Go that
// copies in pieces of at most chunked.Size and decodes every block the
// library decodes to the same bytes.
func Decompress(src, out []byte) (int, error) {
	if len(out) == 0 {
		if len(src) == 1 && src[0] == 0 {
			return 0, nil
		}
		return 0, errInvalid
	}
	// The match nibble is tested here, inline, so that a block with a
	// match pays no call for the literal-run check.
	if len(src) > 0 && src[0]&runMask == 0 {
		if lit, ok := literalRun(src); ok && len(lit) <= len(out) {
			return chunked.Copy(out, lit), nil
		}
	}
	if len(out) > chunked.Size {
		return decodeLarge(src, out)
	}
	return lz4.UncompressBlock(src, out)
}

// errInvalid is what Decompress returns, in place of the library's errors,
// for a block it refuses itself: one that is not the empty block although
// out is empty, or one the Go decoder for large outputs cannot decode into
// out.
var errInvalid = errors.New("lz4block: invalid block")

// literalRun returns the literals of src when src is exactly one LZ4
// sequence of literals with no match: a token whose match nibble is zero,
// the literal length (the token's high nibble, 15 continuing into bytes of
// 255 ended by a byte below 255), then exactly that many bytes. It reports
// false for anything else, leaving the verdict to a full decoder.
func literalRun(src []byte) ([]byte, bool) {
	if len(src) == 0 || src[0]&runMask != 0 {
		return nil, false
	}
	n, i := int(src[0]>>4), 1
	if n == runMask {
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
