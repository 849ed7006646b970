package structdec

import (
	"encoding/binary"
	"reflect"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/fixture"
)

// ts4, ts8 and ts12 encode msgpack timestamps in their three data forms;
// tsExt wraps data of any length under any code and type.
func ts4(sec uint32) []byte { return fixext(-1, binary.BigEndian.AppendUint32(nil, sec)) }
func ts8(sec uint64, nsec uint32) []byte {
	return fixext(-1, binary.BigEndian.AppendUint64(nil, uint64(nsec)<<34|sec))
}
func ts12(sec int64, nsec uint32) []byte {
	return ext8(-1, binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32(nil, nsec), uint64(sec)))
}

// kindDocs are hand-made documents for the kinds beyond scalars: every
// timestamp form and its refusals, nil against empty, reuse against
// replacement, duplicate keys, errors after a partial write, and embedded
// keys.
func kindDocs() map[string][]byte {
	ints20 := make([][]byte, 20)
	for i := range ints20 {
		ints20[i] = fixint(int8(i))
	}
	return map[string][]byte{
		"time 4":              fmap(fixstr("t"), ts4(1), fixstr("T2"), ts4(0xffffffff)),
		"time 8":              fmap(fixstr("t"), ts8(1796450400, 500_000_000), fixstr("p"), ts8(0, 1)),
		"time 8 big nsec":     fmap(fixstr("t"), ts8(3, 1<<30-1), fixstr("p"), ts8(1<<34-1, 999_999_999)),
		"time 12 negative":    fmap(fixstr("t"), ts12(-1, 5), fixstr("p"), ts12(-62135596800, 0)),
		"time 12 big nsec":    fmap(fixstr("t"), ts12(1<<40, 0xffffffff), fixstr("T2"), ts12(-1<<62, 7)),
		"time zero instant":   fmap(fixstr("t"), ts12(-62135596800, 0), fixstr("T2"), ts12(-62135596800, 1)),
		"time ext8 len 4":     fmap(fixstr("t"), ext8(-1, []byte{0, 0, 1, 0})),
		"time ext16 len 8":    fmap(fixstr("t"), ext16(-1, make([]byte, 8))),
		"time ext32 len 12":   fmap(fixstr("p"), ext32(-1, make([]byte, 12))),
		"time ext8 len 5":     fmap(fixstr("t"), ext8(-1, make([]byte, 5))),
		"time fixext16":       fmap(fixstr("t"), fixext(-1, make([]byte, 16))),
		"time fixext1":        fmap(fixstr("t"), fixext(-1, []byte{1})),
		"time type 13":        fmap(fixstr("t"), fixext(13, []byte{0, 0, 0, 1})),
		"time type 1":         fmap(fixstr("p"), fixext(1, []byte{0, 0, 0, 1})),
		"time string":         fmap(fixstr("t"), fixstr("2020-01-01T00:00:00Z")),
		"time legacy array":   fmap(fixstr("t"), arr(fixint(1), fixint(2))),
		"time nil":            fmap(fixstr("t"), mnil),
		"time ptr nil":        fmap(fixstr("p"), mnil, fixstr("t"), ts4(9)),
		"time truncated":      fmap(fixstr("t"), ext8(-1, make([]byte, 12))[:9]),
		"time after partial":  fmap(fixstr("p"), ts4(5), fixstr("t"), fixint(1)),
		"ptr values":          fmap(fixstr("i"), fixint(-3), fixstr("s"), fixstr("x"), fixstr("b"), mtrue, fixstr("f"), f32(2.5), fixstr("u"), u16(9), fixstr("n"), i32(-7)),
		"ptr nils":            fmap(fixstr("i"), mnil, fixstr("s"), mnil, fixstr("in"), mnil, fixstr("ss"), mnil, fixstr("m"), mnil, fixstr("d"), mnil),
		"ptr empties":         fmap(fixstr("bs"), bin8(""), fixstr("ss"), arr(), fixstr("is"), arr(), fixstr("m"), fmap()),
		"ptr struct":          fmap(fixstr("in"), fmap(fixstr("a"), fixint(4)), fixstr("d"), fmap(fixstr("d2"), fmap(fixstr("b"), mtrue))),
		"ptr struct nil in":   fmap(fixstr("d"), fmap(fixstr("d2"), mnil), fixstr("in"), fmap(fixstr("tags"), mnil)),
		"ptr dup":             fmap(fixstr("i"), fixint(1), fixstr("i"), mnil, fixstr("i"), fixint(2)),
		"ptr bad value":       fmap(fixstr("s"), fixstr("ok"), fixstr("i"), fixstr("notint")),
		"ptr truncated":       fmap(fixstr("i"), []byte{cInt32, 1}),
		"map values":          fmap(fixstr("ss"), fmap(fixstr("a"), fixstr("b")), fixstr("si"), fmap(fixstr("k"), i64(-9)), fixstr("sb"), fmap(fixstr("t"), mtrue), fixstr("sf"), fmap(fixstr("f"), f32(0.5))),
		"map nil":             fmap(fixstr("ss"), mnil, fixstr("si"), mnil, fixstr("l"), mnil, fixstr("k"), mnil),
		"map empty":           fmap(fixstr("ss"), fmap(), fixstr("si"), map16(), fixstr("l"), map32(), fixstr("ks"), fmap()),
		"map dup keys":        fmap(fixstr("ss"), fmap(fixstr("a"), fixstr("1"), fixstr("a"), fixstr("2"))),
		"map dup fields":      fmap(fixstr("si"), fmap(fixstr("a"), fixint(1)), fixstr("si"), mnil, fixstr("si"), fmap(fixstr("b"), fixint(2))),
		"map merge":           fmap(fixstr("si"), fmap(fixstr("a"), fixint(1)), fixstr("si"), fmap(fixstr("b"), fixint(2))),
		"map old key":         fmap(fixstr("ss"), fmap(fixstr("k"), fixstr("new")), fixstr("l"), fmap(fixstr("old"), mnil)),
		"map key kinds":       fmap(fixstr("ss"), fmap(mnil, fixstr("n"), bin8("b"), str16("s"), str8(""), fixstr("e"))),
		"map key int":         fmap(fixstr("ss"), fmap(fixint(1), fixstr("x"))),
		"map value bad":       fmap(fixstr("si"), fmap(fixstr("a"), fixint(1), fixstr("b"), fixstr("x"))),
		"map value nil":       fmap(fixstr("su8"), fmap(fixstr("a"), mnil), fixstr("sb"), fmap(fixstr("a"), mnil), fixstr("ss"), fmap(fixstr("a"), mnil)),
		"map value widths":    fmap(fixstr("su8"), fmap(fixstr("a"), u16(0x1ff)), fixstr("si8"), fmap(fixstr("a"), i16(-300)), fixstr("sf4"), fmap(fixstr("a"), f32bits(0x7f800001))),
		"map ext prefixed":    fmap(fixstr("ss"), cat([]byte{0xd4, 0x01}, fmap(fixstr("a"), fixstr("b")))),
		"map array":           fmap(fixstr("ss"), arr(fixstr("a"), fixstr("b"))),
		"map huge count":      fmap(fixstr("ss"), []byte{cMap32, 0x7f, 0xff, 0xff, 0xff, 0xa1, 'a'}),
		"map named":           fmap(fixstr("k"), fmap(fixstr("x"), i8(-1)), fixstr("ks"), fmap(fixstr("y"), fixstr("z"))),
		"slice values":        fmap(fixstr("i"), arr(fixint(1), i64(-1)), fixstr("i8"), arr(i16(300)), fixstr("u16"), arr(u32(70000)), fixstr("b"), arr(mtrue, mfalse, mnil)),
		"slice floats":        fmap(fixstr("f32"), arr(f32(1.5), fixint(2), f32bits(0x7f800001)), fixstr("f64"), arr(f64(0.25), f32(3), u64(1<<63))),
		"slice nil":           fmap(fixstr("i"), mnil, fixstr("ns"), mnil, fixstr("mi"), mnil, fixstr("i64"), mnil),
		"slice empty":         fmap(fixstr("i"), arr(), fixstr("ns"), arr16(), fixstr("mi"), arr32(), fixstr("b"), arr()),
		"slice grow":          fmap(fixstr("i64"), arr16(ints20...), fixstr("u"), arr(ints20[:3]...), fixstr("ni"), arr(ints20[:9]...)),
		"slice shrink":        fmap(fixstr("i64"), arr16(ints20...), fixstr("i64"), arr(fixint(1))),
		"slice dup nil":       fmap(fixstr("i64"), arr(fixint(1)), fixstr("i64"), mnil, fixstr("i64"), arr()),
		"slice bad elem":      fmap(fixstr("i32"), arr(fixint(1), fixstr("x"), fixint(3))),
		"slice float64 in 32": fmap(fixstr("f32"), arr(f64(1.5))),
		"slice strings":       fmap(fixstr("ns"), arr(fixstr("a"), mnil, bin8("b"), str16("c"))),
		"slice map":           fmap(fixstr("i"), fmap()),
		// msgpack allocates what an array declares (its alloc limit is
		// never applied to slices), so a 2^31 count would exhaust memory.
		"slice huge count":   fmap(fixstr("i"), []byte{cArr32, 0x00, 0x10, 0x00, 0x00, 1, 2}),
		"embed fields":       fmap(fixstr("a"), fixint(1), fixstr("tags"), arr(fixstr("t")), fixstr("x"), f32(0.5), fixstr("y"), fixstr("y"), fixstr("s"), arr(), fixstr("b"), mtrue, fixstr("ex"), fixint(3)),
		"embed keys":         fmap(fixstr("Inner"), fmap(fixstr("a"), fixint(2)), fixstr("d2x"), fmap(fixstr("b"), mtrue), fixstr("innerLower"), fmap(fixstr("y"), fixstr("w"))),
		"embed key nil":      fmap(fixstr("a"), fixint(1), fixstr("Inner"), mnil, fixstr("d2x"), mnil),
		"embed lower nil":    fmap(fixstr("x"), f32(1), fixstr("innerLower"), mnil),
		"embed type name":    fmap(fixstr("Deep2"), fmap(fixstr("b"), mtrue), fixstr("Times"), fmap(fixstr("t"), ts4(1))),
		"embed then field":   fmap(fixstr("Inner"), fmap(fixstr("tags"), arr()), fixstr("a"), fixint(5), fixstr("Inner"), fmap(fixstr("a"), fixint(6))),
		"embed array":        fmap(fixstr("Inner"), arr(fixint(1), arr(), mnil)),
		"embed deep":         fmap(fixstr("Embeds"), fmap(fixstr("Inner"), fmap(fixstr("a"), fixint(3)), fixstr("ex"), fixint(4)), fixstr("z"), fixint(1), fixstr("p"), fmap(fixstr("a"), fixint(9))),
		"embed deep inner":   fmap(fixstr("Inner"), fmap(fixstr("a"), fixint(3)), fixstr("p"), mnil),
		"embed omit times":   fmap(fixstr("Times"), fmap(fixstr("t"), ts4(2)), fixstr("t"), ts4(3), fixstr("y"), fixstr("q")),
		"member nil billing": fmap(fixstr("billing"), mnil, fixstr("nickname"), mnil, fixstr("Audit"), fmap(fixstr("created_at"), ts4(7))),
		"member audit nil":   fmap(fixstr("Audit"), mnil, fixstr("active"), mnil),
	}
}

