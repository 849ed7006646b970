package structdec

import (
	"encoding/binary"
	"math"
	"reflect"
	"time"
	"unsafe"
)

// sliceAllocLimit is msgpack's cap on the elements it preallocates for a
// []string; longer arrays are left to msgpack rather than matching the
// growth pattern that cap causes.
const sliceAllocLimit = 1_000_000

// Decode decodes the msgpack document data into dst when it can do so
// exactly as msgpack.Unmarshal(data, dst) would. It reports false when dst's
// type or data's shape is outside what it handles; the caller then runs
// msgpack.Unmarshal(data, dst), and any fields Decode already wrote are
// ones that call rewrites with the same values.
func Decode(data []byte, dst any) bool {
	p, base := lookup(dst)
	if p == nil || base == nil {
		return false
	}
	return decodePlan(p, data, base)
}

// decodePlan decodes data, which must start with a map, into the struct of
// type p.typ at base. Bytes after that map are ignored, as msgpack.Unmarshal
// ignores them.
func decodePlan(p *plan, data []byte, base unsafe.Pointer) bool {
	r := reader{b: data}
	c, ok := r.code()
	if !ok {
		return false
	}
	n, ok := r.mapLen(c)
	return ok && r.structBody(p, base, n)
}

// structBody decodes n key/value pairs into the struct at base. A key that
// names no field has its value skipped; a repeated key is decoded again, so
// the last one wins as in msgpack.
func (r *reader) structBody(p *plan, base unsafe.Pointer, n int) bool {
	// Each pair takes at least two bytes.
	if n > r.remaining()/2 {
		return false
	}
	fs := p.fields
	hint := 0
	for ; n > 0; n-- {
		i := r.nextField(fs, hint)
		if i >= 0 {
			hint = i + 1
		} else {
			key, ok := r.key()
			if !ok {
				return false
			}
			i = p.find(key, &hint)
		}
		if i < 0 {
			if !r.skip(0) {
				return false
			}
			continue
		}
		f := &fs[i]
		if !r.field(f, unsafe.Add(base, f.off)) {
			return false
		}
	}
	return true
}

// nextField is structBody's fast path: when the next key is a fixstr of at
// most 8 bytes equal to fs[hint]'s name (fields encoded in declaration
// order), it consumes the key and returns hint; otherwise it consumes
// nothing and returns -1.
func (r *reader) nextField(fs []field, hint int) int {
	if hint >= len(fs) || len(r.b)-r.i < 9 {
		return -1
	}
	f := &fs[hint]
	kn := int(r.b[r.i]) - 0xa0
	if kn != len(f.name) || kn > 8 {
		return -1
	}
	w := binary.LittleEndian.Uint64(r.b[r.i+1:]) & (1<<(8*uint(kn)) - 1)
	if w != f.word {
		return -1
	}
	r.i += 1 + kn
	return hint
}

// field decodes one value into the field f stored at ptr, accepting exactly
// the codes msgpack's decoder for f's kind accepts without error and storing
// what that decoder stores.
func (r *reader) field(f *field, ptr unsafe.Pointer) bool {
	switch f.kind {
	case kBytes:
		return r.bytesField((*[]byte)(ptr))
	case kStrings:
		return r.stringsField((*[]string)(ptr))
	case kStruct:
		return r.structField(f, ptr)
	case kTime:
		return r.timeField((*time.Time)(ptr))
	case kPtr:
		return r.pointerField(f, (*unsafe.Pointer)(ptr))
	case kSlice:
		return r.sliceField(f.elem, ptr)
	case kMap:
		return r.mapField(f.elem, ptr)
	}
	return r.scalar(f.kind, ptr)
}

// scalar decodes one value into the scalar of kind k (bool, an integer, a
// float or a string kind) at ptr, as msgpack's decoder for that kind does
// (reflect's SetInt, SetUint and SetFloat truncate to the value's width the
// same way the conversions below do). It does not retain ptr, so a caller's
// local variable stays on its stack.
func (r *reader) scalar(k kind, ptr unsafe.Pointer) bool {
	switch k {
	case kBool:
		c, ok := r.code()
		switch {
		case !ok:
			return false
		case c == cTrue:
			*(*bool)(ptr) = true
		case c == cFalse || c == cNil:
			*(*bool)(ptr) = false
		default:
			return false
		}
	case kInt, kInt8, kInt16, kInt32, kInt64, kUint, kUint8, kUint16, kUint32, kUint64:
		v, ok := r.int()
		if !ok {
			return false
		}
		storeInt(k, ptr, v)
	case kFloat32:
		c, ok := r.code()
		if !ok {
			return false
		}
		if c == cFloat {
			bits, ok := r.u32()
			if !ok {
				return false
			}
			// msgpack passes the value through float64 (reflect's
			// SetFloat), which quiets a signalling NaN; so does this.
			*(*float32)(ptr) = float32(float64(math.Float32frombits(uint32(bits))))
			return true
		}
		v, ok := r.intCode(c) // msgpack refuses a float64 here
		if !ok {
			return false
		}
		*(*float32)(ptr) = float32(v)
	case kFloat64:
		c, ok := r.code()
		if !ok {
			return false
		}
		switch c {
		case cDouble:
			bits, ok := r.u64()
			if !ok {
				return false
			}
			*(*float64)(ptr) = math.Float64frombits(bits)
		case cFloat:
			bits, ok := r.u32()
			if !ok {
				return false
			}
			*(*float64)(ptr) = float64(math.Float32frombits(uint32(bits)))
		default:
			v, ok := r.intCode(c)
			if !ok {
				return false
			}
			*(*float64)(ptr) = float64(v)
		}
	case kString:
		s, ok := r.string()
		if !ok {
			return false
		}
		*(*string)(ptr) = s
	default:
		return false
	}
	return true
}

