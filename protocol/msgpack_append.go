package protocol

import (
	"encoding/binary"
	"math"
)

// Low-level MessagePack appenders. Each one writes a single tag in its
// shortest legal width and returns the extended slice, in the style of
// strconv.AppendInt. They never fail: length arguments must already have
// been checked against maxMsgpackLen by the caller (a msgpack length field
// holds at most 32 bits), which the canonical encoder does.
//
// These are the only place in the package that spells MessagePack tag
// bytes for writing; the canonical encoder and the auto-mode key builder
// both go through them.

// MessagePack tag bytes used by the writers and the bounded reader.
const (
	mpNil      = 0xc0
	mpNever    = 0xc1 // never used by the format; always malformed
	mpFalse    = 0xc2
	mpTrue     = 0xc3
	mpBin8     = 0xc4
	mpBin16    = 0xc5
	mpBin32    = 0xc6
	mpExt8     = 0xc7
	mpExt16    = 0xc8
	mpExt32    = 0xc9
	mpFloat32  = 0xca
	mpFloat64  = 0xcb
	mpUint8    = 0xcc
	mpUint16   = 0xcd
	mpUint32   = 0xce
	mpUint64   = 0xcf
	mpInt8     = 0xd0
	mpInt16    = 0xd1
	mpInt32    = 0xd2
	mpInt64    = 0xd3
	mpFixExt1  = 0xd4
	mpFixExt2  = 0xd5
	mpFixExt4  = 0xd6
	mpFixExt8  = 0xd7
	mpFixExt16 = 0xd8
	mpStr8     = 0xd9
	mpStr16    = 0xda
	mpStr32    = 0xdb
	mpArr16    = 0xdc
	mpArr32    = 0xdd
	mpMap16    = 0xde
	mpMap32    = 0xdf

	mpFixMap = 0x80 // | n, n <= 15
	mpFixArr = 0x90 // | n, n <= 15
	mpFixStr = 0xa0 // | n, n <= 31
)

// maxMsgpackLen is the largest length a str, bin, array or map header can
// declare: the 32-bit length field of the *32 forms.
const maxMsgpackLen = math.MaxUint32

// appendNil appends the nil tag.
func appendNil(dst []byte) []byte { return append(dst, mpNil) }

// appendBool appends true or false.
func appendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, mpTrue)
	}
	return append(dst, mpFalse)
}

// appendUint appends a non-negative integer: positive fixint, then uint8,
// uint16, uint32 or uint64, whichever is the smallest that holds v.
func appendUint(dst []byte, v uint64) []byte {
	switch {
	case v <= 0x7f:
		return append(dst, byte(v))
	case v <= math.MaxUint8:
		return append(dst, mpUint8, byte(v))
	case v <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(dst, mpUint16), uint16(v))
	case v <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(dst, mpUint32), uint32(v))
	default:
		return binary.BigEndian.AppendUint64(append(dst, mpUint64), v)
	}
}

// appendInt appends a signed integer in its shortest form. Non-negative
// values take the unsigned forms (as every canonical writer does); negative
// ones take negative fixint, then int8, int16, int32 or int64.
func appendInt(dst []byte, v int64) []byte {
	switch {
	case v >= 0:
		return appendUint(dst, uint64(v))
	case v >= -32:
		return append(dst, byte(v))
	case v >= math.MinInt8:
		return append(dst, mpInt8, byte(v))
	case v >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(dst, mpInt16), uint16(v))
	case v >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(dst, mpInt32), uint32(v))
	default:
		return binary.BigEndian.AppendUint64(append(dst, mpInt64), uint64(v))
	}
}

// appendFloat64 appends f as a float64 (0xcb), the only float width the
// canonical encoding allows. It does not check for NaN or infinities.
func appendFloat64(dst []byte, f float64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, mpFloat64), math.Float64bits(f))
}

// appendStrHeader appends the header of a str of n bytes: fixstr, str8,
// str16 or str32. n must be at most maxMsgpackLen.
func appendStrHeader(dst []byte, n int) []byte {
	switch {
	case n <= 31:
		return append(dst, mpFixStr|byte(n))
	case n <= math.MaxUint8:
		return append(dst, mpStr8, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(dst, mpStr16), uint16(n))
	default:
		return binary.BigEndian.AppendUint32(append(dst, mpStr32), uint32(n))
	}
}

// appendStr appends s as a str (header then its bytes, unchanged). The
// caller is responsible for s being valid UTF-8 where that matters.
func appendStr(dst []byte, s string) []byte {
	return append(appendStrHeader(dst, len(s)), s...)
}

// appendBinHeader appends the header of a bin of n bytes: bin8, bin16 or
// bin32. n must be at most maxMsgpackLen.
func appendBinHeader(dst []byte, n int) []byte {
	switch {
	case n <= math.MaxUint8:
		return append(dst, mpBin8, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(dst, mpBin16), uint16(n))
	default:
		return binary.BigEndian.AppendUint32(append(dst, mpBin32), uint32(n))
	}
}

// appendBin appends b as a bin (never the str family).
func appendBin(dst []byte, b []byte) []byte {
	return append(appendBinHeader(dst, len(b)), b...)
}

// appendArrayHeader appends the header of an array of n elements:
// fixarray, array16 or array32. n must be at most maxMsgpackLen.
func appendArrayHeader(dst []byte, n int) []byte {
	switch {
	case n <= 15:
		return append(dst, mpFixArr|byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(dst, mpArr16), uint16(n))
	default:
		return binary.BigEndian.AppendUint32(append(dst, mpArr32), uint32(n))
	}
}

// appendMapHeader appends the header of a map of n key/value pairs:
// fixmap, map16 or map32. n must be at most maxMsgpackLen.
func appendMapHeader(dst []byte, n int) []byte {
	switch {
	case n <= 15:
		return append(dst, mpFixMap|byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(dst, mpMap16), uint16(n))
	default:
		return binary.BigEndian.AppendUint32(append(dst, mpMap32), uint32(n))
	}
}
