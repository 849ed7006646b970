package structdec

import "unsafe"

// msgpack format codes this package reads.
const (
	cNil    = 0xc0
	cFalse  = 0xc2
	cTrue   = 0xc3
	cBin8   = 0xc4
	cBin16  = 0xc5
	cBin32  = 0xc6
	cExt8   = 0xc7
	cExt16  = 0xc8
	cExt32  = 0xc9
	cFloat  = 0xca
	cDouble = 0xcb
	cUint8  = 0xcc
	cUint16 = 0xcd
	cUint32 = 0xce
	cUint64 = 0xcf
	cInt8   = 0xd0
	cInt16  = 0xd1
	cInt32  = 0xd2
	cInt64  = 0xd3
	cFixExt = 0xd4 // 0xd4..0xd8: fixext 1, 2, 4, 8, 16
	cStr8   = 0xd9
	cStr16  = 0xda
	cStr32  = 0xdb
	cArr16  = 0xdc
	cArr32  = 0xdd
	cMap16  = 0xde
	cMap32  = 0xdf
)

// reader walks a msgpack document. Every method checks bounds and reports
// false instead of reading past the end.
type reader struct {
	b []byte
	i int

	// arena holds the bytes of the strings decoded so far (see copyString);
	// its spare capacity takes the next ones.
	arena []byte
}

// arenaMax is the largest allocation copyString shares between strings:
// a string that is kept alive keeps at most this many bytes of other
// strings (and of unused capacity) alive with it.
const arenaMax = 1024

// copyString returns a string holding a copy of b. Strings shorter than
// arenaMax are copied into a block shared with the strings decoded after
// them, so that a document's strings cost one allocation rather than one
// each: the block is sized to the bytes left in the document (an upper
// bound on the strings still to come, b included), at most arenaMax. The
// strings are values like any other (immutable; nothing writes to a block
// after a string was cut from it); only their retention differs from
// msgpack's one allocation per string.
func (r *reader) copyString(b []byte) string {
	n := len(b)
	if n >= arenaMax {
		return string(b)
	}
	if n > cap(r.arena)-len(r.arena) {
		size := min(len(r.b)-r.i+n, arenaMax)
		r.arena = make([]byte, 0, max(size, n))
	}
	start := len(r.arena)
	r.arena = append(r.arena, b...)
	return unsafe.String(&r.arena[start], n)
}

// code reads one byte.
func (r *reader) code() (byte, bool) {
	if r.i >= len(r.b) {
		return 0, false
	}
	c := r.b[r.i]
	r.i++
	return c, true
}

// take returns the next n bytes, or false when fewer remain (or n < 0,
// which a 32-bit length may become after conversion to int).
func (r *reader) take(n int) ([]byte, bool) {
	if n < 0 || n > len(r.b)-r.i {
		return nil, false
	}
	s := r.b[r.i : r.i+n : r.i+n]
	r.i += n
	return s, true
}

// advance skips n bytes.
func (r *reader) advance(n int) bool {
	if n < 0 || n > len(r.b)-r.i {
		return false
	}
	r.i += n
	return true
}

// remaining is the number of unread bytes.
func (r *reader) remaining() int { return len(r.b) - r.i }

// u8, u16, u32 and u64 read big-endian unsigned integers.
func (r *reader) u8() (uint64, bool) {
	c, ok := r.code()
	return uint64(c), ok
}

func (r *reader) u16() (uint64, bool) {
	if len(r.b)-r.i < 2 {
		return 0, false
	}
	b := r.b[r.i : r.i+2]
	r.i += 2
	return uint64(b[0])<<8 | uint64(b[1]), true
}

func (r *reader) u32() (uint64, bool) {
	if len(r.b)-r.i < 4 {
		return 0, false
	}
	b := r.b[r.i : r.i+4]
	r.i += 4
	return uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3]), true
}

func (r *reader) u64() (uint64, bool) {
	if len(r.b)-r.i < 8 {
		return 0, false
	}
	b := r.b[r.i : r.i+8]
	r.i += 8
	return uint64(b[0])<<56 | uint64(b[1])<<48 | uint64(b[2])<<40 | uint64(b[3])<<32 |
		uint64(b[4])<<24 | uint64(b[5])<<16 | uint64(b[6])<<8 | uint64(b[7]), true
}

