package protocol

import (
	"encoding/hex"
	"reflect"
	"unicode/utf8"

	"golang.org/x/crypto/blake2b"
)

// Canonical serializer names of the key format's code table. The last
// character of an auto-mode key names which one the cache is configured
// with; any other identity takes a derived code (see SerializerCode).
const (
	// SerializerDefault is the MessagePack serializer (code "s"): the only
	// one cachekit-go writes.
	SerializerDefault = "default"
	// SerializerAuto is cachekit-py's type-sniffing serializer (code "a").
	SerializerAuto = "auto"
	// SerializerOrjson is cachekit-py's JSON serializer (code "o").
	SerializerOrjson = "orjson"
	// SerializerArrow is cachekit-py's columnar serializer (code "w").
	SerializerArrow = "arrow"
	// SerializerLocal is reference caching without serialization (code "l").
	SerializerLocal = "local"
)

// serializerObjectMarker prefixes the identity of a serializer given as a
// value rather than a name. It contains '<', which no Go type name and no
// table name or alias contains, so a type named "auto" cannot take code "a".
const serializerObjectMarker = "<custom>:"

// CanonicalSerializer resolves an accepted alias spelling to its canonical
// name and returns every other identity unchanged. The aliases are the two
// cachekit-py accepts, "std" for "default" and "pythonic" for "auto", so a
// cachekit-go key for a given configuration ends like cachekit-py's.
// ("standard", which cachekit-py's cache rejects, is not an alias.)
//
// In this module SerializerCode calls it (for GenerateKey, which
// cachekit.AutoKey uses); it is exported so the cache-key vectors check
// each step on its own.
func CanonicalSerializer(identity string) string {
	switch identity {
	case "std":
		return SerializerDefault
	case "pythonic":
		return SerializerAuto
	}
	return identity
}

// SerializerCode returns the code an auto-mode key ends with for a
// serializer identity: one character for the table names (after alias
// resolution), otherwise "x" followed by the 4 lowercase hex digits of the
// identity's 2-byte Blake2b digest. An empty or non-UTF-8 identity is an
// error, never a default code: a fallback code would key entries nothing
// wrote.
//
// In this module GenerateKey calls it (cachekit.AutoKey); it is exported so
// the cache-key vectors check each step on its own.
func SerializerCode(identity string) (string, error) {
	if identity == "" {
		return "", formatErr(opCacheKey, ErrInvalidKey, "serializer identity is empty")
	}
	if !utf8.ValidString(identity) {
		return "", formatErr(opCacheKey, ErrInvalidKey, "serializer identity is not valid UTF-8")
	}
	switch CanonicalSerializer(identity) {
	case SerializerDefault:
		return "s", nil
	case SerializerAuto:
		return "a", nil
	case SerializerOrjson:
		return "o", nil
	case SerializerArrow:
		return "w", nil
	case SerializerLocal:
		return "l", nil
	}
	h, err := blake2b.New(2, nil)
	if err != nil { // unreachable: size 2 with no key is always valid
		return "", formatErr(opCacheKey, ErrInvalidKey, "serializer digest unavailable")
	}
	h.Write([]byte(identity))
	var sum [2]byte
	var code [5]byte
	code[0] = 'x'
	hex.Encode(code[1:], h.Sum(sum[:0]))
	return string(code[:]), nil
}

// SerializerIdentity reduces whatever a cache is configured with to the
// string identity SerializerCode takes. A string is a name and is returned
// as is (empty is an error). Any other value is a serializer object: its
// identity is "<custom>:" followed by the bare name of its defined type,
// pointers followed, so it never takes a table code, two values of one type
// always share an identity, and nothing process-local enters it. nil, values
// of predeclared types (bool, int, float64, ...) and values of unnamed types
// are errors: they name no serializer.
//
// No code in this module calls it: cachekit.AutoKey takes a serializer
// name. It is exported for callers configured with a serializer value, and
// the cache-key vectors that name one check it.
func SerializerIdentity(serializer any) (string, error) {
	if s, ok := serializer.(string); ok {
		if s == "" {
			return "", formatErr(opCacheKey, ErrInvalidKey, "serializer identity is empty")
		}
		return s, nil
	}
	if serializer == nil {
		return "", formatErr(opCacheKey, ErrInvalidKey, "serializer identity is nil")
	}
	t := reflect.TypeOf(serializer)
	for t.Kind() == reflect.Pointer && t.Name() == "" {
		t = t.Elem()
	}
	if t.Name() == "" || t.PkgPath() == "" {
		return "", formatErr(opCacheKey, ErrInvalidKey, "serializer of type "+t.String()+" is neither a name nor a defined serializer type")
	}
	return serializerObjectMarker + t.Name(), nil
}
