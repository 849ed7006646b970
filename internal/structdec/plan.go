package structdec

import (
	"encoding"
	"encoding/binary"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/vmihailenco/msgpack/v5"
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
)

// field is one decodable struct field: its msgpack key, its offset in the
// struct, and how to decode it.
type field struct {
	name string
	word uint64 // name's bytes little-endian, when it is at most 8 long
	off  uintptr
	kind kind
	typ  reflect.Type // the field's type, used to zero a nested struct
	sub  *plan        // the nested struct's plan, for kStruct
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

// Interfaces through which msgpack hands a value to the type's own code. A
// type implementing any of them, itself or through its pointer, is
// ineligible.
var decoderIfaces = []reflect.Type{
	reflect.TypeFor[msgpack.CustomDecoder](),
	reflect.TypeFor[msgpack.Unmarshaler](),
	reflect.TypeFor[encoding.BinaryUnmarshaler](),
	reflect.TypeFor[encoding.TextUnmarshaler](),
}

var stringType = reflect.TypeFor[string]()

// hasDecoderMethod reports whether msgpack would decode t, or t through its
// pointer, with a method of t's own.
func hasDecoderMethod(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	for _, it := range decoderIfaces {
		if t.Implements(it) || pt.Implements(it) {
			return true
		}
	}
	return false
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

// buildPlan analyses the struct type t, or returns nil when t or any field
// type inside it is ineligible.
func buildPlan(t reflect.Type) *plan {
	if hasDecoderMethod(t) {
		return nil
	}
	p := &plan{typ: t}
	seen := make(map[string]bool, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if sf.Anonymous || sf.Name == "_msgpack" {
			return nil
		}
		if !sf.IsExported() {
			continue // msgpack ignores unexported fields, tag and all
		}
		tag, ok := parseTag(sf.Tag.Get("msgpack"))
		if !ok {
			return nil
		}
		if tag.skip {
			continue
		}
		f := field{name: tag.name, off: sf.Offset, typ: sf.Type}
		if f.name == "" {
			f.name = sf.Name
		}
		if len(f.name) <= 8 {
			f.word = loadWord([]byte(f.name))
		}
		if seen[f.name] {
			return nil
		}
		seen[f.name] = true
		if f.kind, f.sub = fieldKind(sf.Type); f.kind == 0 {
			return nil
		}
		p.fields = append(p.fields, f)
	}
	if len(p.fields) >= mapLookupMin {
		p.byName = make(map[string]int, len(p.fields))
		for i, f := range p.fields {
			p.byName[f.name] = i
		}
	}
	return p
}

// fieldKind classifies a field type, returning 0 when it is ineligible and
// the nested plan for a struct.
func fieldKind(t reflect.Type) (kind, *plan) {
	if hasDecoderMethod(t) {
		return 0, nil
	}
	switch t.Kind() {
	case reflect.Bool:
		return kBool, nil
	case reflect.Int:
		return kInt, nil
	case reflect.Int8:
		return kInt8, nil
	case reflect.Int16:
		return kInt16, nil
	case reflect.Int32:
		return kInt32, nil
	case reflect.Int64:
		return kInt64, nil
	case reflect.Uint:
		return kUint, nil
	case reflect.Uint8:
		return kUint8, nil
	case reflect.Uint16:
		return kUint16, nil
	case reflect.Uint32:
		return kUint32, nil
	case reflect.Uint64:
		return kUint64, nil
	case reflect.Float32:
		return kFloat32, nil
	case reflect.Float64:
		return kFloat64, nil
	case reflect.String:
		return kString, nil
	case reflect.Slice:
		elem := t.Elem()
		if elem.Kind() == reflect.Uint8 && !hasDecoderMethod(elem) {
			return kBytes, nil
		}
		if elem == stringType {
			return kStrings, nil
		}
	case reflect.Struct:
		if sub := buildPlan(t); sub != nil {
			return kStruct, sub
		}
	}
	return 0, nil
}
