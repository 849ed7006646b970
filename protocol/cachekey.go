package protocol

import (
	"encoding/hex"
	"unicode/utf8"

	"golang.org/x/crypto/blake2b"
)

// Auto-mode cache keys (cache-key-format.md) name one call of one function:
//
//	ns:{namespace}:func:{module}.{function}:args:{hash}:{ic}{code}
//
// The ns: segment is left out when the namespace is empty. {hash} is the
// lowercase hex Blake2b-256 of the arguments (see AppendKeyArgs), {ic} is 1
// when values are stored in the checksummed envelope and 0 otherwise, and
// {code} names the serializer (see SerializerCode). Spaces, line feeds and
// carriage returns anywhere in the key become underscores, and a key longer
// than MaxKeyLength characters is shortened to a fixed-size digest form.
//
// These keys are SDK-internal: the func: segment is language-specific, so no
// other SDK reproduces them. Cross-SDK sharing uses interop keys instead.

// opCacheKey is the FormatError.Op of every error key generation returns.
const opCacheKey = "cache-key"

// MaxKeyLength is the longest auto-mode key, in characters (Unicode code
// points, not bytes). A longer key is replaced by its first
// keyShortPrefix characters, a colon and 32 hex digits of the Blake2b-256
// digest of the whole key: 83 characters.
const MaxKeyLength = 250

// keyShortPrefix is how many leading characters a shortened key keeps.
const keyShortPrefix = 50

// keyShortDigestBytes is how many digest bytes (twice as many hex digits) a
// shortened key ends with.
const keyShortDigestBytes = 16

// KeySpec is one call to turn into an auto-mode cache key.
type KeySpec struct {
	// Namespace prefixes the key as "ns:{Namespace}:"; empty leaves the
	// segment out. It must be valid UTF-8. default: "" (no segment).
	Namespace string
	// Module identifies where the function lives: a Go package path, or a
	// Python function's __module__ when reproducing cachekit-py keys.
	// Required, valid UTF-8.
	Module string
	// Function is the function's name within Module (Python: __qualname__).
	// Required, valid UTF-8.
	Function string
	// Args are the positional arguments; see AppendKeyArgs for the types
	// accepted. default: nil (no arguments).
	Args []any
	// Kwargs are the named arguments, hashed in ascending name order.
	// default: nil (none).
	Kwargs map[string]any
	// IntegrityCheck is true when the cache stores values in the checksummed
	// ByteStorage envelope (flag 1) and false when it stores bare MessagePack
	// (flag 0). default: false, so set it to match the cache's configuration.
	IntegrityCheck bool
	// Serializer is the identity of the serializer the cache is configured
	// with: a table name (SerializerDefault, ...), an alias ("std",
	// "pythonic") or any other identity, such as one SerializerIdentity
	// returns for a serializer value. Required: there is no default code.
	Serializer string
}

// GenerateKey returns the auto-mode cache key for spec, at most MaxKeyLength
// characters long. Errors are *FormatError values wrapping ErrInvalidKey (a
// missing or malformed segment or serializer identity), ErrUnsupported (an
// argument that cannot be normalized) or ErrTooLarge (arguments nested beyond
// MaxKeyArgsDepth or beyond MessagePack's 32-bit lengths); they never echo
// the namespace, names or argument values.
func GenerateKey(spec KeySpec) (string, error) {
	code, err := SerializerCode(spec.Serializer)
	if err != nil {
		return "", err
	}
	if spec.Module == "" || spec.Function == "" {
		return "", formatErr(opCacheKey, ErrInvalidKey, "module and function are required")
	}
	if !utf8.ValidString(spec.Namespace) || !utf8.ValidString(spec.Module) || !utf8.ValidString(spec.Function) {
		return "", formatErr(opCacheKey, ErrInvalidKey, "namespace, module and function must be valid UTF-8")
	}
	sum, err := ArgsHash(spec.Args, spec.Kwargs)
	if err != nil {
		return "", err
	}

	n := len("ns::func:.:args::") + len(spec.Namespace) + len(spec.Module) + len(spec.Function) +
		2*len(sum) + 1 + len(code)
	var scratch [MaxKeyLength]byte
	b := scratch[:0]
	if n > len(scratch) {
		b = make([]byte, 0, n)
	}
	if spec.Namespace != "" {
		b = append(b, "ns:"...)
		b = append(b, spec.Namespace...)
		b = append(b, ':')
	}
	b = append(b, "func:"...)
	b = append(b, spec.Module...)
	b = append(b, '.')
	b = append(b, spec.Function...)
	b = append(b, ":args:"...)
	b = hex.AppendEncode(b, sum[:])
	b = append(b, ':')
	if spec.IntegrityCheck {
		b = append(b, '1')
	} else {
		b = append(b, '0')
	}
	b = append(b, code...)
	return finishKey(b), nil
}

// finishKey applies the whole-key rules to an assembled key: spaces, line
// feeds and carriage returns become underscores (in place: these ASCII bytes
// never occur inside a multi-byte UTF-8 sequence), then a key longer than
// MaxKeyLength characters takes its shortened form.
func finishKey(b []byte) string {
	for i, c := range b {
		if c == ' ' || c == '\n' || c == '\r' {
			b[i] = '_'
		}
	}
	if len(b) <= MaxKeyLength || utf8.RuneCount(b) <= MaxKeyLength {
		return string(b)
	}
	return shortenKey(b)
}

// shortenKey returns the first keyShortPrefix characters of an over-long key,
// a colon, and the first 32 hex digits of the Blake2b-256 digest of the
// whole key's UTF-8 bytes.
func shortenKey(b []byte) string {
	sum := blake2b.Sum256(b)
	cut := 0
	for range keyShortPrefix {
		_, size := utf8.DecodeRune(b[cut:])
		cut += size
	}
	var scratch [keyShortPrefix*utf8.UTFMax + 1 + 2*keyShortDigestBytes]byte
	out := append(scratch[:0], b[:cut]...)
	out = append(out, ':')
	out = hex.AppendEncode(out, sum[:keyShortDigestBytes])
	return string(out)
}
