package protocol

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"github.com/cachekit-io/cachekit-go/protocol/internal/mp"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"
)

// UUID is a 16-byte RFC 9562 UUID. The canonical encoders write it as the
// 36-character lowercase hyphenated string, the form every CacheKit SDK
// hashes.
type UUID [16]byte

// String returns the lowercase hyphenated form, such as
// "550e8400-e29b-41d4-a716-446655440000".
func (u UUID) String() string {
	var buf [36]byte
	hex.Encode(buf[0:8], u[0:4])
	buf[8] = '-'
	hex.Encode(buf[9:13], u[4:6])
	buf[13] = '-'
	hex.Encode(buf[14:18], u[6:8])
	buf[18] = '-'
	hex.Encode(buf[19:23], u[8:10])
	buf[23] = '-'
	hex.Encode(buf[24:36], u[10:16])
	return string(buf[:])
}

// ParseUUID parses the 36-character hyphenated form in either case. Any
// other shape returns an error wrapping ErrMalformed.
func ParseUUID(s string) (UUID, error) {
	var u UUID
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return u, formatErr("uuid", ErrMalformed, "not a 36-character hyphenated UUID")
	}
	hexDigits := s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:36]
	if _, err := hex.Decode(u[:], []byte(hexDigits)); err != nil {
		return UUID{}, formatErr("uuid", ErrMalformed, "UUID holds a non-hex character")
	}
	return u, nil
}

// Set is an unordered collection for the canonical encoders. It is written
// as an array whose elements are each encoded (under the same profile as
// the enclosing document), then sorted by their encoded bytes as unsigned
// byte strings, with byte-identical encodings kept once. In the argument
// profile that makes Set{2, 2.0} encode as [2]. The order exists only for
// determinism: it interleaves types and signs.
type Set []any

// appendSet encodes every element into one scratch buffer, sorts the
// encodings and writes each distinct one once.
func (e *canonicalEncoder) appendSet(dst []byte, s Set, depth int) ([]byte, error) {
	if depth >= maxCanonicalDepth {
		return dst, errTooDeep
	}
	inner := canonicalEncoder{collapse: e.collapse}
	var scratch []byte
	ends := make([]int, 0, len(s))
	var err error
	for _, x := range s {
		if scratch, err = inner.append(scratch, x, depth+1); err != nil {
			return dst, err
		}
		ends = append(ends, len(scratch))
	}
	elems := make([][]byte, len(s))
	start := 0
	for i, end := range ends {
		elems[i] = scratch[start:end:end]
		start = end
	}
	slices.SortFunc(elems, bytes.Compare)
	elems = slices.CompactFunc(elems, bytes.Equal)
	out := mp.AppendArrayHeader(dst, len(elems))
	for _, el := range elems {
		out = append(out, el...)
	}
	return e.checkSize(out)
}

// appendStringMap writes a map with its keys in UTF-8 byte order.
func (e *canonicalEncoder) appendStringMap(dst []byte, m map[string]any, depth int) ([]byte, error) {
	if depth >= maxCanonicalDepth {
		return dst, errTooDeep
	}
	if len(m) > mp.MaxLen {
		return dst, errLenTooLarge
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, strings.Compare)
	out := mp.AppendMapHeader(dst, len(keys))
	var err error
	for _, k := range keys {
		if out, err = e.appendString(out, k); err != nil {
			return dst, err
		}
		if out, err = e.append(out, m[k], depth+1); err != nil {
			return dst, err
		}
	}
	return e.checkSize(out)
}

// appendTime writes a time.Time. A Go time always carries a location, so it
// is never "naive"; a civil date-time type without one is rejected as an
// unsupported type instead.
func (e *canonicalEncoder) appendTime(dst []byte, t time.Time) ([]byte, error) {
	if !e.collapse {
		return appendDatetimeSentinel(dst, t), nil
	}
	// Integer microseconds since the epoch, floored toward negative
	// infinity: Nanosecond is always in [0, 1e9), so dividing it floors.
	const limit = math.MaxInt64/1_000_000 - 1
	sec := t.Unix()
	if sec > limit || sec < -limit {
		return dst, errTimeRange
	}
	micros := sec*1_000_000 + int64(t.Nanosecond()/1000)
	return e.appendFloat(dst, float64(micros)/1e6)
}

