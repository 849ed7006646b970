package structdec

import (
	"errors"
	"reflect"
	"strings"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/cachekit-io/cachekit-go/internal/fixture"
)

// Record is the benchmarks' struct fixture, the shape the hit path decodes.
type Record = fixture.Record

// Ints has one field of every integer kind, untagged.
type Ints struct {
	I   int
	I8  int8
	I16 int16
	I32 int32
	I64 int64
	U   uint
	U8  uint8
	U16 uint16
	U32 uint32
	U64 uint64
}

// Floats covers both float kinds.
type Floats struct {
	F32 float32 `msgpack:"f32"`
	F64 float64 `msgpack:"f64"`
}

type (
	myBool    bool
	myInt     int32
	myUint    uint16
	myFloat   float64
	myFloat32 float32
	myString  string
	myBytes   []byte
	myByte    uint8
	myStrings []string
)

// Named uses named types of every supported kind.
type Named struct {
	B   myBool      `msgpack:"b"`
	I   myInt       `msgpack:"i"`
	U   myUint      `msgpack:"u"`
	F   myFloat     `msgpack:"f"`
	F32 myFloat32   `msgpack:"f32"`
	S   myString    `msgpack:"s"`
	Bs  myBytes     `msgpack:"bs"`
	Mb  []myByte    `msgpack:"mb"`
	Ss  myStrings   `msgpack:"ss"`
	Raw []uint8     `msgpack:"raw"`
	Arr [2]struct{} `msgpack:"-"`
}

// Inner is nested by value in Outer.
type Inner struct {
	A      int      `msgpack:"a"`
	Tags   []string `msgpack:"tags"`
	hidden int
	Blob   []byte `msgpack:"blob"`
}

// innerLower is an unexported struct type in an exported field.
type innerLower struct {
	X float32 `msgpack:"x"`
	Y string  `msgpack:"y"`
}

// Outer nests structs two levels deep.
type Outer struct {
	Name  string     `msgpack:"name"`
	In    Inner      `msgpack:"in"`
	Low   innerLower `msgpack:"low"`
	Deep  Deep1      `msgpack:"deep"`
	After int        `msgpack:"after"`
}

// Deep1 and Deep2 nest further.
type Deep1 struct {
	D2 Deep2 `msgpack:"d2"`
	N  uint8 `msgpack:"n"`
}

// Deep2 is the innermost level.
type Deep2 struct {
	S []string `msgpack:"s"`
	B bool     `msgpack:"b"`
}

// Tagged exercises the tag forms the package accepts.
type Tagged struct {
	Renamed   string   `msgpack:"r"`
	Omit      int      `msgpack:"o,omitempty"`
	NameOnly  string   `msgpack:",omitempty"`
	Skipped   string   `msgpack:"-"`
	SkipOmit  int      `msgpack:"-,omitempty"`
	JSONOnly  string   `json:"jsononly"`
	OmitName  bool     `msgpack:"omitempty"`
	Dashed    []string `msgpack:"x-y.z"`
	unexp     string
	unexpTag  int `msgpack:"unexp_tag"`
	_         int
	unexpOdd  *int   `msgpack:"weird,alias:q"`
	Empty     string `msgpack:""`
	EmptyOmit uint64 `msgpack:"eo,omitempty,omitempty"`
}

// Bytes covers byte slices.
type Bytes struct {
	B  []byte  `msgpack:"b"`
	B2 []uint8 `msgpack:"b2"`
	S  string  `msgpack:"s"`
}

// Hidden has no decodable field at all.
type Hidden struct {
	a int
	b string
}

// Many has enough fields for the map-based key lookup.
type Many struct {
	F00, F01, F02, F03, F04, F05, F06, F07 int
	F08, F09, F10, F11, F12, F13, F14, F15 string
	F16                                    []string
	F17                                    bool
}

// Empty has no fields.
type Empty struct{}

