package protocol

import (
	"github.com/cachekit-io/cachekit-go/protocol/internal/mp"
	"math"
	"math/big"
	"reflect"
	"time"
	"unicode/utf8"
)

// Canonical MessagePack (interop/v1): exactly one byte string per value.
//
// Every integer, str, bin, array and map header takes its shortest width,
// floats are float64 only, map keys are sorted by their UTF-8 bytes (the
// same order as Unicode code points) at every level, sets become arrays
// sorted by their elements' encoded bytes with duplicates dropped, ext
// types are never written, and anything outside the interop data model is
// an error rather than a silent coercion.
//
// Two profiles share one encoder:
//
//   - the argument profile (AppendCanonicalArgs) feeds the interop key hash.
//     An integral float inside [-2^63, 2^64) is written as the integer it
//     equals (so 2.0, 2 and -0.0/0 hash alike), and a time.Time becomes its
//     Unix timestamp in seconds (integer microseconds, floored, divided once
//     by 10^6 in float64), then follows the same number rule.
//   - the value profile (AppendCanonicalValue) writes an interop value
//     document. Floats stay float64 whatever their value, and a time.Time
//     becomes the temporal sentinel map {"__datetime__": true, "value":
//     "<ISO-8601>"} that the other SDKs revive; a Date and a TimeOfDay
//     become the {"__date__": ...} and {"__time__": ...} sentinels
//     (temporal.go). The argument profile refuses those two: interop/v1
//     keys define no argument form for them.
//
// Accepted Go types, in both profiles: nil; bool; every int and uint kind;
// float32 (widened to float64) and float64; string (must be valid UTF-8);
// []byte and byte arrays (bin); *big.Int within [-2^63, 2^64-1]; time.Time;
// Date and TimeOfDay (value profile only);
// UUID (lowercase hyphenated str); Set; slices and arrays (array); maps
// whose key kind is string (map); and pointers to any of these (a nil
// pointer is nil). Named types are accepted by their underlying kind.
// Everything else - structs, channels, funcs, interfaces with other
// dynamic types, maps with non-string keys, Ext, Map - is rejected with an
// error wrapping ErrUnsupported. NaN and infinite floats are rejected in
// both profiles.

const (
	opCanonical = "canonical"

	// maxCanonicalDepth bounds how deeply containers may nest in an encoded
	// value: the decode-bounds ceiling, so whatever this package writes its
	// reader accepts. It also stops a self-referencing slice or map.
	maxCanonicalDepth = maxDepthCeiling

	// maxCanonicalBytes caps the encoded size of one document at the
	// protocol's 512 MiB payload limit; it also bounds the work a
	// pathological (self-referencing, fan-out) argument can cause.
	maxCanonicalBytes = 512 << 20
)

// Float bounds of the argument profile's integral collapse. Both are powers
// of two and therefore exact in float64; the upper bound is exclusive.
const (
	collapseLowerIncl = -9223372036854775808.0 // -2^63
	collapseUpperExcl = 18446744073709551616.0 // 2^64
)

var (
	errNonFinite   = formatErr(opCanonical, ErrUnsupported, "NaN and infinite floats are not in the interop data model")
	errIntRange    = formatErr(opCanonical, ErrUnsupported, "integer outside [-2^63, 2^64-1]")
	errBadUTF8     = formatErr(opCanonical, ErrUnsupported, "string is not well-formed UTF-8")
	errMapKey      = formatErr(opCanonical, ErrUnsupported, "map key is not a string")
	errTooDeep     = formatErr(opCanonical, ErrTooLarge, "containers nest deeper than 1024 levels")
	errTooBig      = formatErr(opCanonical, ErrTooLarge, "encoded document exceeds 512 MiB")
	errLenTooLarge = formatErr(opCanonical, ErrTooLarge, "length does not fit a 32-bit MessagePack header")
	errTimeRange   = formatErr(opCanonical, ErrUnsupported, "time is outside the range of int64 microseconds since the epoch")
)

// AppendCanonicalArgs appends the canonical MessagePack encoding of the flat
// argument array [args[0], args[1], ...] in the argument profile, the input
// of an interop/v1 args_hash. On error it returns dst unchanged (by length)
// and an error wrapping ErrUnsupported or ErrTooLarge.
//
// In this module InteropKey calls it; it is exported so the interop/v1
// vectors check the canonical bytes themselves, not only their hash.
func AppendCanonicalArgs(dst []byte, args ...any) ([]byte, error) {
	e := canonicalEncoder{collapse: true, base: len(dst)}
	if len(args) > mp.MaxLen {
		return dst, errLenTooLarge
	}
	out := mp.AppendArrayHeader(dst, len(args))
	var err error
	for _, a := range args {
		if out, err = e.append(out, a, 1); err != nil {
			return dst[:e.base], err
		}
	}
	return out, nil
}

// AppendCanonicalValue appends the canonical MessagePack encoding of one
// interop value document in the value profile (floats stay float64,
// time.Time becomes the datetime sentinel map). On error it returns dst
// unchanged (by length) and an error wrapping ErrUnsupported or ErrTooLarge.
func AppendCanonicalValue(dst []byte, v any) ([]byte, error) {
	e := canonicalEncoder{collapse: false, base: len(dst)}
	out, err := e.append(dst, v, 0)
	if err != nil {
		return dst[:e.base], err
	}
	return out, nil
}

