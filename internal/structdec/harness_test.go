package structdec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"
	"unsafe"

	"github.com/vmihailenco/msgpack/v5"
)

// ---- msgpack builders for hand-made documents ----

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func fixint(v int8) []byte { return []byte{byte(v)} }
func u8(v uint8) []byte    { return []byte{cUint8, v} }
func u16(v uint16) []byte  { return binary.BigEndian.AppendUint16([]byte{cUint16}, v) }
func u32(v uint32) []byte  { return binary.BigEndian.AppendUint32([]byte{cUint32}, v) }
func u64(v uint64) []byte  { return binary.BigEndian.AppendUint64([]byte{cUint64}, v) }
func i8(v int8) []byte     { return []byte{cInt8, byte(v)} }
func i16(v int16) []byte   { return binary.BigEndian.AppendUint16([]byte{cInt16}, uint16(v)) }
func i32(v int32) []byte   { return binary.BigEndian.AppendUint32([]byte{cInt32}, uint32(v)) }
func i64(v int64) []byte   { return binary.BigEndian.AppendUint64([]byte{cInt64}, uint64(v)) }
func f32bits(v uint32) []byte {
	return binary.BigEndian.AppendUint32([]byte{cFloat}, v)
}
func f64bits(v uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{cDouble}, v)
}
func f32(v float32) []byte { return f32bits(math.Float32bits(v)) }
func f64(v float64) []byte { return f64bits(math.Float64bits(v)) }

var (
	mnil   = []byte{cNil}
	mtrue  = []byte{cTrue}
	mfalse = []byte{cFalse}
)

func fixstr(s string) []byte {
	if len(s) > 31 {
		panic("fixstr: too long")
	}
	return append([]byte{0xa0 | byte(len(s))}, s...)
}
func str8(s string) []byte { return append([]byte{cStr8, byte(len(s))}, s...) }
func str16(s string) []byte {
	return append(binary.BigEndian.AppendUint16([]byte{cStr16}, uint16(len(s))), s...)
}
func str32(s string) []byte {
	return append(binary.BigEndian.AppendUint32([]byte{cStr32}, uint32(len(s))), s...)
}
func bin8(s string) []byte { return append([]byte{cBin8, byte(len(s))}, s...) }
func bin16(s string) []byte {
	return append(binary.BigEndian.AppendUint16([]byte{cBin16}, uint16(len(s))), s...)
}
func bin32(s string) []byte {
	return append(binary.BigEndian.AppendUint32([]byte{cBin32}, uint32(len(s))), s...)
}

// arr encodes items as a fixarray; arr16 and arr32 use the wider headers.
func arr(items ...[]byte) []byte {
	if len(items) > 15 {
		panic("arr: too many items for a fixarray")
	}
	return cat(append([][]byte{{0x90 | byte(len(items))}}, items...)...)
}
func arr16(items ...[]byte) []byte {
	return cat(append([][]byte{binary.BigEndian.AppendUint16([]byte{cArr16}, uint16(len(items)))}, items...)...)
}
func arr32(items ...[]byte) []byte {
	return cat(append([][]byte{binary.BigEndian.AppendUint32([]byte{cArr32}, uint32(len(items)))}, items...)...)
}

// fmap encodes alternating keys and values as a fixmap; map16 and map32 use
// the wider headers.
func fmap(kv ...[]byte) []byte {
	if len(kv) > 30 || len(kv)%2 != 0 {
		panic("fmap: not a fixmap's worth of pairs")
	}
	return cat(append([][]byte{{0x80 | byte(len(kv)/2)}}, kv...)...)
}
func map16(kv ...[]byte) []byte {
	return cat(append([][]byte{binary.BigEndian.AppendUint16([]byte{cMap16}, uint16(len(kv)/2))}, kv...)...)
}
func map32(kv ...[]byte) []byte {
	return cat(append([][]byte{binary.BigEndian.AppendUint32([]byte{cMap32}, uint32(len(kv)/2))}, kv...)...)
}

