package structdec

import (
	"reflect"
	"testing"

	"github.com/cachekit-io/cachekit-go/internal/fixture"
)

// TestTruncationsAndBitFlips decodes every prefix and every single-bit
// flip of a few encoded values.
func TestTruncationsAndBitFlips(t *testing.T) {
	type target struct {
		typ reflect.Type
		doc []byte
	}
	outer := newDst(reflect.TypeFor[Outer](), roomyDst)
	targets := []target{
		{reflect.TypeFor[Record](), encodeCompact(t, sampleRecord())},
		{reflect.TypeFor[Record](), encodings(t, sampleRecord())[0]},
		{reflect.TypeFor[Outer](), encodeCompact(t, outer)},
		{reflect.TypeFor[Named](), encodeCompact(t, newDst(reflect.TypeFor[Named](), roomyDst))},
		{reflect.TypeFor[Ints](), encodeCompact(t, newDst(reflect.TypeFor[Ints](), roomyDst))},
		{reflect.TypeFor[Member](), encodeCompact(t, fixture.NewMember(0))},
		{reflect.TypeFor[Ptrs](), encodeCompact(t, newDst(reflect.TypeFor[Ptrs](), tightDst))},
	}
	for _, tg := range targets {
		fast := 0
		for n := 0; n <= len(tg.doc); n++ {
			for _, mode := range modes {
				if differential(t, tg.typ, mode, tg.doc[:n]).fast {
					fast++
				}
			}
		}
		if fast != len(modes) {
			// Only the whole document (or one ending in the last value's
			// first bytes, which cannot happen for these) decodes.
			t.Errorf("%v: %d prefixes decoded, want only the complete one in each mode", tg.typ, fast)
		}
		flipped := make([]byte, len(tg.doc))
		for bit := 0; bit < 8*len(tg.doc); bit++ {
			copy(flipped, tg.doc)
			flipped[bit/8] ^= 1 << (bit % 8)
			for _, mode := range modes {
				differential(t, tg.typ, mode, flipped)
			}
		}
	}
}

// TestUnexportedUntouched checks that unexported fields keep their values,
// as msgpack ignores them.
func TestUnexportedUntouched(t *testing.T) {
	one := 1
	tg := Tagged{unexp: "u", unexpTag: 2, unexpOdd: &one}
	doc := fmap(fixstr("unexp"), fixstr("x"), fixstr("unexp_tag"), fixint(5), fixstr("weird"), fixint(6), fixstr("r"), fixstr("ok"))
	if !Decode(doc, &tg) {
		t.Fatal("Decode reported false for Tagged")
	}
	if tg.unexp != "u" || tg.unexpTag != 2 || tg.unexpOdd != &one || tg.Renamed != "ok" {
		t.Fatalf("Decode = %+v", tg)
	}
	h := Hidden{a: 1, b: "b"}
	if !Decode(fmap(fixstr("a"), fixint(5), fixstr("b"), fixstr("x")), &h) || h != (Hidden{a: 1, b: "b"}) {
		t.Fatalf("Decode = %+v", h)
	}
	// withAsArray's marker field is what makes it ineligible.
	if _ = (withAsArray{})._msgpack; Decode(fmap(), &withAsArray{}) {
		t.Fatal("Decode reported true for a struct with a _msgpack field")
	}
}

// TestSkipConsumesExactlyOneValue checks skip against the length of every
// catalogue value (0xc1 aside): it must stop exactly at the value's end,
// whatever follows, and fail on every truncation.
func TestSkipConsumesExactlyOneValue(t *testing.T) {
	for _, v := range catalogue() {
		if v[0] == 0xc1 {
			r := reader{b: v}
			if r.skip(0) {
				t.Errorf("skip accepted the never-used code 0xc1")
			}
			continue
		}
		for _, tail := range [][]byte{nil, {0x01}, {0xc1, 0xc1}} {
			r := reader{b: cat(v, tail)}
			if !r.skip(0) || r.i != len(v) {
				t.Errorf("skip(%x + %x): ok=%v at %d, want true at %d", v, tail, r.i != 0, r.i, len(v))
			}
		}
		for n := 0; n < len(v); n++ {
			r := reader{b: v[:n]}
			if r.skip(0) {
				t.Errorf("skip accepted the truncation %x of %x", v[:n], v)
			}
		}
	}
}

// TestUnknownKeysStayFast checks that unknown keys holding any catalogue
// value (0xc1 aside) are skipped without leaving the fast path, and that the
// fields around them still decode.
func TestUnknownKeysStayFast(t *testing.T) {
	for _, v := range catalogue() {
		if v[0] == 0xc1 {
			continue
		}
		doc := fmap(fixstr("id"), fixint(1), fixstr("zz"), v, fixstr("name"), fixstr("n"), fixstr("yy"), arr(v, v), fixstr("bio"), fixstr("b"))
		var got Record
		if !Decode(doc, &got) {
			t.Errorf("Decode reported false with unknown value %x", v)
			continue
		}
		if !reflect.DeepEqual(got, Record{ID: 1, Name: "n", Bio: "b"}) {
			t.Errorf("unknown value %x: Decode = %+v", v, got)
		}
		for _, mode := range modes {
			differential(t, reflect.TypeFor[Record](), mode, doc)
		}
	}
}

// TestBuildPlanRejects checks the type analysis on its own, without the
// probe behind it: every ineligible type but the registered one (which
// only the probe can see) gets no plan.
func TestBuildPlanRejects(t *testing.T) {
	for _, typ := range ineligible {
		if typ == reflect.TypeFor[withRegistered]() || typ == reflect.TypeFor[withRegEmbed]() {
			if buildPlan(typ) == nil {
				t.Errorf("%v: the type analysis should not see msgpack.Register", typ)
			}
			continue
		}
		if typ.Kind() == reflect.Struct && buildPlan(typ) != nil {
			t.Errorf("%v: buildPlan accepted it", typ)
		}
	}
}

// TestLookupMatchesReflect guards the interface layout lookup relies on:
// the data word it returns must be the pointer reflect sees, and the plan
// must be the one planFor gives for reflect's type, across many types
// (enough to share front slots).
func TestLookupMatchesReflect(t *testing.T) {
	var dsts []any
	for _, typ := range allTypes() {
		dsts = append(dsts, newDst(typ, zeroDst))
	}
	var n int
	dsts = append(dsts, &n, Record{}, []string{}, map[string]int{}, new(*Record))
	for round := 0; round < 3; round++ {
		for _, dst := range dsts {
			p, ptr := lookup(dst)
			if want := planFor(reflect.TypeOf(dst)); p != want {
				t.Fatalf("%T: lookup's plan %p, planFor's %p", dst, p, want)
			}
			if v := reflect.ValueOf(dst); v.Kind() == reflect.Pointer && ptr != v.UnsafePointer() {
				t.Fatalf("%T: lookup's pointer %p, reflect's %p", dst, ptr, v.UnsafePointer())
			}
		}
	}
	if p, ptr := lookup(nil); p != nil || ptr != nil {
		t.Fatal("lookup(nil) found something")
	}
}