// canonicalEncoder carries the profile through the recursion.
type canonicalEncoder struct {
	collapse bool // argument profile: integral floats become ints
	base     int  // len(dst) on entry, for the size cap and error rollback
}

// append encodes v at nesting depth depth (the number of enclosing
// containers). The fast cases cover the types a caller most often passes;
// everything else goes through reflection.
func (e *canonicalEncoder) append(dst []byte, v any, depth int) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return mp.AppendNil(dst), nil
	case bool:
		return mp.AppendBool(dst, x), nil
	case int:
		return mp.AppendInt(dst, int64(x)), nil
	case int64:
		return mp.AppendInt(dst, x), nil
	case int32:
		return mp.AppendInt(dst, int64(x)), nil
	case int16:
		return mp.AppendInt(dst, int64(x)), nil
	case int8:
		return mp.AppendInt(dst, int64(x)), nil
	case uint:
		return mp.AppendUint(dst, uint64(x)), nil
	case uint64:
		return mp.AppendUint(dst, x), nil
	case uint32:
		return mp.AppendUint(dst, uint64(x)), nil
	case uint16:
		return mp.AppendUint(dst, uint64(x)), nil
	case uint8:
		return mp.AppendUint(dst, uint64(x)), nil
	case float64:
		return e.appendFloat(dst, x)
	case float32:
		return e.appendFloat(dst, float64(x))
	case string:
		return e.appendString(dst, x)
	case []byte:
		return e.appendBytes(dst, x)
	case *big.Int:
		return appendBigInt(dst, x)
	case time.Time:
		return e.appendTime(dst, x)
	case Date:
		if e.collapse {
			return dst, errTemporalArg
		}
		return appendDateSentinel(dst, x)
	case TimeOfDay:
		if e.collapse {
			return dst, errTemporalArg
		}
		return appendTimeSentinel(dst, x)
	case UUID:
		return mp.AppendStr(dst, x.String()), nil
	case Set:
		return e.appendSet(dst, x, depth)
	case []any:
		return e.appendSlice(dst, x, depth)
	case map[string]any:
		return e.appendStringMap(dst, x, depth)
	case Ext, Map:
		return dst, formatErr(opCanonical, ErrUnsupported, "ext types and non-string map keys are not in the interop data model")
	}
	return e.appendReflect(dst, reflect.ValueOf(v), depth)
}

// appendFloat applies the profile's number rule.
func (e *canonicalEncoder) appendFloat(dst []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, errNonFinite
	}
	if e.collapse && f == math.Trunc(f) && f >= collapseLowerIncl && f < collapseUpperExcl {
		if f < 0 {
			return mp.AppendInt(dst, int64(f)), nil
		}
		return mp.AppendUint(dst, uint64(f)), nil // -0.0 lands here as 0
	}
	return mp.AppendFloat64(dst, f), nil
}

// appendString writes a well-formed UTF-8 string as str. Go strings may
// hold arbitrary bytes (including encoded surrogates), which the data model
// forbids rather than repairs.
func (e *canonicalEncoder) appendString(dst []byte, s string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return dst, errBadUTF8
	}
	if len(s) > mp.MaxLen {
		return dst, errLenTooLarge
	}
	return e.checkSize(mp.AppendStr(dst, s))
}

// appendBytes writes b as bin.
func (e *canonicalEncoder) appendBytes(dst []byte, b []byte) ([]byte, error) {
	if len(b) > mp.MaxLen {
		return dst, errLenTooLarge
	}
	return e.checkSize(mp.AppendBin(dst, b))
}

// appendBigInt writes an arbitrary-precision integer when it lies within
// the interop range; a nil pointer is nil like any other nil pointer.
func appendBigInt(dst []byte, x *big.Int) ([]byte, error) {
	switch {
	case x == nil:
		return mp.AppendNil(dst), nil
	case x.IsInt64():
		return mp.AppendInt(dst, x.Int64()), nil
	case x.IsUint64():
		return mp.AppendUint(dst, x.Uint64()), nil
	default:
		return dst, errIntRange
	}
}

// appendSlice writes an array, elements in order.
func (e *canonicalEncoder) appendSlice(dst []byte, xs []any, depth int) ([]byte, error) {
	if depth >= maxCanonicalDepth {
		return dst, errTooDeep
	}
	if len(xs) > mp.MaxLen {
		return dst, errLenTooLarge
	}
	out := mp.AppendArrayHeader(dst, len(xs))
	var err error
	for _, x := range xs {
		if out, err = e.append(out, x, depth+1); err != nil {
			return dst, err
		}
	}
	return e.checkSize(out)
}

// checkSize enforces maxCanonicalBytes on what this call has written.
func (e *canonicalEncoder) checkSize(dst []byte) ([]byte, error) {
	if len(dst)-e.base > maxCanonicalBytes {
		return dst[:e.base], errTooBig
	}
	return dst, nil
}
