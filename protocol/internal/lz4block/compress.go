package lz4block

import (
	"math/bits"
	"sync"

	"github.com/pierrec/lz4/v4"

	"github.com/cachekit-io/cachekit-go/internal/chunked"
)

// This file holds the LZ4 block compressor that protocol.SealEnvelope uses
// for originals of up to 64 KiB, the size of nearly every cached value. It
// is the greedy match finder of the reference "fast" compressor (one hash
// probe per position, a stride that grows over data that does not
// compress), with a hash table sized to the input: a general-purpose
// compressor pays for clearing, and for cache misses in, a table sized for
// its largest input on every call, which for a 1 KiB value costs more than
// compressing it.
//
// The output is one LZ4 block as the block format specifies it, which every
// conforming decoder reads back to the input:
//   - a sequence is a token (literal length in the high nibble, match length
//     minus 4 in the low nibble, 15 meaning "more follows" as a run of 255
//     bytes ended by a byte below 255), the literals, a little-endian 16-bit
//     offset in 1..65535 and the match length's extension;
//   - the last sequence has literals only, and at least the last 5 bytes of
//     the input are literals;
//   - no match starts within the last 12 bytes, so an input shorter than 13
//     bytes is a single literal run.
//
// Positions fit in 16 bits because the input does, so every offset the
// table yields is a valid one. The code is bounds-checked Go: the loads are
// written so the checks are cheap, not removed.

const (
	// MaxCompressLen is the largest input, in bytes, that Compress
	// accepts: every position then fits a uint16 and every offset is at
	// most 65535.
	MaxCompressLen = 64 << 10

	// lastLiterals is how many bytes at the end of a block the format
	// requires to be literals.
	lastLiterals = 5

	// matchEndMargin is how close to the end of the block a match may
	// end: at or before len(src)-matchEndMargin. One byte more than the
	// format requires, as lz4_flex does, so that this compressor reproduces
	// the cross-SDK wire vectors (made with lz4_flex) byte for byte.
	matchEndMargin = lastLiterals + 1

	// matchStartMargin is how close to the end of the block a match may
	// start: at or before len(src)-matchStartMargin.
	matchStartMargin = 12

	// minHashLog and maxHashLog bound the hash table size, in bits,
	// chosen per input by hashLog.
	minHashLog = 8
	maxHashLog = 14

	// skipLog sets how fast the search strides over data that does not
	// compress: after every 1<<skipLog failed probes since the last match
	// the stride grows by one byte.
	skipLog = 5

	// prime5 and prime6 are the multipliers of the reference
	// compressor's 5- and 6-byte hashes.
	prime5 = 889523592379
	prime6 = 227718039650203

	// wideHashMin is the input size from which matches are looked up by
	// 6 bytes instead of 5. On text, a 5-byte hash finds more short matches,
	// which pays on small inputs and costs on large ones, where taking a
	// short match greedily too often hides a longer one (measured on the
	// compressor tests' input families: up to 6% smaller blocks below
	// 4 KiB, up to 9% larger above 8 KiB).
	wideHashMin = 8 << 10

	// runMask is the token nibble meaning "the length continues in
	// extension bytes".
	runMask = 15
)

// table is the match finder's hash table: the last position seen for
// each hash of 5 or 6 input bytes. Only its first 1<<hashLog(n) entries are
// used, and cleared, for an input of n bytes.
type table struct {
	pos [1 << maxHashLog]uint16
}

// tables pools hash tables; at 32 KiB one is too large to allocate per
// call, while clearing the part a 1 KiB input uses costs 2 KiB of stores.
var tables = sync.Pool{New: func() any { return new(table) }}

// hashLog returns the hash table size, in bits, for an input of n bytes:
// about one entry per two input bytes, between 1<<minHashLog and
// 1<<maxHashLog. Larger tables cost clearing and cache misses and, on the
// compressor tests' input families, gain no measurable ratio.
func hashLog(n int) uint {
	return uint(min(max(bits.Len(uint(n))-1, minHashLog), maxHashLog))
}

