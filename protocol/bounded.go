package protocol

import (
	"encoding/binary"
	"github.com/cachekit-io/cachekit-go/protocol/internal/mp"
	"sync"
)

// Bounded reading of untrusted MessagePack.
//
// Every cache payload is attacker-controlled input: a five-byte header may
// declare four billion elements, and an eager decoder allocates for the
// declaration before it notices the bytes are missing. CheckMsgpack walks
// the headers of a document once, without recursion and without
// allocating, and rejects it unless all of these hold:
//
//   - it is not empty, not longer than DecodeLimits.MaxBytes, and does not
//     start with the Python SDK's "CK" frame magic;
//   - no path from the root crosses more than DecodeLimits.MaxDepth
//     collection headers (maps and arrays count one level each; empty ones
//     too);
//   - the lengths declared by all headers together - collection elements
//     (a map pair is two), str, bin and ext bytes - never exceed the input
//     length minus one, summed in 64 bits and checked after every header;
//   - the root item is complete at the end of the input and nothing
//     follows it (exactly one document);
//   - the reserved type byte 0xc1 does not occur.
//
// A well-formed document always passes the budget rule, because each
// declared element or byte is backed by at least one input byte other than
// the root's first byte. Passing CheckMsgpack bounds what any decoder that
// sizes containers from declared lengths can allocate to a small multiple
// of the input length. It does not validate str contents as UTF-8: strings
// are bytes to the structural walk, as they are to DecodeMsgpack.

const (
	opMsgpack = "msgpack"

	// maxDepthCeiling is the protocol's ceiling on the nesting bound: a
	// reader may not reject a document for being 1024 levels deep.
	maxDepthCeiling = 1024
	// minDepthFloor is the protocol's floor: a reader must accept 32 levels.
	minDepthFloor = 32

	// DefaultMaxDepth is the nesting bound used when DecodeLimits.MaxDepth
	// is zero: 1024 levels, the protocol ceiling, so every document another
	// conforming SDK may write is readable.
	DefaultMaxDepth = maxDepthCeiling
	// DefaultMaxBytes is the input size limit used when
	// DecodeLimits.MaxBytes is zero: 512 MiB (536,870,912 bytes), the
	// protocol's largest payload.
	DefaultMaxBytes = 512 << 20

	// shallowDepth is how many nesting levels CheckMsgpack tracks in its
	// own stack frame; deeper documents borrow a pooled tracker.
	shallowDepth = minDepthFloor
)

// DecodeLimits bounds the reading of one untrusted MessagePack document.
// The zero value selects the defaults.
type DecodeLimits struct {
	// MaxDepth is the largest number of nested collection headers on any
	// path from the root. Values <= 0 select DefaultMaxDepth (1024);
	// values 1 to 31 are raised to 32, the protocol's floor (a reader must
	// accept 32 levels); values above 1024 are lowered to 1024, the
	// protocol's ceiling.
	// default: 1024
	MaxDepth int
	// MaxBytes is the longest input accepted, in bytes. Values <= 0 select
	// DefaultMaxBytes (512 MiB).
	// default: 536870912
	MaxBytes int
}

// DefaultDecodeLimits holds the defaults the zero DecodeLimits selects,
// spelled out.
var DefaultDecodeLimits = DecodeLimits{MaxDepth: DefaultMaxDepth, MaxBytes: DefaultMaxBytes}