// fixext encodes a fixext of 1, 2, 4, 8 or 16 data bytes; ext8 a longer one.
func fixext(typ int8, data []byte) []byte {
	code := map[int]byte{1: 0xd4, 2: 0xd5, 4: 0xd6, 8: 0xd7, 16: 0xd8}[len(data)]
	return append([]byte{code, byte(typ)}, data...)
}
func ext8(typ int8, data []byte) []byte {
	return append([]byte{cExt8, byte(len(data)), byte(typ)}, data...)
}
func ext16(typ int8, data []byte) []byte {
	return append(binary.BigEndian.AppendUint16([]byte{cExt16}, uint16(len(data))), append([]byte{byte(typ)}, data...)...)
}
func ext32(typ int8, data []byte) []byte {
	return append(binary.BigEndian.AppendUint32([]byte{cExt32}, uint32(len(data))), append([]byte{byte(typ)}, data...)...)
}

// catalogue is one value of every msgpack code family, with edge values.
func catalogue() [][]byte {
	many := make([][]byte, 20)
	for i := range many {
		many[i] = fixstr(fmt.Sprintf("t%d", i))
	}
	return [][]byte{
		fixint(0), fixint(1), fixint(127), fixint(-1), fixint(-32),
		u8(0), u8(200), u8(255), u16(0xbeef), u32(0xdeadbeef), u64(1), u64(0xfedcba9876543210), u64(math.MaxUint64),
		i8(-128), i8(5), i16(-30000), i16(300), i32(-2_000_000_000), i32(70000), i64(math.MinInt64), i64(-1), i64(1 << 40),
		f32(1.5), f32(float32(math.Copysign(0, -1))), f32bits(0x7fc00001), f32bits(0x7f800001), f32(float32(math.Inf(-1))), f32(16777217),
		f64(3.25), f64(1e300), f64bits(0x7ff8000000000001), f64bits(0x7ff0000000000001), f64(math.Inf(1)), f64(math.Copysign(0, -1)),
		mnil, mtrue, mfalse,
		fixstr(""), fixstr("hi"), str8(""), str8("str8"), str16("str16"), str32("str32"), str8(string(make([]byte, 200))),
		bin8(""), bin8("bytes"), bin16("bin16"), bin32("bin32\x00\xff"),
		arr(), arr(fixstr("a"), fixstr("b")), arr(fixstr("a"), mnil), arr(fixstr("a"), bin8("b"), str16("c")),
		arr(fixint(1), fixint(2)), arr(fixstr("a"), fixint(2)), arr16(fixstr("x"), str8("y"), fixstr("z")),
		arr32(fixstr("p"), fixstr("q")), arr(arr(fixstr("n"))), arr(many[:15]...), arr16(many...), arr(fmap()),
		fmap(), fmap(fixstr("a"), fixint(1)), fmap(fixstr("a"), fmap(fixstr("b"), arr(mnil, mtrue))),
		map16(fixstr("a"), mnil), map32(fixstr("a"), mnil, mnil, fixint(3)), fmap(fixstr("n"), mnil, fixstr("tags"), arr()),
		fixext(1, []byte{1}), fixext(2, []byte{1, 2}), fixext(-1, []byte{0, 0, 0, 1}), fixext(-1, make([]byte, 8)),
		fixext(5, make([]byte, 16)), ext8(3, []byte{1, 2, 3}), ext8(-1, make([]byte, 12)), ext16(4, []byte{9}), ext32(7, nil),
		{0xc1},
	}
}

// ---- dst construction ----

// fillMode says how newDst pre-populates a destination.
type fillMode int

const (
	zeroDst  fillMode = iota // the zero value
	roomyDst                 // every field set, slices with spare capacity
	tightDst                 // every field set, slices of capacity 1
)

// newDst returns a pointer to a new value of type t populated as mode says.
func newDst(t reflect.Type, mode fillMode) any {
	v := reflect.New(t)
	if mode != zeroDst {
		fill(v.Elem(), mode)
	}
	return v.Interface()
}

// settable returns v without reflect's read-only flag, so unexported
// fields can be set and read too.
func settable(v reflect.Value) reflect.Value {
	return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
}

// oldZone is the location of every pre-filled time.Time, one pointer for
// all destinations so that untouched times compare equal.
var oldZone = time.FixedZone("old", 3600)

