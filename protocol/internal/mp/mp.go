// Package mp is cachekit's one MessagePack vocabulary: the tag bytes, the
// writers every encoder in package protocol uses (the canonical encoder, the
// auto-mode key builder, the ByteStorage envelope), the one description of
// what follows each header byte (HeaderShape), which the bounded walker, the
// bounded decoder and the envelope's pre-scan read, and the check that a
// document is one str or bin item (BytesHeader). It knows bytes only: the
// rules (budgets, depth, canonical forms) stay with their formats in
// package protocol.
package mp

import (
	"encoding/binary"
	"math"
)

// The writers. Each one writes a single tag in its shortest legal width and
// returns the extended slice, in the style of strconv.AppendInt. They never
// fail: length arguments must already have been checked against MaxLen by
// the caller (a msgpack length field holds at most 32 bits).

// The tag bytes of the header forms (the fix forms take their count or
// value in the low bits).
const (
	Nil      = 0xc0
	Never    = 0xc1 // never used by the format; always malformed
	False    = 0xc2
	True     = 0xc3
	Bin8     = 0xc4
	Bin16    = 0xc5
	Bin32    = 0xc6
	Ext8     = 0xc7
	Ext16    = 0xc8
	Ext32    = 0xc9
	Float32  = 0xca
	Float64  = 0xcb
	Uint8    = 0xcc
	Uint16   = 0xcd
	Uint32   = 0xce
	Uint64   = 0xcf
	Int8     = 0xd0
	Int16    = 0xd1
	Int32    = 0xd2
	Int64    = 0xd3
	FixExt1  = 0xd4
	FixExt2  = 0xd5
	FixExt4  = 0xd6
	FixExt8  = 0xd7
	FixExt16 = 0xd8
	Str8     = 0xd9
	Str16    = 0xda
	Str32    = 0xdb
	Array16  = 0xdc
	Array32  = 0xdd
	Map16    = 0xde
	Map32    = 0xdf

	FixMap   = 0x80 // | n, n <= 15
	FixArray = 0x90 // | n, n <= 15
	FixStr   = 0xa0 // | n, n <= 31
)

// MaxLen is the largest length a str, bin, array or map header can
// declare: the 32-bit length field of the *32 forms.
const MaxLen = math.MaxUint32

// AppendNil appends the nil tag.
func AppendNil(dst []byte) []byte { return append(dst, Nil) }

// AppendBool appends true or false.
func AppendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, True)
	}
	return append(dst, False)
}

// AppendUint appends a non-negative integer: positive fixint, then uint8,
// uint16, uint32 or uint64, whichever is the smallest that holds v.
func AppendUint(dst []byte, v uint64) []byte {
	switch {
	case v <= 0x7f:
		return append(dst, byte(v))
	case v <= math.MaxUint8:
		return append(dst, Uint8, byte(v))
	case v <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(dst, Uint16), uint16(v))
	case v <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(dst, Uint32), uint32(v))
	default:
		return binary.BigEndian.AppendUint64(append(dst, Uint64), v)
	}
}

// AppendInt appends a signed integer in its shortest form. Non-negative
// values take the unsigned forms (as every canonical writer does); negative
// ones take negative fixint, then int8, int16, int32 or int64.
func AppendInt(dst []byte, v int64) []byte {
	switch {
	case v >= 0:
		return AppendUint(dst, uint64(v))
	case v >= -32:
		return append(dst, byte(v))
	case v >= math.MinInt8:
		return append(dst, Int8, byte(v))
	case v >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(dst, Int16), uint16(v))
	case v >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(dst, Int32), uint32(v))
	default:
		return binary.BigEndian.AppendUint64(append(dst, Int64), uint64(v))
	}
}

// AppendFloat64 appends f as a float64 (0xcb), the only float width the
// canonical encoding allows. It does not check for NaN or infinities.
func AppendFloat64(dst []byte, f float64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, Float64), math.Float64bits(f))
}

// AppendStrHeader appends the header of a str of n bytes: fixstr, str8,
// str16 or str32. n must be at most MaxLen.
func AppendStrHeader(dst []byte, n int) []byte {
	switch {
	case n <= 31:
		return append(dst, FixStr|byte(n))
	case n <= math.MaxUint8:
		return append(dst, Str8, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(dst, Str16), uint16(n))
	default:
		return binary.BigEndian.AppendUint32(append(dst, Str32), uint32(n))
	}
}

// AppendStr appends s as a str (header then its bytes, unchanged). The
// caller is responsible for s being valid UTF-8 where that matters.
func AppendStr(dst []byte, s string) []byte {
	return append(AppendStrHeader(dst, len(s)), s...)
}

// AppendBinHeader appends the header of a bin of n bytes: bin8, bin16 or
// bin32. n must be at most MaxLen.
func AppendBinHeader(dst []byte, n int) []byte {
	switch {
	case n <= math.MaxUint8:
		return append(dst, Bin8, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(dst, Bin16), uint16(n))
	default:
		return binary.BigEndian.AppendUint32(append(dst, Bin32), uint32(n))
	}
}

// AppendBin appends b as a bin (never the str family).
func AppendBin(dst []byte, b []byte) []byte {
	return append(AppendBinHeader(dst, len(b)), b...)
}

// AppendArrayHeader appends the header of an array of n elements:
// fixarray, array16 or array32. n must be at most MaxLen.
func AppendArrayHeader(dst []byte, n int) []byte {
	switch {
	case n <= 15:
		return append(dst, FixArray|byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(dst, Array16), uint16(n))
	default:
		return binary.BigEndian.AppendUint32(append(dst, Array32), uint32(n))
	}
}

// AppendMapHeader appends the header of a map of n key/value pairs:
// fixmap, map16 or map32. n must be at most MaxLen.
func AppendMapHeader(dst []byte, n int) []byte {
	switch {
	case n <= 15:
		return append(dst, FixMap|byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(dst, Map16), uint16(n))
	default:
		return binary.BigEndian.AppendUint32(append(dst, Map32), uint32(n))
	}
}

// BinHeaderLen returns the size of the shortest bin header for n bytes.
func BinHeaderLen(n int) int {
	switch {
	case n <= math.MaxUint8:
		return 2
	case n <= math.MaxUint16:
		return 3
	default:
		return 5
	}
}

// PutBinHeader writes the shortest bin header for n into h, which is
// exactly BinHeaderLen(n) bytes long: the form for a header written in
// front of a body already in place.
func PutBinHeader(h []byte, n int) {
	switch len(h) {
	case 2:
		h[0], h[1] = Bin8, byte(n)
	case 3:
		h[0] = Bin16
		binary.BigEndian.PutUint16(h[1:], uint16(n))
	default:
		h[0] = Bin32
		binary.BigEndian.PutUint32(h[1:], uint32(n))
	}
}
