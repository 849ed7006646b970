package structdec

import (
	"reflect"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/cachekit-io/cachekit-go/internal/fixture"
)

// Profile and Member are the realistic fixtures: times, pointers, nested
// and embedded structs, maps and slices of scalars.
type (
	Profile = fixture.Profile
	Member  = fixture.Member
)

// Times holds time.Time by value and through a pointer.
type Times struct {
	T  time.Time  `msgpack:"t"`
	P  *time.Time `msgpack:"p"`
	T2 time.Time
}

// Ptrs has a pointer to every kind a pointer may point to.
type Ptrs struct {
	I  *int               `msgpack:"i"`
	S  *string            `msgpack:"s"`
	B  *bool              `msgpack:"b"`
	F  *float32           `msgpack:"f"`
	U  *uint16            `msgpack:"u"`
	N  *myInt             `msgpack:"n"`
	In *Inner             `msgpack:"in"`
	Bs *[]byte            `msgpack:"bs"`
	Ss *[]string          `msgpack:"ss"`
	Is *[]int64           `msgpack:"is"`
	M  *map[string]string `msgpack:"m"`
	D  *Deep1             `msgpack:"d"`
}

type (
	// Label is a named string, embedded by withScalarEmbed.
	Label    string
	myLabels map[string]string
	myKey    string
	myInts   []int64
)

// Maps has maps from string kinds to every scalar kind.
type Maps struct {
	SS  map[string]string  `msgpack:"ss"`
	SI  map[string]int64   `msgpack:"si"`
	SB  map[string]bool    `msgpack:"sb"`
	SF  map[string]float64 `msgpack:"sf"`
	SF4 map[string]float32 `msgpack:"sf4"`
	SU8 map[string]uint8   `msgpack:"su8"`
	SU  map[string]uint    `msgpack:"su"`
	SI8 map[string]int8    `msgpack:"si8"`
	L   myLabels           `msgpack:"l"`
	K   map[myKey]myInt    `msgpack:"k"`
	KS  map[myKey]myString `msgpack:"ks"`
}

// Slices has slices of every scalar element kind but uint8 (that is
// []byte), and named elements and slices.
type Slices struct {
	I   []int      `msgpack:"i"`
	I8  []int8     `msgpack:"i8"`
	I16 []int16    `msgpack:"i16"`
	I32 []int32    `msgpack:"i32"`
	I64 []int64    `msgpack:"i64"`
	U   []uint     `msgpack:"u"`
	U16 []uint16   `msgpack:"u16"`
	U32 []uint32   `msgpack:"u32"`
	U64 []uint64   `msgpack:"u64"`
	B   []bool     `msgpack:"b"`
	F32 []float32  `msgpack:"f32"`
	F64 []float64  `msgpack:"f64"`
	NS  []myString `msgpack:"ns"`
	NI  []myInt    `msgpack:"ni"`
	MI  myInts     `msgpack:"mi"`
}

// Embeds embeds an exported struct, an unexported one and one under a
// tag name; Inner's unexported field comes along.
type Embeds struct {
	Inner
	innerLower
	Deep2 `msgpack:"d2x"`
	X     int `msgpack:"ex"`
}

// EmbedsDeep embeds a struct that itself embeds one: msgpack inlines both
// levels, but only the outer embedded struct's own key ("Embeds") is a
// key of EmbedsDeep.
type EmbedsDeep struct {
	Z int `msgpack:"z"`
	Embeds
	P *Embeds `msgpack:"p"`
}

// EmbedOmit embeds under an omitempty tag with no name.
type EmbedOmit struct {
	Times `msgpack:",omitempty"`
	Y     string `msgpack:"y"`
}

// embedSkipped is embedded under "-": msgpack ignores it.
type EmbedSkipped struct {
	Inner `msgpack:"-"`
	Y     string `msgpack:"y"`
}

func init() {
	eligible = append(eligible,
		reflect.TypeFor[Profile](),
		reflect.TypeFor[Member](),
		reflect.TypeFor[Times](),
		reflect.TypeFor[Ptrs](),
		reflect.TypeFor[Maps](),
		reflect.TypeFor[Slices](),
		reflect.TypeFor[Embeds](),
		reflect.TypeFor[EmbedsDeep](),
		reflect.TypeFor[EmbedOmit](),
		reflect.TypeFor[EmbedSkipped](),
	)
	ineligible = append(ineligible,
		reflect.TypeFor[withPtrEmbed](),
		reflect.TypeFor[withPtrPtr](),
		reflect.TypeFor[withTimeEmbed](),
		reflect.TypeFor[withScalarEmbed](),
		reflect.TypeFor[withEmbedShadow](),
		reflect.TypeFor[withEmbedNameClash](),
		reflect.TypeFor[withEmbedBad](),
		reflect.TypeFor[withIntKeyMap](),
		reflect.TypeFor[withAnyMap](),
		reflect.TypeFor[withSliceMap](),
		reflect.TypeFor[withTimeSlice](),
		reflect.TypeFor[withStructSlice](),
		reflect.TypeFor[withPtrSlice](),
		reflect.TypeFor[withTimeMap](),
		reflect.TypeFor[withBadPtr](),
		reflect.TypeFor[withMethodElem](),
		reflect.TypeFor[withMethodKey](),
		reflect.TypeFor[withRegEmbed](),
	)
}

// Ineligible shapes of the new kinds, one per reason.
type (
	// A pointer embed: msgpack inlines it and allocates the pointee when a
	// key of it appears (or sets it nil, for its own key), a path through a
	// pointer this package's offsets do not express.
	withPtrEmbed struct {
		*Inner
		X int
	}
	withPtrPtr    struct{ P **int }
	withTimeEmbed struct {
		time.Time
	}
	withScalarEmbed struct {
		Label
	}
	// Shadowing: msgpack does not inline an embed whose names are taken.
	withEmbedShadow struct {
		A int `msgpack:"a"`
		Inner
	}
	withEmbedNameClash struct {
		Inner
		Name int `msgpack:"Inner"`
	}
	withEmbedBad struct {
		withIface
	}
	withIntKeyMap   struct{ M map[int]string }
	withAnyMap      struct{ M map[string]any }
	withSliceMap    struct{ M map[string][]string }
	withTimeSlice   struct{ S []time.Time }
	withStructSlice struct{ S []Inner }
	withPtrSlice    struct{ S []*int }
	withTimeMap     struct{ M map[string]time.Time }
	withBadPtr      struct{ P *withIface }
	withMethodElem  struct{ S []textField }
	withMethodKey   struct{ M map[textField]int }
	// An embedded struct with a decoder from msgpack.Register: msgpack does
	// not inline it, which only the probe can notice.
	withRegEmbed struct {
		RegEmbedded
		B int `msgpack:"b"`
	}
)

// RegEmbedded gets a decoder through msgpack.Register (it reads an int).
type RegEmbedded struct{ A int }

func init() {
	msgpack.Register(RegEmbedded{}, nil, func(d *msgpack.Decoder, v reflect.Value) error {
		n, err := d.DecodeInt()
		v.Field(0).SetInt(int64(n) + 1)
		return err
	})
}