func fill(v reflect.Value, mode fillMode) {
	v = settable(v)
	if v.Type() == reflect.TypeFor[time.Time]() {
		v.Set(reflect.ValueOf(time.Date(2001, 2, 3, 4, 5, 6, 7, oldZone)))
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), mode)
		v.Set(p)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		if v.Type().Key().Kind() == reflect.String {
			for _, k := range []string{"old", "k"} {
				e := reflect.New(v.Type().Elem()).Elem()
				fill(e, mode)
				m.SetMapIndex(reflect.ValueOf(k).Convert(v.Type().Key()), e)
			}
		}
		v.Set(m)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			fill(v.Field(i), mode)
		}
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(-77)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		v.SetUint(88)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(9.5)
	case reflect.String:
		v.SetString("old")
	case reflect.Slice:
		c := 8
		if mode == tightDst {
			c = 1
		}
		s := reflect.MakeSlice(v.Type(), c, c)
		for i := 0; i < c; i++ {
			fill(s.Index(i), mode)
		}
		v.Set(s.Slice(0, min(2, c)))
	}
}

// ---- comparison ----

// slicePtrs records the backing array of every slice, the pointee of
// every pointer and every map reachable in v (through struct fields and
// pointers).
func slicePtrs(v reflect.Value, path string, out map[string]uintptr) {
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			slicePtrs(v.Field(i), path+"."+v.Type().Field(i).Name, out)
		}
	case reflect.Slice, reflect.Map:
		out[path] = v.Pointer()
	case reflect.Pointer:
		out[path] = v.Pointer()
		if !v.IsNil() && v.Type() != reflect.TypeFor[*time.Location]() {
			slicePtrs(v.Elem(), path+"*", out)
		}
	}
}

// sameState reports how a and b (addressable values of one type) differ,
// or "" when they are identical: values (floats by their bits), slice
// nil-ness, length, capacity, the elements up to capacity, and whether each
// slice still uses the backing array it started with (initA, initB).
func sameState(a, b reflect.Value, path string, initA, initB map[string]uintptr) string {
	a, b = settable(a), settable(b)
	if a.Type() == reflect.TypeFor[time.Time]() {
		// Exact: wall clock, monotonic/ext word and location pointer.
		if ta, tb := a.Interface().(time.Time), b.Interface().(time.Time); ta != tb {
			return fmt.Sprintf("%s: time %v vs %v", path, ta, tb)
		}
		return ""
	}
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() != b.IsNil() {
			return fmt.Sprintf("%s: nil %v vs %v", path, a.IsNil(), b.IsNil())
		}
		if ra, rb := a.Pointer() == initA[path], b.Pointer() == initB[path]; ra != rb {
			return fmt.Sprintf("%s: keeps its starting pointee %v vs %v", path, ra, rb)
		}
		if a.IsNil() {
			return ""
		}
		return sameState(a.Elem(), b.Elem(), path+"*", initA, initB)
	case reflect.Map:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return fmt.Sprintf("%s: nil %v/%v len %d/%d", path, a.IsNil(), b.IsNil(), a.Len(), b.Len())
		}
		if ra, rb := a.Pointer() == initA[path], b.Pointer() == initB[path]; ra != rb {
			return fmt.Sprintf("%s: keeps its starting map %v vs %v", path, ra, rb)
		}
		for it := a.MapRange(); it.Next(); {
			vb := b.MapIndex(it.Key())
			if !vb.IsValid() {
				return fmt.Sprintf("%s: key %v missing", path, it.Key())
			}
			ea, eb := reflect.New(a.Type().Elem()).Elem(), reflect.New(a.Type().Elem()).Elem()
			ea.Set(it.Value())
			eb.Set(vb)
			if d := sameState(ea, eb, fmt.Sprintf("%s[%v]", path, it.Key()), nil, nil); d != "" {
				return d
			}
		}
		return ""
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			if d := sameState(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name, initA, initB); d != "" {
				return d
			}
		}
		return ""
	case reflect.Float32:
		x, y := *(*uint32)(unsafe.Pointer(a.UnsafeAddr())), *(*uint32)(unsafe.Pointer(b.UnsafeAddr()))
		if x != y {
			return fmt.Sprintf("%s: float32 bits %#x vs %#x", path, x, y)
		}
		return ""
	case reflect.Float64:
		x, y := *(*uint64)(unsafe.Pointer(a.UnsafeAddr())), *(*uint64)(unsafe.Pointer(b.UnsafeAddr()))
		if x != y {
			return fmt.Sprintf("%s: float64 bits %#x vs %#x", path, x, y)
		}
		return ""
	case reflect.Interface:
		if a.IsNil() || b.IsNil() || a.Elem().Type() != b.Elem().Type() {
			if a.IsNil() != b.IsNil() || (!a.IsNil() && a.Elem().Type() != b.Elem().Type()) {
				return fmt.Sprintf("%s: interface holds %v vs %v", path, a.Elem(), b.Elem())
			}
			return ""
		}
		ea, eb := reflect.New(a.Elem().Type()).Elem(), reflect.New(b.Elem().Type()).Elem()
		ea.Set(a.Elem())
		eb.Set(b.Elem())
		return sameState(ea, eb, path+"(iface)", initA, initB)
	case reflect.Slice:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() || a.Cap() != b.Cap() {
			return fmt.Sprintf("%s: nil %v/%v len %d/%d cap %d/%d", path, a.IsNil(), b.IsNil(), a.Len(), b.Len(), a.Cap(), b.Cap())
		}
		if ra, rb := a.Pointer() == initA[path], b.Pointer() == initB[path]; ra != rb {
			return fmt.Sprintf("%s: reuses its starting array %v vs %v", path, ra, rb)
		}
		fa, fb := a.Slice(0, a.Cap()), b.Slice(0, b.Cap())
		for i := 0; i < fa.Len(); i++ {
			if d := sameState(fa.Index(i), fb.Index(i), fmt.Sprintf("%s[%d]", path, i), nil, nil); d != "" {
				return d
			}
		}
		return ""
	}
	if !reflect.DeepEqual(a.Interface(), b.Interface()) {
		return fmt.Sprintf("%s: %#v vs %#v", path, a.Interface(), b.Interface())
	}
	return ""
}