// Compress writes src as one LZ4 block to the front of dst and returns the
// block's length. src must be at most MaxCompressLen bytes and dst at least
// lz4.CompressBlockBound(len(src)) long; otherwise it writes nothing and
// returns 0. Empty src gives the one-byte empty block. Nothing past the
// block is written. It does not allocate once the pool holds a table.
func Compress(dst, src []byte) int {
	if len(src) > MaxCompressLen || len(dst) < lz4.CompressBlockBound(len(src)) {
		return 0
	}
	if len(src) <= matchStartMargin {
		return putLastLiterals(dst, 0, src)
	}
	t := tables.Get().(*table)
	n := t.compress(dst, src)
	tables.Put(t)
	return n
}

// compress is Compress for inputs of 13 to MaxCompressLen bytes with a
// full-bound dst.
func (t *table) compress(dst, src []byte) int {
	n := len(src)
	h := newHasher(n)
	tab := &t.pos
	// A cleared entry names position 0, a candidate like any other: every
	// candidate is verified against the input before use.
	clear(tab[:1<<hashLog(n)])

	startLimit := n - matchStartMargin // last position a match may start at
	matchLimit := n - matchEndMargin   // where a match must end by
	anchor, ip, d := 0, 1, 0
	for {
		var ref int
		ip, ref = findMatch(tab, src, ip, startLimit, h)
		if ip > startLimit {
			break
		}

		// Extend backwards over pending literals, then forwards up to the
		// limit that keeps the last bytes literal.
		for ip > anchor && ref > 0 && src[ip-1] == src[ref-1] {
			ip--
			ref--
		}
		end := ip + 4
		for r := ref + 4; ; {
			if end+8 > matchLimit {
				for end < matchLimit && src[end] == src[r] {
					end++
					r++
				}
				break
			}
			if x := load64(src, end) ^ load64(src, r); x != 0 {
				end += bits.TrailingZeros64(x) >> 3
				break
			}
			end += 8
			r += 8
		}

		d = putSequence(dst, d, src, anchor, ip, ip-ref, end-ip)
		ip, anchor = end, end
		if ip > startLimit {
			break
		}
		// Index a position inside the match, as the reference compressor
		// does, so that a repeat of its tail is found; the next search
		// probes ip itself.
		p := ip - 2
		tab[h.index(load64(src, p))] = uint16(p)
	}
	return putLastLiterals(dst, d, src[anchor:])
}

// findMatch probes positions from ip on, recording each in the table,
// until the table names an earlier position whose 4 bytes equal those at
// the probed one, and returns both; it returns a position past startLimit
// when there is none. ip+12 <= len(src) at every probe, so 8 bytes can be
// loaded there. The stride starts at 1 and grows by one every
// 1<<skipLog failed probes, so incompressible input is crossed in far
// fewer probes than it has bytes.
//
// It is kept out of line: on its own the loop gets every value in a
// register, and the call costs once per match.
//
//go:noinline
func findMatch(tab *[1 << maxHashLog]uint16, src []byte, ip, startLimit int, h hasher) (pos, ref int) {
	for probes := 1 << skipLog; ip <= startLimit; probes++ {
		x := load64(src, ip)
		i := h.index(x)
		cand := int(tab[i])
		tab[i] = uint16(ip)
		// The table holds only positions already passed, so cand < ip and
		// the offset ip-cand is in 1..65535.
		if load32(src, cand) == uint32(x) {
			return ip, cand
		}
		ip += probes >> skipLog
	}
	return ip, 0
}

// hasher maps the low 5 or 6 bytes of a little-endian load to a table
// index. Masking x to k bytes and multiplying by prime<<(64-8k) is the
// reference compressor's hash ((x << (64-8k)) * prime), written so that the
// width is data rather than code.
type hasher struct {
	mask, mult uint64
	shift      uint
}

// newHasher returns the hasher for an input of n bytes: 5 bytes below
// wideHashMin, 6 from there, into a table of 1<<hashLog(n) entries.
func newHasher(n int) hasher {
	h := hasher{mask: 1<<40 - 1, mult: prime5 << 24, shift: 64 - hashLog(n)}
	if n >= wideHashMin {
		h.mask, h.mult = 1<<48-1, prime6<<16
	}
	return h
}

