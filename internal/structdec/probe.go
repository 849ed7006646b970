package structdec

import (
	"encoding/binary"
	"math"
	"reflect"

	"github.com/vmihailenco/msgpack/v5"
)

// probe checks a freshly built plan against msgpack itself: it decodes two
// documents covering every field (one with a value of the field's kind, one
// with nil, or the zero instant for a time.Time) both ways and reports
// whether the results agree. It catches
// decoders installed with msgpack.Register or msgpack.RegisterExtDecoder,
// which the type analysis cannot see, whenever they change the result for
// these documents.
func probe(p *plan) bool {
	for _, null := range []bool{false, true} {
		doc := appendProbe(nil, p, null)
		want := reflect.New(p.typ)
		if !unmarshalNoPanic(doc, want.Interface()) {
			return false
		}
		got := reflect.New(p.typ)
		if !decodePlan(p, doc, got.UnsafePointer()) {
			return false
		}
		if !reflect.DeepEqual(want.Elem().Interface(), got.Elem().Interface()) {
			return false
		}
	}
	return true
}

// unmarshalNoPanic runs msgpack.Unmarshal, reporting false on an error or a
// panic (a registered decoder is arbitrary code).
func unmarshalNoPanic(doc []byte, dst any) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return msgpack.Unmarshal(doc, dst) == nil
}

// appendProbe appends a map holding every field of p: nil values when null
// is set (nested structs still as maps, times as the zero instant, which
// msgpack converts to UTC, since nil makes msgpack panic), otherwise a
// non-zero value of each field's kind.
func appendProbe(b []byte, p *plan, null bool) []byte {
	b = append(b, cMap32)
	b = binary.BigEndian.AppendUint32(b, uint32(len(p.fields)))
	for i := range p.fields {
		f := &p.fields[i]
		b = appendStr(b, f.name)
		b = appendProbeField(b, f, i, null)
	}
	return b
}

// appendProbeField appends a value for the field f (nil when null is set
// and the field takes it, see appendProbe); i varies it.
func appendProbeField(b []byte, f *field, i int, null bool) []byte {
	switch {
	case f.kind == kStruct:
		return appendProbe(b, f.sub, null)
	case f.kind == kTime && null:
		// The zero time.Time: 0 ns, -62135596800 s, in the 12-byte form.
		b = append(b, cExt8, 12, timeExtID, 0, 0, 0, 0)
		return binary.BigEndian.AppendUint64(b, zeroUnix)
	case null:
		return append(b, cNil)
	case f.kind == kTime:
		// 2026-12-05T06:00:00.5Z plus i seconds, in the 8-byte form.
		b = append(b, cFixExt+3, timeExtID)
		return binary.BigEndian.AppendUint64(b, 500_000_000<<34|uint64(1796450400+i))
	case f.kind == kPtr:
		return appendProbeField(b, f.elem, i, false)
	case f.kind == kSlice:
		b = append(b, 0x92)
		return appendProbeValue(appendProbeValue(b, f.elem.kind, i), f.elem.kind, i+1)
	case f.kind == kMap:
		b = append(b, 0x82)
		b = appendProbeValue(appendStr(b, "k"), f.elem.kind, i)
		return appendProbeValue(appendStr(b, "l"), f.elem.kind, i+1)
	}
	return appendProbeValue(b, f.kind, i)
}

// zeroUnix is the Unix time of time.Time's zero value.
const zeroUnix = 1<<64 - 62135596800 // as uint64 bits

// appendProbeValue appends a value for a field of a scalar, string, []byte
// or []string kind k; i varies it.
func appendProbeValue(b []byte, k kind, i int) []byte {
	switch k {
	case kBool:
		return append(b, cTrue)
	case kInt, kInt8, kInt16, kInt32, kInt64:
		return append(b, cInt8, byte(-3-i))
	case kUint, kUint8, kUint16, kUint32, kUint64:
		return append(b, cUint8, byte(0x80+i))
	case kFloat32:
		b = append(b, cFloat)
		return binary.BigEndian.AppendUint32(b, math.Float32bits(1.5+float32(i)))
	case kFloat64:
		b = append(b, cDouble)
		return binary.BigEndian.AppendUint64(b, math.Float64bits(2.25+float64(i)))
	case kString:
		return appendStr(b, "probe")
	case kBytes:
		return append(b, cBin8, 3, 1, 2, byte(i))
	case kStrings:
		b = append(b, 0x92)
		return appendStr(appendStr(b, "a"), "bc")
	}
	return append(b, cNil)
}

// appendStr appends s as a str32, which fits any field name.
func appendStr(b []byte, s string) []byte {
	b = append(b, cStr32)
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}
