package protocol

import (
	"cmp"
	"encoding"
	"github.com/cachekit-io/cachekit-go/protocol/internal/mp"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/blake2b"
)

// MaxKeyArgsDepth is the deepest nesting of containers and pointers that key
// argument normalization follows (the argument list itself is level 1).
// Deeper or cyclic arguments fail with ErrTooLarge instead of exhausting the
// stack.
const MaxKeyArgsDepth = 512

// keyArgsPoolMax is the largest buffer ArgsHash returns to its pool; a
// larger one, grown by a huge argument, is left to the garbage collector.
const keyArgsPoolMax = 64 << 10

// keyArgsPool recycles ArgsHash's encoding buffers. The encoder is recursive,
// so escape analysis cannot keep a stack buffer for it.
var keyArgsPool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// keyCanonicalNaN is the quiet NaN Python's float("nan") carries. Every Go NaN
// is written with these bits so a NaN argument has one key.
const keyCanonicalNaN = 0x7ff8000000000000

// ArgsHash returns the Blake2b-256 digest of the document AppendKeyArgs
// builds for args and kwargs: the 32 bytes an auto-mode key carries, as 64
// lowercase hex characters, in its args: segment.
//
// In this module GenerateKey calls it (cachekit.AutoKey); it is exported so
// the cache-key vectors check each step on its own.
func ArgsHash(args []any, kwargs map[string]any) ([32]byte, error) {
	bp := keyArgsPool.Get().(*[]byte)
	doc, err := AppendKeyArgs((*bp)[:0], args, kwargs)
	var sum [32]byte
	if err == nil {
		sum = blake2b.Sum256(doc)
	}
	if cap(doc) <= keyArgsPoolMax {
		clear(doc[:cap(doc)]) // arguments do not linger in pooled memory
		*bp = doc[:0]
		keyArgsPool.Put(bp)
	}
	return sum, err
}

// AppendKeyArgs appends to dst the MessagePack document an auto-mode key
// hashes: a 2-array of the normalized positional arguments and a map of the
// normalized keyword arguments in ascending name order. It returns dst
// unchanged with a *FormatError when an argument cannot be normalized.
//
// Normalization, mirroring the reference generator for Go types:
//   - nil, a nil pointer and a nil interface are nil;
//   - bool is a bool; every signed and unsigned integer kind (defined types
//     such as enums included) is its integer value in the narrowest form;
//     *big.Int and big.Int are accepted within [-2^63, 2^64-1];
//   - float32 and float64 are written as float64, with -0.0 turned into 0.0
//     and every NaN into Python's quiet NaN;
//   - a string must be valid UTF-8 and is a str; []byte and byte arrays are
//     bin;
//   - other slices and arrays are arrays (a nil slice is an empty array);
//   - maps are maps in ascending key order (a nil map is empty); keys must
//     all be strings, all integers or all bools, and must stay distinct;
//   - time.Time is its ISO 8601 form as Python's datetime.isoformat writes
//     it (offset always explicit, microseconds only when non-zero; a value
//     with sub-microsecond digits keeps all nine, which Python cannot express);
//   - any other value implementing encoding.TextMarshaler is its text, the
//     Go counterpart of the UUID, Path and Decimal rules;
//   - pointers are followed; structs, channels, functions, complex numbers
//     and uintptr fail with ErrUnsupported.
//
// In this module ArgsHash calls it (for GenerateKey, which cachekit.AutoKey
// uses); it is exported so the cache-key vectors check the document itself.
func AppendKeyArgs(dst []byte, args []any, kwargs map[string]any) ([]byte, error) {
	b := append(dst, 0x92)
	b, err := appendKeyArgList(b, args, 1)
	if err != nil {
		return dst, err
	}
	b, err = appendKeyArgStringMap(b, kwargs, 1)
	if err != nil {
		return dst, err
	}
	return b, nil
}