// count converts a decoded length to int, reporting false when it does not
// fit (only possible for 32-bit lengths on 32-bit platforms).
func count(n uint64, ok bool) (int, bool) {
	v := int(n)
	return v, ok && v >= 0 && uint64(v) == n
}

// intCode finishes an integer whose code c was already read, as msgpack's
// DecodeInt64 does: nil is 0, fixnums and the int and uint families are
// widened (int codes sign-extended, uint codes zero-extended), and uint64
// values keep their bits.
func (r *reader) intCode(c byte) (int64, bool) {
	if c <= 0x7f || c >= 0xe0 {
		return int64(int8(c)), true
	}
	switch c {
	case cNil:
		return 0, true
	case cUint8:
		v, ok := r.u8()
		return int64(v), ok
	case cInt8:
		v, ok := r.u8()
		return int64(int8(v)), ok
	case cUint16:
		v, ok := r.u16()
		return int64(v), ok
	case cInt16:
		v, ok := r.u16()
		return int64(int16(v)), ok
	case cUint32:
		v, ok := r.u32()
		return int64(v), ok
	case cInt32:
		v, ok := r.u32()
		return int64(int32(v)), ok
	case cUint64, cInt64:
		v, ok := r.u64()
		return int64(v), ok
	}
	return 0, false
}

// int reads an integer (see intCode). msgpack's DecodeUint64 yields the
// same bits, so uint fields use it too.
func (r *reader) int() (int64, bool) {
	c, ok := r.code()
	if !ok {
		return 0, false
	}
	return r.intCode(c)
}

// str reads what msgpack's string decoding accepts: nil (reported as
// null), the str family and the bin family. The bytes alias the input.
func (r *reader) str() (b []byte, null, ok bool) {
	c, ok := r.code()
	if !ok {
		return nil, false, false
	}
	var n int
	switch {
	case c >= 0xa0 && c <= 0xbf:
		n = int(c & 0x1f)
	case c == cNil:
		return nil, true, true
	case c == cStr8 || c == cBin8:
		n, ok = count(r.u8())
	case c == cStr16 || c == cBin16:
		n, ok = count(r.u16())
	case c == cStr32 || c == cBin32:
		n, ok = count(r.u32())
	default:
		return nil, false, false
	}
	if !ok {
		return nil, false, false
	}
	b, ok = r.take(n)
	return b, false, ok
}

// key reads a map key as msgpack's decodeStringTemp does (a nil key is
// "", which names no field). Unlike str's, the returned slice keeps the
// input's capacity, which lets loadWord read a short key in one load.
func (r *reader) key() ([]byte, bool) {
	if r.i < len(r.b) {
		if c := r.b[r.i]; c >= 0xa0 && c <= 0xbf { // fixstr, the usual case
			n := int(c & 0x1f)
			start := r.i + 1
			if n > len(r.b)-start {
				return nil, false
			}
			r.i = start + n
			return r.b[start : start+n], true
		}
	}
	b, _, ok := r.str()
	return b, ok
}

// string reads a string as msgpack's DecodeString does: nil and empty
// strings are "", anything else is copied (see copyString).
func (r *reader) string() (string, bool) {
	if r.i < len(r.b) {
		if c := r.b[r.i]; c > 0xa0 && c <= 0xbf { // non-empty fixstr
			n := int(c & 0x1f)
			start := r.i + 1
			if n > len(r.b)-start {
				return "", false
			}
			r.i = start + n
			return r.copyString(r.b[start : start+n]), true
		}
	}
	b, _, ok := r.str()
	if !ok {
		return "", false
	}
	if len(b) == 0 {
		return "", true
	}
	return r.copyString(b), true
}

// mapLen finishes a map header whose code c was already read. Nil is not a
// map here; callers that accept it check for it first.
func (r *reader) mapLen(c byte) (int, bool) {
	switch {
	case c >= 0x80 && c <= 0x8f:
		return int(c & 0x0f), true
	case c == cMap16:
		return count(r.u16())
	case c == cMap32:
		return count(r.u32())
	}
	return 0, false
}

// arrayLen finishes an array header whose code c was already read.
func (r *reader) arrayLen(c byte) (int, bool) {
	switch {
	case c >= 0x90 && c <= 0x9f:
		return int(c & 0x0f), true
	case c == cArr16:
		return count(r.u16())
	case c == cArr32:
		return count(r.u32())
	}
	return 0, false
}