// eligible lists the test types Decode must handle.
var eligible = []reflect.Type{
	reflect.TypeFor[Record](),
	reflect.TypeFor[Ints](),
	reflect.TypeFor[Floats](),
	reflect.TypeFor[Named](),
	reflect.TypeFor[Outer](),
	reflect.TypeFor[Inner](),
	reflect.TypeFor[Tagged](),
	reflect.TypeFor[Bytes](),
	reflect.TypeFor[Hidden](),
	reflect.TypeFor[Many](),
	reflect.TypeFor[Empty](),
}

// Ineligible types, one per reason.
type (
	withIface   struct{ I any }
	withArray   struct{ A [4]byte }
	withUintptr struct{ U uintptr }
	withComplex struct{ C complex128 }
	withAsArray struct {
		_msgpack struct{} `msgpack:",as_array"`
		A        int
	}
	withAlias struct {
		A int `msgpack:"a,alias:b"`
	}
	withIntern struct {
		S string `msgpack:"s,intern"`
	}
	withInline struct {
		S string `msgpack:"s,inline"`
	}
	withQuote struct {
		S string `msgpack:"'s'"`
	}
	withSpace struct {
		S string `msgpack:"s, omitempty"`
	}
	withDup struct {
		A int `msgpack:"x"`
		B int `msgpack:"x"`
	}
	withDupName struct {
		A int `msgpack:"B"`
		B int
	}
	withNestedBad struct {
		Ok  Inner
		Bad withIface
	}
	withCustomDec   struct{ C customDec }
	withUnmarshaler struct{ U valUnmarshaler }
	withText        struct{ T textField }
	withBinary      struct{ B binField }
	withRegistered  struct{ R registeredString }
)

type customDec struct{ N int }

func (c *customDec) DecodeMsgpack(d *msgpack.Decoder) error {
	n, err := d.DecodeInt()
	c.N = n + 1
	return err
}

type valUnmarshaler int

func (valUnmarshaler) UnmarshalMsgpack([]byte) error { return nil }

type textField string

func (t *textField) UnmarshalText(b []byte) error {
	*t = textField(strings.ToUpper(string(b)))
	return nil
}

type binField []byte

func (b *binField) UnmarshalBinary(p []byte) error {
	*b = append((*b)[:0], p...)
	return nil
}

// selfDecoding implements msgpack.CustomDecoder on the top-level struct.
type selfDecoding struct{ A int }

func (s *selfDecoding) DecodeMsgpack(d *msgpack.Decoder) error {
	return errors.New("selfDecoding: refuses")
}

// topBinary implements encoding.BinaryUnmarshaler on the value type.
type topBinary struct{ A int }

func (topBinary) UnmarshalBinary([]byte) error { return nil }

// registeredString gets a decoder through msgpack.Register, which only the
// probe can notice.
type registeredString string

func init() {
	msgpack.Register(registeredString(""), nil, func(d *msgpack.Decoder, v reflect.Value) error {
		s, err := d.DecodeString()
		v.SetString(strings.ToUpper(s))
		return err
	})
}

// ineligible lists types Decode must always leave to msgpack.
var ineligible = []reflect.Type{
	reflect.TypeFor[withIface](),
	reflect.TypeFor[withArray](),
	reflect.TypeFor[withUintptr](),
	reflect.TypeFor[withComplex](),
	reflect.TypeFor[withAsArray](),
	reflect.TypeFor[withAlias](),
	reflect.TypeFor[withIntern](),
	reflect.TypeFor[withInline](),
	reflect.TypeFor[withQuote](),
	reflect.TypeFor[withSpace](),
	reflect.TypeFor[withDup](),
	reflect.TypeFor[withDupName](),
	reflect.TypeFor[withNestedBad](),
	reflect.TypeFor[withCustomDec](),
	reflect.TypeFor[withUnmarshaler](),
	reflect.TypeFor[withText](),
	reflect.TypeFor[withBinary](),
	reflect.TypeFor[withRegistered](),
	reflect.TypeFor[selfDecoding](),
	reflect.TypeFor[topBinary](),
	reflect.TypeFor[time.Time](),
}
