package structdec

import "unsafe"

// sliceField decodes a slice of scalars or named strings (a kSlice field
// whose element is elem) at ptr. The element's Go type has the layout of
// the type its kind names (a named int32 that of int32), so the slice is
// handled as a slice of that type.
func (r *reader) sliceField(elem *field, ptr unsafe.Pointer) bool {
	switch elem.kind {
	case kBool:
		return decodeSlice[bool](r, elem.kind, ptr)
	case kInt:
		return decodeSlice[int](r, elem.kind, ptr)
	case kInt8:
		return decodeSlice[int8](r, elem.kind, ptr)
	case kInt16:
		return decodeSlice[int16](r, elem.kind, ptr)
	case kInt32:
		return decodeSlice[int32](r, elem.kind, ptr)
	case kInt64:
		return decodeSlice[int64](r, elem.kind, ptr)
	case kUint:
		return decodeSlice[uint](r, elem.kind, ptr)
	case kUint16:
		return decodeSlice[uint16](r, elem.kind, ptr)
	case kUint32:
		return decodeSlice[uint32](r, elem.kind, ptr)
	case kUint64:
		return decodeSlice[uint64](r, elem.kind, ptr)
	case kFloat32:
		return decodeSlice[float32](r, elem.kind, ptr)
	case kFloat64:
		return decodeSlice[float64](r, elem.kind, ptr)
	case kString:
		return decodeSlice[string](r, elem.kind, ptr)
	}
	return false // uint8 elements are kBytes, never kSlice
}

// decodeSlice decodes an array (or nil) into the []T at ptr the way
// msgpack's generic slice decoder (decodeSliceValue) does: nil stores a nil
// slice; an empty array stores an empty non-nil slice when the slice is
// nil and truncates it otherwise; a slice with the capacity is resliced to
// the length, its backing array reused; a shorter one is extended over its
// full capacity and then grown by append, which reflect.AppendSlice in
// msgpack grows to the same capacity. The slice is stored before its
// elements are decoded, as msgpack stores it, each element decoded as a
// field of kind k.
func decodeSlice[T any](r *reader, k kind, ptr unsafe.Pointer) bool {
	dst := (*[]T)(ptr)
	n, isNil, ok := r.arrayHead()
	if !ok {
		return false
	}
	if isNil {
		*dst = nil
		return true
	}
	s := *dst
	switch {
	case n == 0 && s == nil:
		*dst = []T{}
		return true
	case cap(s) >= n:
		s = s[:n]
	default:
		s = s[:cap(s)]
		s = append(s, make([]T, n-len(s))...)
	}
	*dst = s
	for i := range s {
		if !r.scalar(k, unsafe.Pointer(&s[i])) {
			return false
		}
	}
	return true
}

// mapField decodes a map from a string kind to a scalar or string (a kMap
// field whose value is elem) at ptr. Key and value types have the layout
// (and, for keys, the hash and equality) of the types their kinds name, so
// the map is handled as a map[string] of that type.
func (r *reader) mapField(elem *field, ptr unsafe.Pointer) bool {
	switch elem.kind {
	case kBool:
		return decodeMap[bool](r, elem.kind, ptr)
	case kInt:
		return decodeMap[int](r, elem.kind, ptr)
	case kInt8:
		return decodeMap[int8](r, elem.kind, ptr)
	case kInt16:
		return decodeMap[int16](r, elem.kind, ptr)
	case kInt32:
		return decodeMap[int32](r, elem.kind, ptr)
	case kInt64:
		return decodeMap[int64](r, elem.kind, ptr)
	case kUint:
		return decodeMap[uint](r, elem.kind, ptr)
	case kUint8:
		return decodeMap[uint8](r, elem.kind, ptr)
	case kUint16:
		return decodeMap[uint16](r, elem.kind, ptr)
	case kUint32:
		return decodeMap[uint32](r, elem.kind, ptr)
	case kUint64:
		return decodeMap[uint64](r, elem.kind, ptr)
	case kFloat32:
		return decodeMap[float32](r, elem.kind, ptr)
	case kFloat64:
		return decodeMap[float64](r, elem.kind, ptr)
	case kString:
		return decodeMap[string](r, elem.kind, ptr)
	}
	return false
}

// decodeMap decodes a map (or nil) into the map[string]V at ptr the way
// msgpack's map decoders (decodeMapValue, decodeMapStringStringValue) do:
// nil stores a nil map; otherwise a nil map is replaced by a new one
// (empty for an empty map) and a non-nil map is added to, keeping the
// entries it had; each key is decoded as a string, each value into a
// fresh V as a field of kind k, and a repeated key keeps its last value.
// msgpack also takes an extension header before the map's length (it
// skips it); that, like every other code, is left to msgpack.
func decodeMap[V any](r *reader, k kind, ptr unsafe.Pointer) bool {
	dst := (*map[string]V)(ptr)
	c, ok := r.code()
	if !ok {
		return false
	}
	if c == cNil {
		*dst = nil
		return true
	}
	n, ok := r.mapLen(c)
	// Each pair takes at least two bytes.
	if !ok || n > r.remaining()/2 {
		return false
	}
	m := *dst
	if m == nil {
		m = make(map[string]V, n)
		*dst = m
	}
	for ; n > 0; n-- {
		key, ok := r.string()
		if !ok {
			return false
		}
		var v V
		if !r.scalar(k, unsafe.Pointer(&v)) {
			return false
		}
		m[key] = v
	}
	return true
}
