package protocol

import (
	"encoding/binary"
	"github.com/cachekit-io/cachekit-go/protocol/internal/mp"
	"math"
)

// DecodeMsgpack turns one untrusted MessagePack document into plain Go
// values. It runs CheckMsgpack first, so every bound is enforced before
// anything is materialised, and it returns exactly the error CheckMsgpack
// would. Decoded types:
//
//   - nil, bool, string (bytes copied, not validated as UTF-8);
//   - int64 for every integer that fits it, uint64 for larger ones,
//     whatever width the document used;
//   - float64 for float64 and for float32 (widened exactly);
//   - []byte for bin (a copy; empty bin is a non-nil empty slice);
//   - []any for arrays;
//   - map[string]any for maps whose keys are all strings (a repeated key
//     keeps its last value), Map for any other map (pairs in wire order);
//   - Ext for every extension type, the timestamp extension (-1) included:
//     interop documents carry times as sentinel maps, never as ext.
//
// Temporal sentinel maps ({"__datetime__": true, ...}) are returned as
// maps; reviving them is the typed decoder's business.
func DecodeMsgpack(b []byte, lim DecodeLimits) (any, error) {
	if err := CheckMsgpack(b, lim); err != nil {
		return nil, err
	}
	d := decoder{b: b}
	v := d.item()
	if d.bad || d.pos != len(b) {
		// Unreachable after a successful check; kept so a disagreement
		// between the walk and the decoder fails closed, not open.
		return nil, errIncomplete
	}
	return v, nil
}

// Ext is a MessagePack extension value: its application type code and its
// raw data.
type Ext struct {
	// Type is the extension type code; negative codes are reserved by the
	// MessagePack specification (-1 is the timestamp extension).
	Type int8
	// Data is the extension payload, copied out of the input.
	Data []byte
}

// MapEntry is one key/value pair of a Map.
type MapEntry struct {
	// Key is the decoded key: any type DecodeMsgpack returns.
	Key any
	// Value is the decoded value.
	Value any
}

// Map is a decoded MessagePack map with at least one key that is not a
// string, kept as its pairs in wire order (repeated keys included), since
// Go map keys cannot hold every decoded type. The canonical encoders reject
// it: interop map keys are strings.
type Map []MapEntry

// decoder materialises a document CheckMsgpack has accepted. It still
// checks every read, so a walk/decoder disagreement sets bad instead of
// panicking.
type decoder struct {
	b     []byte
	pos   int
	bad   bool
	pairs []MapEntry // pairs of the maps being decoded, innermost last
}

// take returns the next n bytes, or nil and sets bad when they are missing.
func (d *decoder) take(n uint64) []byte {
	if n > uint64(len(d.b)-d.pos) {
		d.bad = true
		return nil
	}
	s := d.b[d.pos : d.pos+int(n)]
	d.pos += int(n)
	return s
}

// length reads a big-endian length field of width bytes.
func (d *decoder) length(width int) uint64 {
	s := d.take(uint64(width))
	switch {
	case s == nil:
		return 0
	case width == 1:
		return uint64(s[0])
	case width == 2:
		return uint64(binary.BigEndian.Uint16(s))
	default:
		return uint64(binary.BigEndian.Uint32(s))
	}
}

// item decodes one item at the current position.
func (d *decoder) item() any {
	if d.bad || d.pos >= len(d.b) {
		d.bad = true
		return nil
	}
	c := d.b[d.pos]
	d.pos++
	switch {
	case c <= 0x7f:
		return int64(c)
	case c >= 0xe0:
		return int64(int8(c))
	case c <= 0x8f:
		return d.mapBody(uint64(c & 0x0f))
	case c <= 0x9f:
		return d.array(uint64(c & 0x0f))
	case c <= 0xbf:
		return string(d.take(uint64(c & 0x1f)))
	}
	switch c {
	case mp.Nil:
		return nil
	case mp.False:
		return false
	case mp.True:
		return true
	case mp.Bin8, mp.Bin16, mp.Bin32:
		return append([]byte{}, d.take(d.length(lengthWidth(c)))...)
	case mp.Str8, mp.Str16, mp.Str32:
		return string(d.take(d.length(lengthWidth(c))))
	case mp.Ext8, mp.Ext16, mp.Ext32:
		n := d.length(lengthWidth(c))
		return d.ext(n)
	case mp.FixExt1, mp.FixExt2, mp.FixExt4, mp.FixExt8, mp.FixExt16:
		return d.ext(1 << (c - mp.FixExt1))
	case mp.Float32:
		return float64(math.Float32frombits(uint32(d.fixed(4))))
	case mp.Float64:
		return math.Float64frombits(d.fixed(8))
	case mp.Uint8:
		return int64(d.fixed(1))
	case mp.Uint16:
		return int64(d.fixed(2))
	case mp.Uint32:
		return int64(d.fixed(4))
	case mp.Uint64:
		u := d.fixed(8)
		if u <= math.MaxInt64 {
			return int64(u)
		}
		return u
	case mp.Int8:
		return int64(int8(d.fixed(1)))
	case mp.Int16:
		return int64(int16(d.fixed(2)))
	case mp.Int32:
		return int64(int32(d.fixed(4)))
	case mp.Int64:
		return int64(d.fixed(8))
	case mp.Array16, mp.Array32:
		return d.array(d.length(lengthWidth(c)))
	case mp.Map16, mp.Map32:
		return d.mapBody(d.length(lengthWidth(c)))
	}
	d.bad = true // 0xc1
	return nil
}

// lengthWidth is the width of the length field after a str, bin, ext,
// array or map tag byte of the 8/16/32 forms.
func lengthWidth(c byte) int {
	w, _ := mp.HeaderShape(c)
	return w
}

// fixed reads a big-endian unsigned body of width bytes.
func (d *decoder) fixed(width int) uint64 {
	s := d.take(uint64(width))
	var u uint64
	for _, x := range s {
		u = u<<8 | uint64(x)
	}
	return u
}

// ext reads the type byte and n data bytes of an extension.
func (d *decoder) ext(n uint64) any {
	t := d.take(1)
	data := d.take(n)
	if d.bad {
		return nil
	}
	return Ext{Type: int8(t[0]), Data: append([]byte{}, data...)}
}

// array decodes n elements. The walk has bounded n by the input length.
func (d *decoder) array(n uint64) any {
	if n > uint64(len(d.b)-d.pos) {
		d.bad = true
		return nil
	}
	xs := make([]any, n)
	for i := range xs {
		xs[i] = d.item()
	}
	return xs
}

// mapBody decodes n pairs. They are collected on the decoder's shared
// pair stack first (each item is decoded exactly once), then become a
// map[string]any when every key is a string, or a Map otherwise.
func (d *decoder) mapBody(n uint64) any {
	if 2*n > uint64(len(d.b)-d.pos) {
		d.bad = true
		return nil
	}
	base := len(d.pairs)
	allStrings := true
	for range n {
		k := d.item()
		v := d.item()
		if _, ok := k.(string); !ok {
			allStrings = false
		}
		d.pairs = append(d.pairs, MapEntry{Key: k, Value: v})
	}
	pairs := d.pairs[base:]
	var out any
	if allStrings {
		m := make(map[string]any, n)
		for _, p := range pairs {
			m[p.Key.(string)] = p.Value
		}
		out = m
	} else {
		out = append(Map(nil), pairs...)
	}
	clear(pairs) // drop the references the shared stack holds
	d.pairs = d.pairs[:base]
	return out
}
