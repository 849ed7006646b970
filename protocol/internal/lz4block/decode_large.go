package lz4block

import (
	"github.com/pierrec/lz4/v4"

	"github.com/cachekit-io/cachekit-go/internal/chunked"
)

// decodeLarge decodes one LZ4 block into out, as lz4.UncompressBlock
// does, for outputs larger than chunked.Size: the library decodes a whole
// block in one assembly call the runtime cannot preempt, tens of
// milliseconds for a 64 MiB value. Here the sequence loop is Go, and each
// literal run and match is copied in pieces of at most chunked.Size. A
// differential fuzz test (FuzzDecodeBlockLarge) holds it to the library's
// verdicts and bytes.
func decodeLarge(src, out []byte) (int, error) {
	if chunked.OneShot() {
		return lz4.UncompressBlock(src, out)
	}
	i, o := 0, 0
	for {
		if i == len(src) {
			return o, nil // empty, or ended after a match: as the library has it
		}
		token := src[i]
		i++
		lit, ok := readLength(src, &i, int(token>>4))
		if !ok || lit > len(src)-i || lit > len(out)-o {
			return 0, errInvalid
		}
		chunked.Copy(out[o:o+lit], src[i:i+lit])
		i += lit
		o += lit
		if i == len(src) {
			if token&runMask != 0 {
				return 0, errInvalid // a match announced, its offset missing
			}
			return o, nil // the last sequence: literals only
		}
		if len(src)-i < 2 {
			return 0, errInvalid
		}
		offset := int(src[i]) | int(src[i+1])<<8
		i += 2
		if offset == 0 || offset > o {
			return 0, errInvalid
		}
		m, ok := readLength(src, &i, int(token&runMask))
		m += 4
		if !ok || m > len(out)-o {
			return 0, errInvalid
		}
		copyMatch(out, o, offset, m)
		o += m
	}
}

// readLength finishes a literal or match length whose nibble is n: 15
// continues into bytes of 255 ended by a byte below 255.
func readLength(src []byte, i *int, n int) (int, bool) {
	if n != runMask {
		return n, true
	}
	for {
		if *i >= len(src) || n > len(src)+(1<<30) {
			return 0, false
		}
		b := src[*i]
		*i++
		n += int(b)
		if b != 255 {
			return n, true
		}
	}
}

// copyMatch writes m bytes at out[o:] repeating out[o-offset:o] (the match
// may overlap what it writes), in non-overlapping pieces of at most
// chunked.Size: once done bytes are written, the next piece repeats them
// from the same phase of the period.
func copyMatch(out []byte, o, offset, m int) {
	n := min(offset, m)
	chunked.Copy(out[o:o+n], out[o-offset:o-offset+n])
	for done := n; done < m; {
		phase := done % offset
		n := min(m-done, done-phase)
		chunked.Copy(out[o+done:o+done+n], out[o+phase:o+phase+n])
		done += n
	}
}