// kindTypes are the destinations kindDocs are decoded into.
func kindTypes() []reflect.Type {
	return []reflect.Type{
		reflect.TypeFor[Times](), reflect.TypeFor[Ptrs](), reflect.TypeFor[Maps](), reflect.TypeFor[Slices](),
		reflect.TypeFor[Embeds](), reflect.TypeFor[EmbedsDeep](), reflect.TypeFor[EmbedOmit](), reflect.TypeFor[EmbedSkipped](),
		reflect.TypeFor[Member](), reflect.TypeFor[Profile](),
	}
}

// TestDifferentialKinds decodes kindDocs into every new kind's test type,
// zero and pre-filled, and checks that each type took the fast path for
// some of them.
func TestDifferentialKinds(t *testing.T) {
	fast := map[reflect.Type]int{}
	for name, d := range kindDocs() {
		t.Run(name, func(t *testing.T) {
			for _, typ := range kindTypes() {
				for _, mode := range modes {
					if differential(t, typ, mode, d).fast {
						fast[typ]++
					}
				}
			}
		})
	}
	for _, typ := range kindTypes() {
		if fast[typ] == 0 {
			t.Errorf("%v: Decode never reported true", typ)
		}
	}
}

// TestDecodeMemberFastPath checks the realistic fixture on its own terms:
// it takes the fast path, comes out equal to what was encoded (times in
// time.Local, as msgpack gives them), and a pre-filled destination keeps
// what msgpack keeps: its pointees (written through) and its maps' other
// entries.
func TestDecodeMemberFastPath(t *testing.T) {
	want := newMember()
	data := encodeCompact(t, want)
	var got Member
	if !Decode(data, &got) {
		t.Fatal("Decode reported false for the Member fixture: the fast path is dead")
	}
	want.CreatedAt, want.UpdatedAt = want.CreatedAt.Local(), want.UpdatedAt.Local()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Decode = %+v, want %+v", got, want)
	}
	if got.CreatedAt.Location() != time.Local {
		t.Fatalf("CreatedAt in %v, msgpack gives time.Local", got.CreatedAt.Location())
	}

	nick := "old"
	bill := &Address{Street: "old"}
	pre := Member{Nickname: &nick, Billing: bill, Labels: map[string]string{"kept": "yes"}}
	if !Decode(data, &pre) {
		t.Fatal("Decode reported false")
	}
	if pre.Nickname != &nick || nick != "ada" || pre.Billing != bill || *bill != *want.Billing || pre.Labels["kept"] != "yes" {
		t.Fatalf("pre-filled Member: nickname %p %q, billing %p %+v, labels %v", pre.Nickname, nick, pre.Billing, bill, pre.Labels)
	}
}

// Address is the fixtures' nested struct.
type Address = fixture.Address

// newMember is the realistic fixture at about 300 bytes encoded.
func newMember() Member { return fixture.NewMember(300) }