// storeInt stores v at ptr truncated to the width of the integer kind k.
func storeInt(k kind, ptr unsafe.Pointer, v int64) {
	switch k {
	case kInt:
		*(*int)(ptr) = int(v)
	case kInt8:
		*(*int8)(ptr) = int8(v)
	case kInt16:
		*(*int16)(ptr) = int16(v)
	case kInt32:
		*(*int32)(ptr) = int32(v)
	case kInt64:
		*(*int64)(ptr) = v
	case kUint:
		*(*uint)(ptr) = uint(v)
	case kUint8:
		*(*uint8)(ptr) = uint8(v)
	case kUint16:
		*(*uint16)(ptr) = uint16(v)
	case kUint32:
		*(*uint32)(ptr) = uint32(v)
	case kUint64:
		*(*uint64)(ptr) = uint64(v)
	}
}

// bytesField decodes a str, bin or nil value into a byte slice the way
// msgpack's bytes decoding does: nil stores nil; otherwise the current
// slice is reused when its capacity suffices, a nil slice becomes a new one
// of exactly the length, and a short one is grown by append (so the
// capacity matches what msgpack's append produces).
func (r *reader) bytesField(dst *[]byte) bool {
	b, null, ok := r.str()
	if !ok {
		return false
	}
	if null {
		*dst = nil
		return true
	}
	n := len(b)
	cur := *dst
	var out []byte
	switch {
	case cur == nil:
		out = make([]byte, n)
	case n > cap(cur):
		out = append(cur, make([]byte, n-len(cur))...)
	default:
		out = cur[:n]
	}
	copy(out, b)
	*dst = out
	return true
}

// arrayHead reads an array's header: its length n, or isNil for msgpack's
// nil. ok is false for any other code, and for a length the rest of the
// data cannot hold (each element takes at least one byte) or past
// sliceAllocLimit.
func (r *reader) arrayHead() (n int, isNil, ok bool) {
	c, ok := r.code()
	if !ok {
		return 0, false, false
	}
	if c == cNil {
		return 0, true, true
	}
	n, ok = r.arrayLen(c)
	return n, false, ok && n <= r.remaining() && n <= sliceAllocLimit
}

// stringsField decodes an array of strings (or nil, which leaves the field
// alone) the way msgpack decodes a []string: the current backing array is
// reused when its capacity suffices, a nil slice becomes a new one of
// exactly the length, and a short one is grown by append over its full
// capacity.
func (r *reader) stringsField(dst *[]string) bool {
	n, isNil, ok := r.arrayHead()
	if !ok || isNil {
		return ok
	}
	cur := *dst
	var ss []string
	switch {
	case cur == nil:
		ss = make([]string, n)
	case cap(cur) >= n:
		ss = cur[:n]
	default:
		full := cur[:cap(cur)]
		ss = append(full, make([]string, n-len(full))...)
	}
	for i := range ss {
		s, ok := r.string()
		if !ok {
			return false
		}
		ss[i] = s
	}
	*dst = ss
	return true
}

// structField decodes a nested struct (or an embedded one, under its own
// key): a map is decoded field by field, nil zeroes the whole struct
// (unexported fields too, as reflect's Set does in msgpack) except under an
// unexported embedded struct's key, where msgpack panics and nil is left to
// it, and anything else (an array-encoded struct included) is left to
// msgpack.
func (r *reader) structField(f *field, ptr unsafe.Pointer) bool {
	c, ok := r.code()
	if !ok {
		return false
	}
	if c == cNil {
		if f.roNil {
			return false
		}
		reflect.NewAt(f.typ, ptr).Elem().SetZero()
		return true
	}
	n, ok := r.mapLen(c)
	return ok && r.structBody(f.sub, ptr, n)
}

// pointerField decodes into the pointer at dst as msgpack's pointer
// decoder does: nil stores a nil pointer; anything else is decoded into
// the current pointee, which is allocated (zero) and stored first when the
// pointer is nil. A non-nil pointer is written through, not replaced.
func (r *reader) pointerField(f *field, dst *unsafe.Pointer) bool {
	if r.i < len(r.b) && r.b[r.i] == cNil {
		r.i++
		*dst = nil
		return true
	}
	p := *dst
	if p == nil {
		p = reflect.New(f.elem.typ).UnsafePointer()
		*dst = p
	}
	return r.field(f.elem, p)
}
