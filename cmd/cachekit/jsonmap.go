package main

// The tool's JSON mapping, both directions. Integers are exact over the whole
// int64 and uint64 range (they never pass through float64), byte strings are
// {"$bytes": "<hex>"}, and map keys come out sorted so output is stable.
//
// Input (JSON -> value):
//
//	object        map[string]any        {"$bytes": "<hex>"} alone is []byte
//	array         []any
//	string        string
//	true/false    bool
//	null          nil
//	12, -7        int64 (uint64 above math.MaxInt64); beyond both: an error
//	1.5, 2.0, 1e3 float64 (a literal with '.', 'e' or 'E' is a float)
//
// Output (decoded msgpack -> JSON) is the reverse, plus forms that only
// appear on output: a map with a non-string key is {"$map": [[k, v], ...]}
// (pairs in stored order), an extension is {"$ext": {"type": n, "data":
// "<hex>"}}, and a NaN or infinite float is {"$float": "NaN" | "+Inf" |
// "-Inf"}. A float is always printed with a '.' or an exponent, so reading
// the output back keeps it a float.

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cachekit-io/cachekit-go/protocol"
)

// reservedTags are single-key objects the mapping keeps for typed values. Only
// $bytes is accepted as input; the others are refused rather than stored as an
// ordinary map, so a typed value from a vector file or another tool is never
// silently hashed or stored as something else.
var reservedTags = []string{"$set", "$datetime", "$uuid", "$float", "$int", "$map", "$ext"}

// parseJSON decodes exactly one JSON document into the tool's value model.
// Errors describe the defect, never the input text.
func parseJSON(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var raw any
	if err := dec.Decode(&raw); err != nil {
		return nil, usageErrorf("value is not valid JSON (%s)", jsonSyntaxReason(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, usageErrorf("value has data after the first JSON document")
	}
	return fromJSON(raw)
}

// jsonSyntaxReason names a JSON decoding error's kind and offset without the
// text around it.
func jsonSyntaxReason(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return "syntax error at byte " + strconv.FormatInt(se.Offset, 10)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "unexpected end of input"
	}
	return "cannot be decoded"
}

// fromJSON converts what encoding/json produced (with UseNumber) into the
// value model.
func fromJSON(v any) (any, error) {
	switch t := v.(type) {
	case nil, bool, string:
		return t, nil
	case json.Number:
		return parseNumber(string(t))
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			c, err := fromJSON(e)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case map[string]any:
		if len(t) == 1 {
			if h, ok := t["$bytes"]; ok {
				hs, ok := h.(string)
				if !ok {
					return nil, usageErrorf(`"$bytes" needs a hex string`)
				}
				b, err := hex.DecodeString(hs)
				if err != nil {
					return nil, usageErrorf(`"$bytes" is not valid hex`)
				}
				return b, nil
			}
			for _, tag := range reservedTags {
				if _, ok := t[tag]; ok {
					return nil, usageErrorf("the %s tag is not supported as input (only $bytes is)", tag)
				}
			}
		}
		out := make(map[string]any, len(t))
		for k, e := range t {
			c, err := fromJSON(e)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	default:
		return nil, usageErrorf("unexpected JSON type")
	}
}

// parseNumber maps a JSON number literal: integral literals to int64 (or
// uint64 above math.MaxInt64), exactly; literals with a fraction or an
// exponent to float64. Out-of-range numbers are usage errors.
func parseNumber(s string) (any, error) {
	if strings.ContainsAny(s, ".eE") {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, usageErrorf("number is outside the float64 range")
		}
		return f, nil
	}
	if strings.HasPrefix(s, "-") {
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, usageErrorf("integer is below the int64 range")
		}
		return i, nil
	}
	u, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return nil, usageErrorf("integer is above the uint64 range")
	}
	if u <= math.MaxInt64 {
		return int64(u), nil
	}
	return u, nil
}

// appendJSON appends the JSON form of a value returned by
// protocol.DecodeMsgpack (or by parseJSON) to dst.
func appendJSON(dst []byte, v any) []byte {
	switch t := v.(type) {
	case nil:
		return append(dst, "null"...)
	case bool:
		return strconv.AppendBool(dst, t)
	case int64:
		return strconv.AppendInt(dst, t, 10)
	case uint64:
		return strconv.AppendUint(dst, t, 10)
	case float64:
		return appendFloat(dst, t)
	case string:
		return appendString(dst, t)
	case []byte:
		dst = append(dst, `{"$bytes":"`...)
		dst = hex.AppendEncode(dst, t)
		return append(dst, `"}`...)
	case []any:
		dst = append(dst, '[')
		for i, e := range t {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSON(dst, e)
		}
		return append(dst, ']')
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, k)
			dst = append(dst, ':')
			dst = appendJSON(dst, t[k])
		}
		return append(dst, '}')
	case protocol.Map:
		dst = append(dst, `{"$map":[`...)
		for i, e := range t {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, '[')
			dst = appendJSON(dst, e.Key)
			dst = append(dst, ',')
			dst = appendJSON(dst, e.Value)
			dst = append(dst, ']')
		}
		return append(dst, "]}"...)
	case protocol.Ext:
		dst = append(dst, `{"$ext":{"type":`...)
		dst = strconv.AppendInt(dst, int64(t.Type), 10)
		dst = append(dst, `,"data":"`...)
		dst = hex.AppendEncode(dst, t.Data)
		return append(dst, `"}}`...)
	case int:
		return strconv.AppendInt(dst, int64(t), 10)
	default:
		return append(dst, `{"$unknown":true}`...)
	}
}

// appendFloat writes f so that it reads back as a float: shortest digits,
// plain notation between 1e-6 and 1e21 (as encoding/json), ".0" added to an
// integral value.
func appendFloat(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, `{"$float":"NaN"}`...)
	case math.IsInf(f, 1):
		return append(dst, `{"$float":"+Inf"}`...)
	case math.IsInf(f, -1):
		return append(dst, `{"$float":"-Inf"}`...)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if !bytes.ContainsAny(dst[start:], ".e") {
		dst = append(dst, ".0"...)
	}
	return dst
}

// appendString writes s as a JSON string. Invalid UTF-8 bytes become U+FFFD,
// as encoding/json does; '<', '>' and '&' are left as they are.
func appendString(dst []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20 || c == 0x7f:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}
