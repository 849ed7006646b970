package structdec

import (
	"bytes"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

var modes = []fillMode{zeroDst, roomyDst, tightDst}

// allTypes is every test type, eligible first.
func allTypes() []reflect.Type { return append(append([]reflect.Type{}, eligible...), ineligible...) }

// sampleRecord is the bench fixture's kind of value (~100 bytes encoded).
func sampleRecord() Record {
	return Record{
		ID:     1234567,
		Name:   "Ada Lovelace",
		Email:  "ada@example.com",
		Active: true,
		Score:  98.25,
		Tags:   []string{"admin", "beta"},
		Bio:    "Mathematician and writer, first programmer.",
	}
}

// encodeCompact encodes v as cachekit does (shortest integers).
func encodeCompact(tb testing.TB, v any) []byte {
	tb.Helper()
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.UseCompactInts(true)
	if err := enc.Encode(v); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// encodings returns v encoded by msgpack's encoder with several options.
func encodings(tb testing.TB, v any) [][]byte {
	tb.Helper()
	var out [][]byte
	for _, opt := range []func(*msgpack.Encoder){
		func(*msgpack.Encoder) {},
		func(e *msgpack.Encoder) { e.UseCompactInts(true) },
		func(e *msgpack.Encoder) { e.UseCompactInts(true); e.UseCompactFloats(true) },
		func(e *msgpack.Encoder) { e.SetCustomStructTag("json") },
		func(e *msgpack.Encoder) { e.UseArrayEncodedStructs(true) },
	} {
		var buf bytes.Buffer
		enc := msgpack.NewEncoder(&buf)
		opt(enc)
		if err := marshalOrPanic(enc, v); err != nil {
			continue // ineligible types may not encode
		}
		out = append(out, buf.Bytes())
	}
	return out
}

// recordDocs returns encoded Records of varied content.
func recordDocs(tb testing.TB) [][]byte {
	tb.Helper()
	var docs [][]byte
	long := strings.Repeat("x", 300)
	huge := strings.Repeat("y", 70000)
	for _, r := range []Record{
		sampleRecord(),
		{},
		{ID: -1, Name: "é☃", Tags: []string{}, Score: math.Inf(-1)},
		{ID: math.MinInt64, Bio: long, Tags: []string{"", long, "a"}},
		{ID: math.MaxInt64, Email: huge, Score: math.Copysign(0, -1), Active: true},
		{ID: 1 << 33, Tags: strings.Fields("a b c d e f g h i j k l m n o p q")},
	} {
		docs = append(docs, encodings(tb, r)...)
	}
	return docs
}

// TestDifferentialCatalogue puts every catalogue value under every key of
// every test type (and under an unknown key), into zero and pre-populated
// destinations.
func TestDifferentialCatalogue(t *testing.T) {
	values := catalogue()
	for _, typ := range allTypes() {
		t.Run(typ.String(), func(t *testing.T) {
			keys := append(keysOf(typ), "unknown", "")
			fast := 0
			for _, mode := range modes {
				for _, k := range keys {
					for _, v := range values {
						if differential(t, typ, mode, fmap(fixstr(k), v)).fast {
							fast++
						}
					}
				}
			}
			checkFastCount(t, typ, fast)
		})
	}
}

// checkFastCount fails when an eligible type never took the fast path or
// an ineligible one did.
func checkFastCount(t *testing.T, typ reflect.Type, fast int) {
	t.Helper()
	isEligible := false
	for _, e := range eligible {
		isEligible = isEligible || e == typ
	}
	if isEligible && fast == 0 {
		t.Errorf("%v: Decode never reported true", typ)
	}
	if !isEligible && fast != 0 {
		t.Errorf("%v: ineligible, yet Decode reported true %d times", typ, fast)
	}
}

// TestDifferentialMarshaled decodes msgpack's own encodings of populated
// values of every test type, with several encoder options.
func TestDifferentialMarshaled(t *testing.T) {
	for _, typ := range allTypes() {
		t.Run(typ.String(), func(t *testing.T) {
			fast := 0
			var docs [][]byte
			docs = append(docs, encodings(t, newDst(typ, zeroDst))...)
			docs = append(docs, encodings(t, newDst(typ, roomyDst))...)
			docs = append(docs, encodings(t, newDst(typ, tightDst))...)
			if typ == reflect.TypeFor[Record]() {
				docs = append(docs, recordDocs(t)...)
			}
			for _, mode := range modes {
				for _, d := range docs {
					if differential(t, typ, mode, d).fast {
						fast++
					}
				}
			}
			checkFastCount(t, typ, fast)
		})
	}
}

// TestDifferentialShapes covers document shapes: top-level non-maps, map
// header widths, key encodings, duplicate keys, trailing bytes, nested
// structs given as nil or arrays, and deep unknown values.
func TestDifferentialShapes(t *testing.T) {
	deep := func(n int) []byte {
		return append(bytes.Repeat([]byte{0x91}, n), 0x01)
	}
	tags3 := arr(fixstr("a"), fixstr("b"), fixstr("c"))
	tags12 := arr(fixstr("1"), fixstr("2"), fixstr("3"), fixstr("4"), fixstr("5"), fixstr("6"), fixstr("7"), fixstr("8"), fixstr("9"), fixstr("10"), fixstr("11"), fixstr("12"))
	rec := encodeCompact(t, sampleRecord())
	docs := map[string][]byte{
		"empty input":       {},
		"nil":               mnil,
		"array":             arr(fixint(1), fixstr("x")),
		"empty array":       arr(),
		"int":               fixint(3),
		"string":            fixstr("id"),
		"bin":               bin8("x"),
		"ext":               fixext(1, []byte{1}),
		"unused code":       {0xc1},
		"empty fixmap":      fmap(),
		"empty map16":       map16(),
		"empty map32":       map32(),
		"map16":             map16(fixstr("id"), fixint(7), fixstr("name"), fixstr("n")),
		"map32":             map32(fixstr("id"), fixint(7), fixstr("name"), fixstr("n")),
		"trailing bytes":    append(append([]byte{}, rec...), 0xc1, 0x01),
		"trailing map":      append(append([]byte{}, rec...), rec...),
		"key str8":          fmap(str8("id"), fixint(9)),
		"key str16":         fmap(str16("name"), fixstr("s16")),
		"key str32":         fmap(str32("bio"), fixstr("s32")),
		"key bin8":          fmap(bin8("email"), fixstr("b8")),
		"key bin16":         fmap(bin16("tags"), arr(fixstr("b16"))),
		"key nil":           fmap(mnil, fixint(1), fixstr("id"), fixint(2)),
		"key empty":         fmap(fixstr(""), fixint(1)),
		"key int":           fmap(fixint(1), fixint(2)),
		"key array":         fmap(arr(), fixint(2)),
		"key case":          fmap(fixstr("ID"), fixint(2), fixstr("Id"), fixint(3)),
		"dup scalar":        fmap(fixstr("id"), fixint(1), fixstr("id"), fixint(2)),
		"dup tags grow":     fmap(fixstr("tags"), arr(fixstr("x")), fixstr("tags"), tags12),
		"dup tags shrink":   fmap(fixstr("tags"), tags12, fixstr("tags"), tags3),
		"dup tags nil":      fmap(fixstr("tags"), tags3, fixstr("tags"), mnil),
		"dup tags then bad": fmap(fixstr("tags"), tags3, fixstr("tags"), arr(fixstr("a"), fixint(1))),
		"tags then bad":     fmap(fixstr("tags"), tags12, fixstr("id"), fixstr("notint")),
		"count too big":     {0x83, 0xa2, 'i', 'd', 0x01},
		"map32 huge count":  {cMap32, 0xff, 0xff, 0xff, 0xff, 0xa2, 'i', 'd', 0x01},
		"tags huge count":   cat(fmap(fixstr("tags"), []byte{cArr32, 0x7f, 0xff, 0xff, 0xff}), fixstr("a")),
		"str huge len":      fmap(fixstr("name"), []byte{cStr32, 0x00, 0x10, 0x00, 0x01, 'a'}),
		"unknown deep 1000": fmap(fixstr("zz"), deep(1000)),
		"unknown deep 1100": fmap(fixstr("zz"), deep(1100)),
		"unknown then id":   fmap(fixstr("zz"), fmap(fixstr("id"), fixint(5)), fixstr("id"), fixint(6)),
		"unknown huge arr":  fmap(fixstr("zz"), []byte{cArr32, 0xff, 0xff, 0xff, 0xff, 1, 2}),
		"unknown huge map":  fmap(fixstr("zz"), []byte{cMap32, 0xff, 0xff, 0xff, 0xff, 1, 2}),
		"unknown huge ext":  fmap(fixstr("zz"), []byte{cExt32, 0x00, 0x10, 0x00, 0x01, 1, 2}),
		"unknown c1":        fmap(fixstr("zz"), []byte{0xc1}, fixstr("id"), fixint(1)),
		"nested nil":        fmap(fixstr("in"), mnil, fixstr("low"), mnil, fixstr("deep"), fmap(fixstr("d2"), mnil)),
		"nested array":      fmap(fixstr("in"), arr(fixint(1), arr(), mnil, mnil)),
		"nested empty arr":  fmap(fixstr("in"), arr()),
		"nested str":        fmap(fixstr("in"), fixstr("x")),
		"nested unknown":    fmap(fixstr("in"), fmap(fixstr("zz"), arr(fmap()), fixstr("a"), fixint(4)), fixstr("after"), fixint(5)),
		"nested dup":        fmap(fixstr("in"), fmap(fixstr("a"), fixint(1)), fixstr("in"), fmap(fixstr("tags"), tags3)),
		"nested deep":       fmap(fixstr("deep"), fmap(fixstr("d2"), fmap(fixstr("s"), tags12, fixstr("b"), mtrue), fixstr("n"), u16(0x1234))),
		"nested map16":      fmap(fixstr("deep"), map16(fixstr("n"), i8(-2))),
		"nested bad late":   fmap(fixstr("name"), fixstr("n"), fixstr("in"), fmap(fixstr("a"), fixint(1), fixstr("tags"), arr(fixint(1)))),
		"bytes reuse":       fmap(fixstr("b"), bin8("ab"), fixstr("b2"), str8("0123456789")),
		"bytes empty":       fmap(fixstr("b"), bin8(""), fixstr("b2"), fixstr("")),
		"bytes nil":         fmap(fixstr("b"), mnil, fixstr("b2"), mnil),
		"bytes dup":         fmap(fixstr("b"), bin8("abcdefghijkl"), fixstr("b"), bin8("x")),
	}
	for name, d := range docs {
		t.Run(name, func(t *testing.T) {
			for _, typ := range allTypes() {
				for _, mode := range modes {
					differential(t, typ, mode, d)
				}
			}
		})
	}
}

// TestDecodeRecordFastPath checks that the fixture takes the fast path and
// comes out right on its own terms, not only as msgpack's twin.
func TestDecodeRecordFastPath(t *testing.T) {
	want := sampleRecord()
	data := encodeCompact(t, want)
	var got Record
	if !Decode(data, &got) {
		t.Fatal("Decode reported false for the Record fixture: the fast path is dead")
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Decode = %+v, want %+v", got, want)
	}

	// A destination whose Tags has room keeps its backing array.
	backing := make([]string, 1, 4)
	got = Record{Tags: backing}
	if !Decode(data, &got) {
		t.Fatal("Decode reported false")
	}
	if &got.Tags[0] != &backing[:1][0] || !reflect.DeepEqual(got, want) {
		t.Fatalf("Tags not decoded into the existing array: %+v", got)
	}
}

// TestDecodeNested checks nested structs on their own terms.
func TestDecodeNested(t *testing.T) {
	want := Outer{
		Name: "o",
		In:   Inner{A: -4, Tags: []string{"x"}, Blob: []byte{1, 2}},
		Low:  innerLower{X: 0.5, Y: "y"},
		Deep: Deep1{D2: Deep2{S: []string{"s"}, B: true}, N: 200},
	}
	data, err := msgpack.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	got := Outer{In: Inner{hidden: 3}}
	if !Decode(data, &got) {
		t.Fatal("Decode reported false for Outer")
	}
	if got.In.hidden != 3 {
		t.Fatal("Decode touched an unexported field")
	}
	got.In.hidden = 0
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Decode = %+v, want %+v", got, want)
	}
	// nil for a nested struct zeroes all of it, unexported fields included.
	got.In.hidden = 3
	if !Decode(fmap(fixstr("in"), mnil), &got) || !reflect.DeepEqual(got.In, Inner{}) {
		t.Fatalf("nil did not zero In: %+v", got.In)
	}
}

// TestIneligible checks that Decode reports false, without writing, for
// every ineligible type and for destinations that are not struct pointers.
func TestIneligible(t *testing.T) {
	for _, typ := range ineligible {
		if planFor(reflect.PointerTo(typ)) != nil {
			t.Errorf("%v: got a plan", typ)
		}
		dst := newDst(typ, zeroDst)
		before := reflect.ValueOf(dst).Elem().Interface()
		for _, d := range append(encodings(t, newDst(typ, roomyDst)), fmap(), fmap(fixstr("zz"), fixint(1))) {
			if Decode(d, dst) {
				t.Errorf("%v: Decode reported true for %x", typ, d)
			}
		}
		if !reflect.DeepEqual(before, reflect.ValueOf(dst).Elem().Interface()) {
			t.Errorf("%v: Decode wrote into an ineligible destination", typ)
		}
	}
	data := encodeCompact(t, sampleRecord())
	var r Record
	pr := &r
	var n int
	for name, dst := range map[string]any{
		"nil":           nil,
		"nil pointer":   (*Record)(nil),
		"struct value":  r,
		"double ptr":    &pr,
		"int pointer":   &n,
		"slice pointer": &[]string{},
		"map pointer":   &map[string]any{},
	} {
		if Decode(data, dst) {
			t.Errorf("%s: Decode reported true", name)
		}
	}
}

// TestEligible checks that each eligible type gets a plan with the keys
// msgpack itself uses.
func TestEligible(t *testing.T) {
	for _, typ := range eligible {
		p := planFor(reflect.PointerTo(typ))
		if p == nil {
			t.Errorf("%v: no plan", typ)
			continue
		}
		want := keysOf(typ)
		var got []string
		for _, f := range p.fields {
			if !f.embed { // msgpack decodes an embed's key but never writes it
				got = append(got, f.name)
			}
		}
		if !sameSet(got, want) {
			t.Errorf("%v: plan keys %q, msgpack keys %q", typ, got, want)
		}
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]int{}
	for _, s := range a {
		m[s]++
	}
	for _, s := range b {
		m[s]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return true
}
