package protocol

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The interop vectors spell their inputs in tagged JSON: single-key objects
// whose key starts with '$' carry a type JSON cannot ($set, $bytes,
// $datetime, $uuid, $float, $int); everything else maps directly, and a
// bare JSON number is always a safe integer. iopFromTagged turns that into
// the Go values the canonical encoders take, keeping integers exact.

// iopNaiveDateTime stands in for a date-time without a UTC offset. Go's
// time.Time always has a location, so the only way such a value reaches the
// encoder is as some civil-time type, which the closed data model rejects.
type iopNaiveDateTime struct{ wall string }

// iopDecodeTagged parses raw with exact numbers and converts it.
func iopDecodeTagged(tb testing.TB, raw json.RawMessage) any {
	tb.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		tb.Fatalf("tagged json: %v", err)
	}
	out, err := iopFromTagged(v)
	if err != nil {
		tb.Fatalf("tagged json: %v", err)
	}
	return out
}

// iopDecodeTaggedArgs converts a vector's "args" array.
func iopDecodeTaggedArgs(tb testing.TB, raw json.RawMessage) []any {
	tb.Helper()
	args, ok := iopDecodeTagged(tb, raw).([]any)
	if !ok {
		tb.Fatalf("tagged json: args is not an array")
	}
	return args
}

func iopFromTagged(v any) (any, error) {
	switch x := v.(type) {
	case nil, bool, string:
		return x, nil
	case json.Number:
		return iopExactInt(x.String())
	case map[string]any:
		if len(x) == 1 {
			for k, val := range x {
				if strings.HasPrefix(k, "$") {
					return iopFromTag(k, val)
				}
			}
		}
	}
	if out, ok, err := MapJSONContainer(v, iopFromTagged); ok {
		return out, err
	}
	return nil, errors.New("unexpected JSON type")
}

// MapJSONContainer rebuilds a decoded JSON array ([]any) or object
// (map[string]any) with conv applied to each element, and reports whether v
// was one; the first error conv returns is returned. It is exported, in a
// test file only, so that the protocol_test vector loaders (ckConvertJSON)
// walk JSON the same way.
func MapJSONContainer(v any, conv func(any) (any, error)) (out any, ok bool, err error) {
	switch x := v.(type) {
	case []any:
		list := make([]any, len(x))
		for i, e := range x {
			if list[i], err = conv(e); err != nil {
				return nil, true, err
			}
		}
		return list, true, nil
	case map[string]any:
		obj := make(map[string]any, len(x))
		for k, e := range x {
			if obj[k], err = conv(e); err != nil {
				return nil, true, err
			}
		}
		return obj, true, nil
	}
	return nil, false, nil
}

func iopFromTag(tag string, val any) (any, error) {
	if tag == "$set" {
		elems, ok := val.([]any)
		if !ok {
			return nil, errors.New("$set is not an array")
		}
		conv, err := iopFromTagged(elems)
		if err != nil {
			return nil, err
		}
		return Set(conv.([]any)), nil
	}
	s, ok := val.(string)
	if !ok {
		return nil, errors.New(tag + " is not a string")
	}
	switch tag {
	case "$bytes":
		return hex.DecodeString(s)
	case "$uuid":
		return ParseUUID(s)
	case "$int":
		return iopExactInt(s)
	case "$float":
		f, err := strconv.ParseFloat(s, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) { // 1e999 is +Inf on purpose
			return nil, err
		}
		return f, nil
	case "$datetime":
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return t, nil
		}
		if _, err := time.Parse("2006-01-02T15:04:05.999999999", s); err == nil {
			return iopNaiveDateTime{wall: s}, nil
		}
		return nil, errors.New("unparseable $datetime")
	}
	return nil, errors.New("unknown tag " + tag)
}

// iopExactInt returns int64 when s fits it, uint64 when it fits that, and
// *big.Int otherwise (the out-of-range error vectors).
func iopExactInt(s string) (any, error) {
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return nil, errors.New("not a decimal integer")
	}
	switch {
	case n.IsInt64():
		return n.Int64(), nil
	case n.IsUint64():
		return n.Uint64(), nil
	}
	return n, nil
}

// iopHex decodes a hex string from a vector.

func TestTaggedJSONConverter(t *testing.T) {
	raw := json.RawMessage(`[18446744073709551615, {"$int": "18446744073709551616"}, {"$float": "1e999"},
		{"$float": "2.0"}, {"$set": [1]}, {"$datetime": "2024-01-01T00:00:00"}, {"$uuid": "550E8400-E29B-41D4-A716-446655440000"},
		{"$bytes": "00ff"}, {"a": {"$int": "-1"}}]`)
	got := iopDecodeTaggedArgs(t, raw)
	if got[0] != uint64(18446744073709551615) {
		t.Errorf("large bare integer lost precision: %T %v", got[0], got[0])
	}
	if b, ok := got[1].(*big.Int); !ok || b.String() != "18446744073709551616" {
		t.Errorf("$int beyond uint64 = %T", got[1])
	}
	if f, ok := got[2].(float64); !ok || f <= 1e308 {
		t.Errorf("1e999 = %v, want +Inf", got[2])
	}
	if _, ok := got[3].(float64); !ok {
		t.Errorf("$float 2.0 = %T, want float64", got[3])
	}
	if _, ok := got[4].(Set); !ok {
		t.Errorf("$set = %T", got[4])
	}
	if _, ok := got[5].(iopNaiveDateTime); !ok {
		t.Errorf("naive $datetime = %T", got[5])
	}
	if u, ok := got[6].(UUID); !ok || u.String() != "550e8400-e29b-41d4-a716-446655440000" {
		t.Errorf("$uuid = %v", got[6])
	}
	if b, ok := got[7].([]byte); !ok || !bytes.Equal(b, []byte{0, 0xff}) {
		t.Errorf("$bytes = %v", got[7])
	}
	if m, ok := got[8].(map[string]any); !ok || m["a"] != int64(-1) {
		t.Errorf("nested tag = %v", got[8])
	}
}
