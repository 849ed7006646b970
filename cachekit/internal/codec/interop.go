package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/cachekit-io/cachekit-go/protocol"
)

// Interop values are the protocol's canonical MessagePack, written by every
// SDK. A reader must take any well-formed document (padded widths, unsorted
// keys, float32, non-string map keys, ext types), and temporal values
// travel as the protocol's sentinel maps ({"__datetime__": true, "value":
// <ISO-8601>}, and __date__ and __time__ likewise). The functions here
// bridge that to Go: DecodeInterop reads through the protocol's generic
// decoder and revives every sentinel (time.Time, protocol.Date,
// protocol.TimeOfDay: protocol.TemporalSentinel);
// AppendInterop writes the canonical encoding, turning a value the Go
// encoder produced (times as the timestamp extension) into one the
// canonical writer takes.

// AppendInterop appends the protocol's canonical encoding of v to dst and
// returns the extended slice. Values the canonical writer takes directly
// are written as they are; any other value (a struct, a typed map or slice)
// is encoded with Append (jsonTags as there), decoded generically and
// written canonically, its times (the Go encoder's timestamp extension)
// becoming datetime sentinels. A value holding any other extension type
// has no canonical form and is refused. On error it returns nil.
func AppendInterop(dst []byte, v any, jsonTags bool) ([]byte, error) {
	out, err := protocol.AppendCanonicalValue(dst, v)
	if err == nil {
		return out, nil
	}
	if !errors.Is(err, protocol.ErrUnsupported) {
		return nil, err
	}
	raw, err := Append(nil, v, jsonTags)
	if err != nil {
		return nil, err
	}
	generic, err := protocol.DecodeMsgpack(raw, protocol.DefaultDecodeLimits)
	if err != nil {
		return nil, err
	}
	if generic, err = canonicalTree(generic); err != nil {
		return nil, err
	}
	if out, err = protocol.AppendCanonicalValue(dst, generic); err != nil {
		return nil, err
	}
	return out, nil
}

// DecodeInterop decodes an interop payload into dst, which must be a
// non-nil pointer. A typed destination first tries Decode (most documents
// are plain); *any, any document that may hold a temporal sentinel, and any
// document Decode refuses (a non-string map key, an ext), go through the
// protocol's generic decoder under protocol.DefaultDecodeLimits, with the
// sentinels revived (WIRE-20: a datetime into time.Time, a date into
// protocol.Date, a time of day into protocol.TimeOfDay). A map key that no Go map can
// hold (bytes, an array, a map, an ext) is an error for a typed
// destination: only *any can take it.
func DecodeInterop(payload []byte, dst any, jsonTags bool) error {
	// Only a document without temporal sentinels may take the plain
	// decoder: it would hand a sentinel to a map or an any field as a map.
	if _, isAny := dst.(*any); !isAny && !mayHoldSentinel(payload) && Decode(payload, dst, jsonTags) == nil {
		return nil
	}
	v, err := protocol.DecodeMsgpack(payload, protocol.DefaultDecodeLimits)
	if err != nil {
		return err
	}
	v = reviveTimes(v)
	if p, ok := dst.(*any); ok {
		*p = v
		return nil
	}
	// A typed destination: re-encode the revived tree with the Go encoder
	// (times as its timestamp extension) and decode that into dst.
	tree, err := goTree(v)
	if err != nil {
		return err
	}
	raw, err := Append(nil, tree, false) // a generic tree: no struct tags
	if err != nil {
		return err
	}
	return decodeReviving(raw, dst, jsonTags)
}

// decodeReviving decodes raw, a revived tree re-encoded by Append, into
// dst with the msgpack library, reviving every temporal sentinel map it
// decodes into an interface (a map value, a slice element, an any field):
// Append writes a protocol.Date or protocol.TimeOfDay as its sentinel map
// (their MarshalMsgpack), which a typed field reads back through
// UnmarshalMsgpack but an interface would otherwise hold as a map.
func decodeReviving(raw []byte, dst any, jsonTags bool) error {
	dec := msgpack.NewDecoder(bytes.NewReader(raw))
	dec.SetMapDecoder(func(d *msgpack.Decoder) (any, error) {
		m, err := d.DecodeMap()
		if err != nil {
			return nil, err
		}
		if v, ok := protocol.TemporalSentinel(m); ok {
			return v, nil
		}
		return m, nil
	})
	if jsonTags {
		dec.SetCustomStructTag("json")
	}
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("cachekit: decode value: %w", err)
	}
	return nil
}

