package structdec

import (
	"encoding"
	"reflect"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// Interfaces through which msgpack hands a value to the type's own code. A
// type implementing any of them, itself or through its pointer, is
// ineligible (time.Time aside: msgpack's own timestamp extension decoder
// takes precedence over its methods, see fieldKind).
var decoderIfaces = []reflect.Type{
	reflect.TypeFor[msgpack.CustomDecoder](),
	reflect.TypeFor[msgpack.Unmarshaler](),
	reflect.TypeFor[encoding.BinaryUnmarshaler](),
	reflect.TypeFor[encoding.TextUnmarshaler](),
}

var (
	stringType = reflect.TypeFor[string]()
	timeType   = reflect.TypeFor[time.Time]()
)

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

// buildPlan analyses the struct type t, or returns nil when t or any field
// type inside it is ineligible.
//
// An embedded struct held by value is inlined as msgpack inlines it: its
// fields (and those it inlines in turn) become keys of t, and its own name
// (the tag's name, else the type's name) is one more key, decoding the
// embedded struct as a whole. msgpack inlines such a field unless a name
// it brings is already taken; since any two fields with the same key make
// t ineligible here, every embedded struct of an eligible t is inlined
// (but for one msgpack.Register gave a decoder, which msgpack does not
// inline: that is the probe's to notice). Embedded pointers, embedded
// non-structs and an embedded time.Time are ineligible.
func buildPlan(t reflect.Type) *plan {
	if hasDecoderMethod(t) {
		return nil
	}
	p := &plan{typ: t}
	seen := make(map[string]bool, t.NumField())
	add := func(f field) bool {
		if seen[f.name] {
			return false
		}
		seen[f.name] = true
		if len(f.name) <= 8 {
			f.word = loadWord([]byte(f.name))
		}
		p.fields = append(p.fields, f)
		return true
	}
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if sf.Name == "_msgpack" {
			return nil
		}
		if !sf.IsExported() && !sf.Anonymous {
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
		if sf.Anonymous {
			if sf.Type.Kind() != reflect.Struct || sf.Type == timeType {
				return nil
			}
			sub := buildPlan(sf.Type)
			if sub == nil {
				return nil
			}
			f.kind, f.sub, f.embed, f.roNil = kStruct, sub, true, !sf.IsExported()
			if !add(f) {
				return nil
			}
			for _, g := range sub.fields {
				if g.embed {
					continue // msgpack lists only inlined fields, not their embeds' keys
				}
				g.off += sf.Offset
				if !add(g) {
					return nil
				}
			}
			continue
		}
		if f.kind, f.sub, f.elem = fieldKind(sf.Type); f.kind == 0 {
			return nil
		}
		if !add(f) {
			return nil
		}
	}
	if len(p.fields) >= mapLookupMin {
		p.byName = make(map[string]int, len(p.fields))
		for i, f := range p.fields {
			p.byName[f.name] = i
		}
	}
	return p
}

// fieldKind classifies a field type, returning 0 when it is ineligible,
// the nested plan for a struct, and the element's description for a
// pointer, a slice of scalars or a map.
func fieldKind(t reflect.Type) (kind, *plan, *field) {
	if t == timeType {
		// msgpack registers its timestamp decoder for time.Time, which it
		// consults before time.Time's own UnmarshalBinary and friends.
		return kTime, nil, nil
	}
	if t.Kind() == reflect.Pointer {
		// msgpack's pointer decoder wraps the pointee's decoder; a method
		// set of *T is T's (checked by the recursion), and *time.Time's
		// methods yield to the timestamp decoder registered for time.Time.
		k, sub, elem := fieldKind(t.Elem())
		if k == 0 || k == kPtr {
			return 0, nil, nil
		}
		return kPtr, nil, &field{kind: k, typ: t.Elem(), sub: sub, elem: elem}
	}
	if hasDecoderMethod(t) {
		return 0, nil, nil
	}
	if k := scalarKind(t.Kind()); k != 0 {
		return k, nil, nil
	}
	switch t.Kind() {
	case reflect.Slice:
		elem := t.Elem()
		if elem.Kind() == reflect.Uint8 {
			if hasDecoderMethod(elem) {
				return 0, nil, nil
			}
			return kBytes, nil, nil
		}
		if elem == stringType {
			return kStrings, nil, nil
		}
		// msgpack's generic slice decoder: scalar elements, named strings.
		if k := scalarKind(elem.Kind()); k != 0 && !hasDecoderMethod(elem) {
			return kSlice, nil, &field{kind: k, typ: elem}
		}
	case reflect.Map:
		key, val := t.Key(), t.Elem()
		if key.Kind() != reflect.String || hasDecoderMethod(key) || hasDecoderMethod(val) {
			return 0, nil, nil
		}
		if k := scalarKind(val.Kind()); k != 0 {
			return kMap, nil, &field{kind: k, typ: val}
		}
	case reflect.Struct:
		if sub := buildPlan(t); sub != nil {
			return kStruct, sub, nil
		}
	}
	return 0, nil, nil
}

// scalarKind maps a reflect kind to the field kind decoding it, or 0 when
// it is not a scalar (bool, a sized or unsized int or uint, a float or a
// string).
func scalarKind(k reflect.Kind) kind {
	switch k {
	case reflect.Bool:
		return kBool
	case reflect.Int:
		return kInt
	case reflect.Int8:
		return kInt8
	case reflect.Int16:
		return kInt16
	case reflect.Int32:
		return kInt32
	case reflect.Int64:
		return kInt64
	case reflect.Uint:
		return kUint
	case reflect.Uint8:
		return kUint8
	case reflect.Uint16:
		return kUint16
	case reflect.Uint32:
		return kUint32
	case reflect.Uint64:
		return kUint64
	case reflect.Float32:
		return kFloat32
	case reflect.Float64:
		return kFloat64
	case reflect.String:
		return kString
	}
	return 0
}