// appendKeyArg normalizes and encodes one argument at nesting level depth.
func appendKeyArg(b []byte, v any, depth int) ([]byte, error) {
	if depth > MaxKeyArgsDepth {
		return b, formatErr(opCacheKey, ErrTooLarge, "arguments nested deeper than "+strconv.Itoa(MaxKeyArgsDepth)+" levels")
	}
	switch x := v.(type) {
	case nil:
		return mp.AppendNil(b), nil
	case bool:
		return mp.AppendBool(b, x), nil
	case int:
		return mp.AppendInt(b, int64(x)), nil
	case int64:
		return mp.AppendInt(b, x), nil
	case int32:
		return mp.AppendInt(b, int64(x)), nil
	case int16:
		return mp.AppendInt(b, int64(x)), nil
	case int8:
		return mp.AppendInt(b, int64(x)), nil
	case uint:
		return mp.AppendUint(b, uint64(x)), nil
	case uint64:
		return mp.AppendUint(b, x), nil
	case uint32:
		return mp.AppendUint(b, uint64(x)), nil
	case uint16:
		return mp.AppendUint(b, uint64(x)), nil
	case uint8:
		return mp.AppendUint(b, uint64(x)), nil
	case float64:
		return appendKeyArgFloat(b, x), nil
	case float32:
		return appendKeyArgFloat(b, float64(x)), nil
	case string:
		return appendKeyArgString(b, x)
	case []byte:
		return appendKeyArgBytes(b, x)
	case []any:
		return appendKeyArgList(b, x, depth+1)
	case map[string]any:
		return appendKeyArgStringMap(b, x, depth+1)
	case time.Time:
		return appendKeyArgTime(b, x)
	case *big.Int:
		if x == nil {
			return mp.AppendNil(b), nil
		}
		return appendKeyArgBigInt(b, x)
	case big.Int:
		return appendKeyArgBigInt(b, &x)
	}
	return appendKeyArgValue(b, v, depth)
}

// appendKeyArgValue handles every type the fast switch in appendKeyArg does
// not name, by kind.
func appendKeyArgValue(b []byte, v any, depth int) ([]byte, error) {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer && rv.IsNil() {
		return mp.AppendNil(b), nil
	}
	if tm, ok := v.(encoding.TextMarshaler); ok {
		text, err := tm.MarshalText()
		if err != nil {
			return b, formatErr(opCacheKey, ErrUnsupported, "argument of type "+rv.Type().String()+" failed to marshal as text")
		}
		return appendKeyArgString(b, string(text))
	}
	switch rv.Kind() {
	case reflect.Bool:
		return mp.AppendBool(b, rv.Bool()), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return mp.AppendInt(b, rv.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return mp.AppendUint(b, rv.Uint()), nil
	case reflect.Float32, reflect.Float64:
		return appendKeyArgFloat(b, rv.Float()), nil
	case reflect.String:
		return appendKeyArgString(b, rv.String())
	case reflect.Pointer:
		return appendKeyArg(b, rv.Elem().Interface(), depth+1)
	case reflect.Slice:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return appendKeyArgBytes(b, rv.Bytes())
		}
		return appendKeyArgSequence(b, rv, depth+1)
	case reflect.Array:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return appendKeyArgByteArray(b, rv)
		}
		return appendKeyArgSequence(b, rv, depth+1)
	case reflect.Map:
		return appendKeyArgMap(b, rv, depth+1)
	}
	return b, formatErr(opCacheKey, ErrUnsupported, "argument of type "+rv.Type().String()+" cannot be part of a cache key")
}

// appendKeyArgFloat writes f as float64 after folding -0.0 into 0.0 and every
// NaN into the canonical quiet NaN.
func appendKeyArgFloat(b []byte, f float64) []byte {
	switch {
	case f == 0:
		f = 0
	case f != f:
		f = math.Float64frombits(keyCanonicalNaN)
	}
	return mp.AppendFloat64(b, f)
}

// appendKeyArgString writes a str after checking it is valid UTF-8 and fits a
// 32-bit length.
func appendKeyArgString(b []byte, s string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return b, formatErr(opCacheKey, ErrUnsupported, "string argument is not valid UTF-8")
	}
	if uint64(len(s)) > mp.MaxLen {
		return b, formatErr(opCacheKey, ErrTooLarge, "string argument longer than 2^32-1 bytes")
	}
	return append(mp.AppendStrHeader(b, len(s)), s...), nil
}