// sentinelKeys are the temporal sentinels' keys.
var sentinelKeys = [][]byte{[]byte("__datetime__"), []byte("__date__"), []byte("__time__")}

// mayHoldSentinel reports whether payload contains a temporal sentinel's
// key, in whatever str width it was written: if it does not, it holds no
// sentinel the plain decoder would hand over as a map.
func mayHoldSentinel(payload []byte) bool {
	for _, k := range sentinelKeys {
		if bytes.Contains(payload, k) {
			return true
		}
	}
	return false
}

// reviveTimes replaces every temporal sentinel map in v with the Go value
// it stands for.
func reviveTimes(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if t, ok := protocol.TemporalSentinel(x); ok {
			return t
		}
		for k, e := range x {
			x[k] = reviveTimes(e)
		}
	case []any:
		for i, e := range x {
			x[i] = reviveTimes(e)
		}
	case protocol.Map:
		for i := range x {
			x[i].Value = reviveTimes(x[i].Value)
		}
	}
	return v
}

// goTree makes a decoded tree encodable by the Go encoder: a Map becomes
// map[any]any (an error when a key cannot be a Go map key: a typed
// destination cannot hold it, and dropping it would lose data), an Ext its
// raw encoding.
func goTree(v any) (any, error) {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			var err error
			if out[i], err = goTree(e); err != nil {
				return nil, err
			}
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			t, err := goTree(e)
			if err != nil {
				return nil, err
			}
			out[k] = t
		}
		return out, nil
	case protocol.Map:
		out := make(map[any]any, len(x))
		for _, e := range x {
			switch e.Key.(type) {
			case []byte, []any, map[string]any, protocol.Map, protocol.Ext:
				return nil, errors.New("cachekit: interop: a map key of this type has no Go form; read into *any")
			}
			t, err := goTree(e.Value)
			if err != nil {
				return nil, err
			}
			out[e.Key] = t
		}
		return out, nil
	case protocol.Ext:
		return msgpack.RawMessage(appendExt(nil, x)), nil
	}
	return v, nil
}

// appendExt writes x as a MessagePack ext (ext 8/16/32 form).
func appendExt(dst []byte, x protocol.Ext) []byte {
	n := len(x.Data)
	switch {
	case n <= 0xff:
		dst = append(dst, 0xc7, byte(n))
	case n <= 0xffff:
		dst = append(dst, 0xc8)
		dst = binary.BigEndian.AppendUint16(dst, uint16(n))
	default:
		dst = append(dst, 0xc9)
		dst = binary.BigEndian.AppendUint32(dst, uint32(n))
	}
	return append(append(dst, byte(x.Type)), x.Data...)
}

// canonicalTree turns a generic tree decoded from the Go encoder's output
// into one the canonical writer takes: the timestamp extension (-1, how the
// Go encoder writes time.Time, struct fields included) becomes time.Time,
// which the canonical writer turns into the datetime sentinel.
func canonicalTree(v any) (any, error) {
	switch x := v.(type) {
	case []any:
		for i, e := range x {
			var err error
			if x[i], err = canonicalTree(e); err != nil {
				return nil, err
			}
		}
	case map[string]any:
		for k, e := range x {
			c, err := canonicalTree(e)
			if err != nil {
				return nil, err
			}
			x[k] = c
		}
	case protocol.Ext:
		if x.Type != -1 {
			return nil, fmt.Errorf("cachekit: interop: extension type %d has no canonical form", x.Type)
		}
		return timestampExt(x.Data)
	}
	return v, nil
}

// timestampExt decodes the MessagePack timestamp extension's data (4, 8 or
// 12 bytes).
func timestampExt(b []byte) (time.Time, error) {
	switch len(b) {
	case 4:
		return time.Unix(int64(binary.BigEndian.Uint32(b)), 0).UTC(), nil
	case 8:
		v := binary.BigEndian.Uint64(b)
		return time.Unix(int64(v&(1<<34-1)), int64(v>>34)).UTC(), nil
	case 12:
		return time.Unix(int64(binary.BigEndian.Uint64(b[4:])), int64(binary.BigEndian.Uint32(b))).UTC(), nil
	}
	return time.Time{}, errors.New("cachekit: interop: malformed timestamp extension")
}