// effective returns the bounds actually applied.
func (l DecodeLimits) effective() (maxDepth, maxBytes int) {
	maxDepth, maxBytes = l.MaxDepth, l.MaxBytes
	switch {
	case maxDepth <= 0:
		maxDepth = DefaultMaxDepth
	case maxDepth < minDepthFloor:
		maxDepth = minDepthFloor
	case maxDepth > maxDepthCeiling:
		maxDepth = maxDepthCeiling
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	return maxDepth, maxBytes
}

// The decoder's rejections. They are values, so a rejection allocates
// nothing; each wraps the sentinel a caller branches on.
var (
	errEmptyInput   = formatErr(opMsgpack, ErrMalformed, "empty input is not a document")
	errInputTooLong = formatErr(opMsgpack, ErrTooLarge, "input is longer than the decode size limit")
	errCKFrame      = formatErr(opMsgpack, ErrPythonFrame, "written by the Python SDK (CK frame): an auto-mode entry only cachekit-py can decode, not a MessagePack document")
	errTooNested    = formatErr(opMsgpack, ErrTooLarge, "collections nest deeper than the depth limit")
	errOverclaim    = formatErr(opMsgpack, ErrTooLarge, "declared lengths add up to more than the input can hold")
	errIncomplete   = formatErr(opMsgpack, ErrMalformed, "input ends before the document is complete")
	errTrailing     = formatErr(opMsgpack, ErrMalformed, "trailing bytes after one complete document")
	errReservedByte = formatErr(opMsgpack, ErrMalformed, "reserved type byte 0xc1")
)

// deepTracker holds the per-level element counts of documents nested
// deeper than shallowDepth.
type deepTracker struct{ owed [maxDepthCeiling]uint64 }

var deepTrackers = sync.Pool{New: func() any { return new(deepTracker) }}

// CheckMsgpack reports whether b is exactly one well-formed MessagePack
// document within lim, without decoding it. It allocates nothing for
// documents up to 32 levels deep (deeper ones reuse pooled state), runs in
// one pass over the headers and never recurses. Errors wrap ErrMalformed
// (truncated, trailing bytes, 0xc1), ErrTooLarge (depth, declared lengths,
// input size) or ErrPythonFrame (the input is a cachekit-py CK frame).
func CheckMsgpack(b []byte, lim DecodeLimits) error {
	maxDepth, err := checkPrelude(b, lim)
	if err != nil {
		return err
	}
	if wholeBytesItem(b) {
		return nil
	}
	return walkDocument(b, maxDepth)
}

// checkPrelude applies the checks that come before any walk (empty input,
// the size limit, a CK frame) and returns the effective depth limit.
func checkPrelude(b []byte, lim DecodeLimits) (int, error) {
	maxDepth, maxBytes := lim.effective()
	switch {
	case len(b) == 0:
		return 0, errEmptyInput
	case len(b) > maxBytes:
		return 0, errInputTooLong
	case len(b) >= 2 && b[0] == 'C' && b[1] == 'K':
		// 0x43 alone is the complete document 67, so a CK frame could only
		// ever fail as "trailing bytes"; name its writer instead.
		return 0, errCKFrame
	}
	return maxDepth, nil
}

// walkDocument runs the full structural walk, with depth tracking on the
// stack for shallow documents and pooled state for deep ones.
func walkDocument(b []byte, maxDepth int) error {
	var shallow [shallowDepth]uint64
	deep, err := walkMsgpack(b, maxDepth, shallow[:], false)
	if deep != nil {
		deepTrackers.Put(deep)
	}
	return err
}

// BytesItem returns the body of b when b is exactly one str or bin item
// and nothing else (the payload of a []byte or string value), so a reader
// of such values parses its header the way CheckMsgpack does.
func BytesItem(b []byte) (body []byte, ok bool) {
	if h, ok := mp.BytesHeader(b); ok {
		return b[h:], true
	}
	return nil, false
}

// wholeBytesItem reports whether b is exactly one str or bin item (any
// width) and nothing else: the shape of every []byte or string value, the
// commonest payload. Such a document passes every rule walkMsgpack applies
// (no collection, no 0xc1, complete, no trailing bytes, and its declared
// length is at most len(b)-1 because its header is at least one byte), so
// CheckMsgpack can accept it without the walk. For any other input it
// returns false and the walk decides.
func wholeBytesItem(b []byte) bool {
	_, ok := mp.BytesHeader(b)
	return ok
}

// walkMsgpack checks one non-empty document. owed[i] counts the items
// still due in the open collection at level i+1; when the document nests
// deeper than len(owed), the counts move to a pooled deepTracker, which is
// returned for the caller to put back. It is the one structural walker:
// CheckMsgpack runs it, and so does the envelope's pre-scan with prescan
// set, which also charges fixext data bytes to the budget and stops at the
// end of the first document (trailing bytes are the typed decode's
// business).
func walkMsgpack(b []byte, maxDepth int, owed []uint64, prescan bool) (deep *deepTracker, err error) {
	n := len(b)
	budget := uint64(n - 1)
	var declared uint64
	depth, pos := 0, 0
	for {
		if pos >= n {
			return deep, errIncomplete
		}
		c := b[pos]
		pos++
		var slots uint64 // elements or bytes this header declares
		var body uint64  // bytes to skip after the header
		collection := false
		switch {
		case c <= 0x7f || c >= 0xe0: // positive and negative fixint
		case c <= 0x8f: // fixmap
			slots, collection = 2*uint64(c&0x0f), true
		case c <= 0x9f: // fixarray
			slots, collection = uint64(c&0x0f), true
		case c <= 0xbf: // fixstr
			slots = uint64(c & 0x1f)
			body = slots
		default:
			width, kind := mp.HeaderShape(c)
			switch kind {
			case mp.ShapeReserved:
				return deep, errReservedByte
			case mp.ShapeFixed:
				body = uint64(width)
				if prescan && c >= mp.FixExt1 && c <= mp.FixExt16 {
					slots = body - 1 // the fixext data bytes
				}
			default:
				if n-pos < width {
					return deep, errIncomplete
				}
				var l uint64
				switch width {
				case 1:
					l = uint64(b[pos])
				case 2:
					l = uint64(binary.BigEndian.Uint16(b[pos:]))
				default:
					l = uint64(binary.BigEndian.Uint32(b[pos:]))
				}
				pos += width
				switch kind {
				case mp.ShapeBytes:
					slots, body = l, l
				case mp.ShapeExt:
					slots, body = l, l+1 // the type byte follows the length
				case mp.ShapeArray:
					slots, collection = l, true
				case mp.ShapeMap:
					slots, collection = 2*l, true
				}
			}
		}
		// declared <= budget < 2^63 and slots < 2^34, so this cannot wrap.
		declared += slots
		if declared > budget {
			return deep, errOverclaim
		}
		if body > uint64(n-pos) {
			return deep, errIncomplete
		}
		pos += int(body)
		if collection {
			if depth >= maxDepth {
				return deep, errTooNested
			}
			if slots > 0 {
				if depth == len(owed) {
					deep = deepTrackers.Get().(*deepTracker)
					copy(deep.owed[:], owed)
					owed = deep.owed[:]
				}
				owed[depth] = slots
				depth++
				continue
			}
		}
		// An item is complete: settle it against the open collections,
		// closing every one it fills.
		for {
			if depth == 0 {
				if pos != n && !prescan {
					return deep, errTrailing
				}
				return deep, nil
			}
			owed[depth-1]--
			if owed[depth-1] != 0 {
				break
			}
			depth--
		}
	}
}