// appendKeyArgBytes writes a bin.
func appendKeyArgBytes(b []byte, p []byte) ([]byte, error) {
	if uint64(len(p)) > mp.MaxLen {
		return b, formatErr(opCacheKey, ErrTooLarge, "bytes argument longer than 2^32-1 bytes")
	}
	return append(mp.AppendBinHeader(b, len(p)), p...), nil
}

// appendKeyArgByteArray writes a byte array (any element type of kind uint8)
// as a bin, reading it element by element because an array held in an
// interface is not addressable.
func appendKeyArgByteArray(b []byte, rv reflect.Value) ([]byte, error) {
	n := rv.Len()
	b = mp.AppendBinHeader(b, n)
	for i := range n {
		b = append(b, byte(rv.Index(i).Uint()))
	}
	return b, nil
}

// appendKeyArgList writes a []any as an array.
func appendKeyArgList(b []byte, list []any, depth int) ([]byte, error) {
	if uint64(len(list)) > mp.MaxLen {
		return b, formatErr(opCacheKey, ErrTooLarge, "argument list longer than 2^32-1 elements")
	}
	b = mp.AppendArrayHeader(b, len(list))
	var err error
	for _, v := range list {
		if b, err = appendKeyArg(b, v, depth); err != nil {
			return b, err
		}
	}
	return b, nil
}

// appendKeyArgSequence writes any other slice or array as an array.
func appendKeyArgSequence(b []byte, rv reflect.Value, depth int) ([]byte, error) {
	n := rv.Len()
	if uint64(n) > mp.MaxLen {
		return b, formatErr(opCacheKey, ErrTooLarge, "argument list longer than 2^32-1 elements")
	}
	b = mp.AppendArrayHeader(b, n)
	var err error
	for i := range n {
		if b, err = appendKeyArg(b, rv.Index(i).Interface(), depth); err != nil {
			return b, err
		}
	}
	return b, nil
}