// appendDatetimeSentinel writes the value-profile temporal sentinel map
// {"__datetime__": true, "value": <ISO-8601>}. The text has the shape
// Python's datetime.isoformat gives: microseconds only when non-zero, and
// the time's own UTC offset as +HH:MM.
func appendDatetimeSentinel(dst []byte, t time.Time) []byte {
	layout := "2006-01-02T15:04:05-07:00"
	if t.Nanosecond()/1000 != 0 {
		layout = "2006-01-02T15:04:05.000000-07:00"
	}
	t = t.Truncate(time.Microsecond)
	var buf [48]byte
	iso := t.AppendFormat(buf[:0], layout)
	dst = mp.AppendMapHeader(dst, 2)
	dst = mp.AppendStr(dst, "__datetime__")
	dst = mp.AppendBool(dst, true)
	dst = mp.AppendStr(dst, "value")
	dst = mp.AppendStrHeader(dst, len(iso))
	return append(dst, iso...)
}

// appendReflect handles named types, typed slices, arrays, string-keyed
// maps of any value type and pointers.
func (e *canonicalEncoder) appendReflect(dst []byte, rv reflect.Value, depth int) ([]byte, error) {
	switch rv.Kind() {
	case reflect.Bool:
		return mp.AppendBool(dst, rv.Bool()), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return mp.AppendInt(dst, rv.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return mp.AppendUint(dst, rv.Uint()), nil
	case reflect.Float32, reflect.Float64:
		return e.appendFloat(dst, rv.Float())
	case reflect.String:
		return e.appendString(dst, rv.String())
	case reflect.Pointer:
		if rv.IsNil() {
			return mp.AppendNil(dst), nil
		}
		if depth >= maxCanonicalDepth {
			return dst, errTooDeep
		}
		return e.append(dst, rv.Elem().Interface(), depth+1)
	case reflect.Slice, reflect.Array:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return e.appendBytes(dst, reflectBytes(rv))
		}
		return e.appendReflectList(dst, rv, depth)
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return dst, errMapKey
		}
		return e.appendReflectMap(dst, rv, depth)
	}
	if !rv.IsValid() {
		return mp.AppendNil(dst), nil
	}
	return dst, formatErr(opCanonical, ErrUnsupported, fmt.Sprintf("Go type %s is not in the interop data model", rv.Type()))
}

// reflectBytes returns the bytes of a byte slice or byte array of any
// named type.
func reflectBytes(rv reflect.Value) []byte {
	if rv.Kind() == reflect.Slice {
		return rv.Bytes()
	}
	b := make([]byte, rv.Len())
	reflect.Copy(reflect.ValueOf(b), rv)
	return b
}

// appendReflectList writes a typed slice or array as an array.
func (e *canonicalEncoder) appendReflectList(dst []byte, rv reflect.Value, depth int) ([]byte, error) {
	if depth >= maxCanonicalDepth {
		return dst, errTooDeep
	}
	n := rv.Len()
	if n > mp.MaxLen {
		return dst, errLenTooLarge
	}
	out := mp.AppendArrayHeader(dst, n)
	var err error
	for i := range n {
		if out, err = e.append(out, rv.Index(i).Interface(), depth+1); err != nil {
			return dst, err
		}
	}
	return e.checkSize(out)
}

// appendReflectMap writes a map whose key kind is string, keys sorted by
// their UTF-8 bytes.
func (e *canonicalEncoder) appendReflectMap(dst []byte, rv reflect.Value, depth int) ([]byte, error) {
	if depth >= maxCanonicalDepth {
		return dst, errTooDeep
	}
	n := rv.Len()
	if n > mp.MaxLen {
		return dst, errLenTooLarge
	}
	type entry struct {
		key string
		val reflect.Value
	}
	entries := make([]entry, 0, n)
	for it := rv.MapRange(); it.Next(); {
		entries = append(entries, entry{it.Key().String(), it.Value()})
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	out := mp.AppendMapHeader(dst, n)
	var err error
	for _, en := range entries {
		if out, err = e.appendString(out, en.key); err != nil {
			return dst, err
		}
		if out, err = e.append(out, en.val.Interface(), depth+1); err != nil {
			return dst, err
		}
	}
	return e.checkSize(out)
}
