package structdec

import (
	"encoding/binary"
	"time"
)

// timeExtID is the msgpack extension type of a timestamp.
const timeExtID = 0xff // -1 as a byte

// timeField decodes a time.Time field as the timestamp decoder msgpack
// registers for time.Time does (its ext.go and time.go): the value must be
// an extension (any of the fixext and ext codes) of type -1 whose data is
// 4 bytes (seconds), 8 bytes (30 bits of nanoseconds over 34 of seconds)
// or 12 bytes (32 bits of nanoseconds, then 64 of signed seconds); the
// time is time.Unix's, so in time.Local, except the zero instant, which is
// converted to UTC. Everything else is refused: nil makes msgpack panic
// (reflect's IsNil on a struct), other codes, types and lengths are
// errors, and msgpack's DecodeTime, which also takes strings, arrays and
// type 13, is not the decoder of a time.Time field.
func (r *reader) timeField(dst *time.Time) bool {
	c, ok := r.code()
	if !ok {
		return false
	}
	var n int
	switch c {
	case cFixExt + 2: // fixext 4
		n = 4
	case cFixExt + 3: // fixext 8
		n = 8
	case cExt8:
		n, ok = count(r.u8())
	case cExt16:
		n, ok = count(r.u16())
	case cExt32:
		n, ok = count(r.u32())
	default:
		return false
	}
	if !ok {
		return false
	}
	typ, ok := r.code()
	if !ok || typ != timeExtID {
		return false
	}
	b, ok := r.take(n)
	if !ok {
		return false
	}
	var tm time.Time
	switch n {
	case 4:
		tm = time.Unix(int64(binary.BigEndian.Uint32(b)), 0)
	case 8:
		v := binary.BigEndian.Uint64(b)
		tm = time.Unix(int64(v&0x00000003ffffffff), int64(v>>34))
	case 12:
		tm = time.Unix(int64(binary.BigEndian.Uint64(b[4:])), int64(binary.BigEndian.Uint32(b)))
	default:
		return false
	}
	if tm.IsZero() {
		tm = tm.UTC() // msgpack: "Zero time does not have timezone information."
	}
	*dst = tm
	return true
}