// index returns the table index for x, below 1<<maxHashLog (the final
// mask only spares the bounds check, and the shift's mask its range check).
func (h hasher) index(x uint64) uint64 {
	return ((x & h.mask) * h.mult >> (h.shift & 63)) & (1<<maxHashLog - 1)
}

// load32 returns the little-endian uint32 at b[i:]. Reslicing first
// leaves one bounds check and lets the compiler merge the byte loads.
func load32(b []byte, i int) uint32 {
	b = b[i : i+4]
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// load64 returns the little-endian uint64 at b[i:].
func load64(b []byte, i int) uint64 {
	b = b[i : i+8]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// store64 writes v little-endian to b[:8].
func store64(b []byte, v uint64) {
	b = b[:8]
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	b[4], b[5], b[6], b[7] = byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56)
}

// putSequence writes the sequence of literals src[anchor:ip] followed by
// a match of length mlen (at least 4) at offset back into dst at d,
// returning the new end of the block.
//
// A run of fewer than 15 literals is copied as one or two whole words,
// which may write up to 6 bytes past the sequence. Those bytes are always
// overwritten: the block continues for at least 7 more bytes (the final
// token and at least 6 literals, as every match ends matchEndMargin
// bytes before the input does), and it is written contiguously. So nothing
// past the finished block is ever written. The reads stay inside src for
// the same reason: ip <= len(src)-12.
func putSequence(dst []byte, d int, src []byte, anchor, ip, offset, mlen int) int {
	ml := mlen - 4
	tok := byte(min(ml, runMask))
	if l := ip - anchor; l < runMask && d+19 <= len(dst) {
		o := dst[d : d+19]
		o[0] = tok | byte(l<<4)
		store64(o[1:], load64(src, anchor))
		if l > 8 {
			store64(o[9:], load64(src, anchor+8))
		}
		o[1+l] = byte(offset)
		o[2+l] = byte(offset >> 8)
		d += 3 + l
	} else {
		lit := src[anchor:ip]
		dst[d] = tok | byte(min(len(lit), runMask)<<4)
		d++
		if len(lit) >= runMask {
			d = putLengthExt(dst, d, len(lit)-runMask)
		}
		d += copy(dst[d:], lit)
		dst[d] = byte(offset)
		dst[d+1] = byte(offset >> 8)
		d += 2
	}
	if ml >= runMask {
		d = putLengthExt(dst, d, ml-runMask)
	}
	return d
}

// putLastLiterals writes the block's final, literals-only sequence into
// dst at d and returns the block's length.
func putLastLiterals(dst []byte, d int, lit []byte) int {
	dst[d] = byte(min(len(lit), runMask) << 4)
	d++
	if len(lit) >= runMask {
		d = putLengthExt(dst, d, len(lit)-runMask)
	}
	return d + copy(dst[d:], lit)
}

// putLengthExt writes the extension bytes of a length whose token nibble
// is 15: v as a run of 255s ended by the remainder, a byte below 255 (which
// is 0 when v is a multiple of 255).
func putLengthExt(dst []byte, d, v int) int {
	for v >= 255 {
		dst[d] = 255
		d++
		v -= 255
	}
	dst[d] = byte(v)
	return d + 1
}

// PutLiterals writes src as one LZ4 block of literals only, a single
// sequence with no match, to the front of dst and returns the block's
// length. dst must be at least lz4.CompressBlockBound(len(src)) long. The
// literals are copied in pieces of at most chunked.Size, so that a large
// src is not moved by one call the runtime cannot preempt; protocol's
// SealEnvelope writes an original larger than MaxCompressLen this way when
// its start does not compress.
func PutLiterals(dst, src []byte) int {
	n := len(src)
	if n < runMask {
		dst[0] = byte(n << 4)
		return 1 + copy(dst[1:], src)
	}
	dst[0] = runMask << 4
	i := 1
	for rest := n - runMask; ; rest -= 255 {
		if rest < 255 {
			dst[i] = byte(rest)
			i++
			break
		}
		dst[i] = 255
		i++
	}
	return i + chunked.Copy(dst[i:], src)
}