// appendKeyArgStringMap writes a map[string]any with its keys in ascending
// byte order, which for valid UTF-8 is ascending code point order, the order
// Python's sorted() gives str keys.
func appendKeyArgStringMap(b []byte, m map[string]any, depth int) ([]byte, error) {
	if uint64(len(m)) > mp.MaxLen {
		return b, formatErr(opCacheKey, ErrTooLarge, "map argument larger than 2^32-1 entries")
	}
	var small [8]string
	keys := small[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = mp.AppendMapHeader(b, len(keys))
	var err error
	for _, k := range keys {
		if b, err = appendKeyArgString(b, k); err != nil {
			return b, err
		}
		if b, err = appendKeyArg(b, m[k], depth); err != nil {
			return b, err
		}
	}
	return b, nil
}

// keyMapKey is one map key reduced to a sortable, encodable form.
type keyMapKey struct {
	class int // keyClassString, keyClassInt or keyClassBool
	s     string
	neg   bool  // class int: the value is negative and held in i
	i     int64 // class int, negative values
	u     uint64
	bit   bool
	value reflect.Value
}

const (
	keyClassString = iota + 1
	keyClassInt
	keyClassBool
)

// classifyKeyMapKey reduces a map key (unwrapping interfaces) to a keyMapKey.
func classifyKeyMapKey(k reflect.Value) (keyMapKey, bool) {
	for k.Kind() == reflect.Interface {
		if k.IsNil() {
			return keyMapKey{}, false
		}
		k = k.Elem()
	}
	out := keyMapKey{}
	switch k.Kind() {
	case reflect.String:
		out.class, out.s = keyClassString, k.String()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		out.class = keyClassInt
		if v := k.Int(); v < 0 {
			out.neg, out.i = true, v
		} else {
			out.u = uint64(v)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		out.class, out.u = keyClassInt, k.Uint()
	case reflect.Bool:
		out.class, out.bit = keyClassBool, k.Bool()
	default:
		return keyMapKey{}, false
	}
	return out, true
}

// compareKeyMapKeys orders two keys of one class as Python's sorted() would.
func compareKeyMapKeys(a, b keyMapKey) int {
	switch a.class {
	case keyClassString:
		return cmp.Compare(a.s, b.s)
	case keyClassBool:
		switch {
		case a.bit == b.bit:
			return 0
		case b.bit:
			return -1
		}
		return 1
	}
	switch {
	case a.neg && b.neg:
		return cmp.Compare(a.i, b.i)
	case a.neg:
		return -1
	case b.neg:
		return 1
	}
	return cmp.Compare(a.u, b.u)
}

// appendKeyArgMap writes any other map: keys sorted, all of one class, no two
// equal after normalization (a map[any]V holding int(1) and int64(1) would
// otherwise encode in map iteration order).
func appendKeyArgMap(b []byte, rv reflect.Value, depth int) ([]byte, error) {
	n := rv.Len()
	if uint64(n) > mp.MaxLen {
		return b, formatErr(opCacheKey, ErrTooLarge, "map argument larger than 2^32-1 entries")
	}
	keys := make([]keyMapKey, 0, n)
	iter := rv.MapRange()
	for iter.Next() {
		k, ok := classifyKeyMapKey(iter.Key())
		if !ok {
			return b, formatErr(opCacheKey, ErrUnsupported, "map keys must be strings, integers or bools")
		}
		if len(keys) > 0 && keys[0].class != k.class {
			return b, formatErr(opCacheKey, ErrUnsupported, "map keys mix strings, integers and bools")
		}
		k.value = iter.Value()
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareKeyMapKeys)
	for i := 1; i < len(keys); i++ {
		if compareKeyMapKeys(keys[i-1], keys[i]) == 0 {
			return b, formatErr(opCacheKey, ErrUnsupported, "map holds two keys with the same normalized value")
		}
	}
	b = mp.AppendMapHeader(b, len(keys))
	var err error
	for _, k := range keys {
		switch k.class {
		case keyClassString:
			b, err = appendKeyArgString(b, k.s)
		case keyClassBool:
			b = mp.AppendBool(b, k.bit)
		default:
			if k.neg {
				b = mp.AppendInt(b, k.i)
			} else {
				b = mp.AppendUint(b, k.u)
			}
		}
		if err != nil {
			return b, err
		}
		if b, err = appendKeyArg(b, k.value.Interface(), depth); err != nil {
			return b, err
		}
	}
	return b, nil
}

// appendKeyArgBigInt writes an arbitrary-precision integer when MessagePack
// can carry it, as Python's packer does for int.
func appendKeyArgBigInt(b []byte, x *big.Int) ([]byte, error) {
	switch {
	case x.IsInt64():
		return mp.AppendInt(b, x.Int64()), nil
	case x.Sign() > 0 && x.IsUint64():
		return mp.AppendUint(b, x.Uint64()), nil
	}
	return b, formatErr(opCacheKey, ErrUnsupported, "integer argument outside [-2^63, 2^64-1]")
}

// appendKeyArgTime writes t as the str Python's datetime.isoformat() gives
// the same instant in the same UTC offset.
func appendKeyArgTime(b []byte, t time.Time) ([]byte, error) {
	if y := t.Year(); y < 1 || y > 9999 {
		return b, formatErr(opCacheKey, ErrUnsupported, "time argument outside years 1-9999")
	}
	_, off := t.Zone()
	if off <= -86400 || off >= 86400 {
		return b, formatErr(opCacheKey, ErrUnsupported, "time argument offset is a day or more from UTC")
	}
	var scratch [48]byte
	s := t.AppendFormat(scratch[:0], "2006-01-02T15:04:05")
	if ns := t.Nanosecond(); ns != 0 {
		if ns%1000 == 0 {
			s = appendKeyDigits(append(s, '.'), ns/1000, 6)
		} else {
			s = appendKeyDigits(append(s, '.'), ns, 9)
		}
	}
	sign := byte('+')
	if off < 0 {
		sign, off = '-', -off
	}
	s = appendKeyDigits(append(s, sign), off/3600, 2)
	s = appendKeyDigits(append(s, ':'), off%3600/60, 2)
	if off%60 != 0 {
		s = appendKeyDigits(append(s, ':'), off%60, 2)
	}
	return append(mp.AppendStrHeader(b, len(s)), s...), nil
}

// appendKeyDigits appends v in decimal, zero-padded to width digits.
func appendKeyDigits(b []byte, v, width int) []byte {
	var d [10]byte
	i := len(d)
	for ; width > 0 || v > 0; width-- {
		i--
		d[i] = byte('0' + v%10)
		v /= 10
	}
	return append(b, d[i:]...)
}
