package mp

import "encoding/binary"

// Header shapes of the 0xc0-0xdf type bytes, as HeaderShape reports them.
const (
	ShapeFixed    = iota // scalar with a fixed-size body (width bytes), or none
	ShapeReserved        // 0xc1
	ShapeBytes           // str or bin: width-byte length, then that many bytes
	ShapeExt             // ext: width-byte length, type byte, then the data
	ShapeArray           // width-byte element count
	ShapeMap             // width-byte pair count
)

// HeaderShape describes the type bytes 0xc0 to 0xdf: what follows the tag
// and the width of that length field or fixed body.
func HeaderShape(c byte) (width, kind int) {
	switch c {
	case Nil, False, True:
		return 0, ShapeFixed
	case Never:
		return 0, ShapeReserved
	case Bin8, Str8:
		return 1, ShapeBytes
	case Bin16, Str16:
		return 2, ShapeBytes
	case Bin32, Str32:
		return 4, ShapeBytes
	case Ext8:
		return 1, ShapeExt
	case Ext16:
		return 2, ShapeExt
	case Ext32:
		return 4, ShapeExt
	case Uint8, Int8:
		return 1, ShapeFixed
	case Uint16, Int16:
		return 2, ShapeFixed
	case Float32, Uint32, Int32:
		return 4, ShapeFixed
	case Float64, Uint64, Int64:
		return 8, ShapeFixed
	case FixExt1:
		return 2, ShapeFixed // type byte + 1 data byte; fixext declares no slots
	case FixExt2:
		return 3, ShapeFixed
	case FixExt4:
		return 5, ShapeFixed
	case FixExt8:
		return 9, ShapeFixed
	case FixExt16:
		return 17, ShapeFixed
	case Array16:
		return 2, ShapeArray
	case Array32:
		return 4, ShapeArray
	case Map16:
		return 2, ShapeMap
	default: // Map32
		return 4, ShapeMap
	}
}

// BytesHeader reports whether b is exactly one str or bin item (any width)
// and nothing else, the shape of every []byte or string value, the
// commonest payload, and returns the length of its header: the body is
// b[h:].
func BytesHeader(b []byte) (h int, ok bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n int
	switch c := b[0]; {
	case c&0xe0 == FixStr:
		n, h = int(c&0x1f), 1
	case c == Bin8 || c == Str8:
		if len(b) < 2 {
			return 0, false
		}
		n, h = int(b[1]), 2
	case c == Bin16 || c == Str16:
		if len(b) < 3 {
			return 0, false
		}
		n, h = int(binary.BigEndian.Uint16(b[1:])), 3
	case c == Bin32 || c == Str32:
		if len(b) < 5 {
			return 0, false
		}
		n, h = int(binary.BigEndian.Uint32(b[1:])), 5
	default:
		return 0, false
	}
	return h, len(b)-h == n
}