// unmarshalOrPanic runs msgpack.Unmarshal, turning a panic (msgpack has
// no decoder for some kinds, uintptr among them) into an error.
func unmarshalOrPanic(data []byte, dst any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return msgpack.Unmarshal(data, dst)
}

// marshalOrPanic runs msgpack.Marshal, turning a panic into an error.
func marshalOrPanic(enc *msgpack.Encoder, v any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return enc.Encode(v)
}

// outcome is what one differential run observed.
type outcome struct {
	fast bool // Decode reported true
}

// differential decodes data into two identical destinations of type t,
// one with msgpack.Unmarshal alone and one with Decode followed, when it
// reports false, by msgpack.Unmarshal, and fails t if the final states or
// the error-or-nil outcomes differ.
func differential(tb testing.TB, typ reflect.Type, mode fillMode, data []byte) outcome {
	tb.Helper()
	a, b := newDst(typ, mode), newDst(typ, mode)
	av, bv := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	initA, initB := map[string]uintptr{}, map[string]uintptr{}
	slicePtrs(av, "", initA)
	slicePtrs(bv, "", initB)

	errA := unmarshalOrPanic(data, a)
	fast := Decode(data, b)
	var errB error
	if !fast {
		errB = unmarshalOrPanic(data, b)
	}
	switch {
	case fast && errA != nil:
		tb.Fatalf("%v mode %d data %x: Decode reported true, Unmarshal fails: %v", typ, mode, data, errA)
	case (errA == nil) != (errB == nil) || (errA != nil && errA.Error() != errB.Error()):
		tb.Fatalf("%v mode %d data %x: Unmarshal alone: %v; after Decode: %v", typ, mode, data, errA, errB)
	}
	if d := sameState(av, bv, "", initA, initB); d != "" {
		tb.Fatalf("%v mode %d data %x (fast %v): states differ at %s", typ, mode, data, fast, d)
	}
	return outcome{fast: fast}
}

// keysOf returns the msgpack keys of the encodable fields of t, read from
// msgpack's own encoding of a value with every field set, so the test does
// not trust the plan.
func keysOf(t reflect.Type) []string {
	var buf bytes.Buffer
	if marshalOrPanic(msgpack.NewEncoder(&buf), newDst(t, roomyDst)) != nil {
		return nil
	}
	raw := buf.Bytes()
	m := map[string]any{}
	if msgpack.Unmarshal(raw, &m) != nil {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}
