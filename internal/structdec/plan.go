package structdec

import (
	"encoding/binary"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"
)

// kind says how one field is decoded and stored.
type kind uint8

const (
	kBool kind = iota + 1
	kInt
	kInt8
	kInt16
	kInt32
	kInt64
	kUint
	kUint8
	kUint16
	kUint32
	kUint64
	kFloat32
	kFloat64
	kString
	kBytes   // a slice whose element kind is uint8
	kStrings // a slice whose element type is exactly string
	kStruct  // a nested struct held by value
	kTime    // time.Time, from msgpack's timestamp extension (-1)
	kPtr     // a pointer to a value of another kind but kPtr (elem)
	kSlice   // a slice of a scalar or named-string element (elem)
	kMap     // a map from a string kind to a scalar or string (elem)
)

// field is one decodable struct field: its msgpack key, its offset in the
// struct, and how to decode it.
type field struct {
	name string
	word uint64 // name's bytes little-endian, when it is at most 8 long
	off  uintptr
	kind kind
	typ  reflect.Type // the field's type (to zero a nested struct, allocate a pointee)
	sub  *plan        // the nested struct's plan, for kStruct
	elem *field       // the pointee (kPtr), element (kSlice) or map value (kMap), at offset 0

	// embed marks the key of an embedded struct as a whole (msgpack
	// accepts it beside the inlined fields); such fields are not inlined
	// into an enclosing struct's plan.
	embed bool
	// roNil marks an unexported embedded struct's key: msgpack panics
	// zeroing it on nil (reflect refuses to set it), so nil is refused.
	roNil bool
}

// plan is the decoding recipe for one struct type.
type plan struct {
	typ    reflect.Type
	fields []field
	byName map[string]int // index into fields, for structs with many fields
}

// mapLookupMin is the field count from which find uses byName instead of a
// linear scan.
const mapLookupMin = 12

// find returns the index of the field whose key is key, or -1. Encoders
// write fields in declaration order, so the scan starts at *hint (the field
// after the previous match) and wraps around. Keys of up to 8 bytes, the
// common case, are compared as one word.
func (p *plan) find(key []byte, hint *int) int {
	fs := p.fields
	h := *hint
	if len(key) <= 8 {
		w := loadWord(key)
		for j := 0; j < len(fs); j++ {
			i := h + j
			if i >= len(fs) {
				i -= len(fs)
			}
			if fs[i].word == w && len(fs[i].name) == len(key) {
				*hint = i + 1
				return i
			}
		}
		return -1
	}
	if p.byName != nil {
		i, ok := p.byName[string(key)]
		if !ok {
			return -1
		}
		*hint = i + 1
		return i
	}
	for j := 0; j < len(fs); j++ {
		i := h + j
		if i >= len(fs) {
			i -= len(fs)
		}
		if fs[i].name == string(key) {
			*hint = i + 1
			return i
		}
	}
	return -1
}

// loadWord packs a key of at most 8 bytes into a word, little-endian, the
// unused high bytes zero. It reads 8 bytes at once when the key's backing
// array allows it.
func loadWord(key []byte) uint64 {
	n := uint(len(key))
	if cap(key) >= 8 {
		return binary.LittleEndian.Uint64(key[:8]) & (1<<(8*n) - 1)
	}
	var w uint64
	for i, c := range key {
		w |= uint64(c) << (8 * i)
	}
	return w
}

// cache maps a destination pointer type to its *plan, or to a nil *plan when
// the type is ineligible.
var cache sync.Map

// cacheEntry is one slot of the direct-mapped front of cache.
type cacheEntry struct {
	typ unsafe.Pointer // the runtime type word of a Decode destination
	p   *plan
}

// front is a small direct-mapped cache in front of cache, indexed by the
// type word, so that the steady state costs one atomic load and a compare.
// Slots are written only on a miss.
var front [64]atomic.Pointer[cacheEntry]

// eface is the layout of an empty interface: its type word and data word.
type eface struct {
	typ  unsafe.Pointer
	data unsafe.Pointer
}

// lookup returns the plan for dst's dynamic type, nil when Decode must
// leave it to msgpack, and the data word of dst (the pointer itself when dst
// holds a pointer, the only case with a plan).
func lookup(dst any) (*plan, unsafe.Pointer) {
	e := (*eface)(unsafe.Pointer(&dst))
	if e.typ == nil {
		return nil, nil
	}
	slot := &front[(uintptr(e.typ)>>4)&(uintptr(len(front))-1)]
	if c := slot.Load(); c != nil && c.typ == e.typ {
		return c.p, e.data
	}
	p := planFor(reflect.TypeOf(dst))
	slot.Store(&cacheEntry{typ: e.typ, p: p})
	return p, e.data
}

// planFor returns the plan for the destination type pt (as passed to
// Decode), or nil when Decode must leave pt to msgpack.
func planFor(pt reflect.Type) *plan {
	if v, ok := cache.Load(pt); ok {
		return v.(*plan)
	}
	var p *plan
	if pt.Kind() == reflect.Pointer && pt.Elem().Kind() == reflect.Struct {
		p = buildPlan(pt.Elem())
		if p != nil && !probe(p) {
			p = nil
		}
	}
	v, _ := cache.LoadOrStore(pt, p)
	return v.(*plan)
}
