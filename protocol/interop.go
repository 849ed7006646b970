package protocol

import (
	"encoding/hex"
	"strings"
	"sync"

	"golang.org/x/crypto/blake2b"
)

// interop/v1 cache keys: "{namespace}:{operation}:{args_hash}".
//
// namespace and operation are caller-chosen segments of 1 to 64 characters
// from [a-z0-9._-], starting with a letter or digit, matched against the
// whole string (a trailing newline is a defect, not a terminator). Neither
// may contain "..", and the namespace may not be exactly "ns" or "nsapi"
// (the hosted backend reads those prefixes as its own namespace syntax).
// args_hash is the unkeyed BLAKE2b-256 digest of AppendCanonicalArgs,
// written as 64 lowercase hex digits. The longest key is 194 characters,
// so the auto-mode 250-character rule never applies.

const (
	opInteropKey = "interop-key"

	// InteropSegmentMaxLen is the longest namespace or operation, in bytes.
	InteropSegmentMaxLen = 64
	// InteropHashLen is the length of args_hash in characters: a 32-byte
	// BLAKE2b-256 digest in lowercase hex.
	InteropHashLen = 2 * blake2b.Size256
	// InteropKeyMaxLen is the longest possible interop key in bytes.
	InteropKeyMaxLen = 2*InteropSegmentMaxLen + InteropHashLen + 2
)

// maxPooledScratch is the largest encoding buffer InteropKey keeps for
// reuse; rarer, larger argument lists get a fresh buffer each time.
const maxPooledScratch = 4 << 10

// interopScratch recycles the canonical-argument buffers of InteropKey, so
// computing a key allocates only the returned string.
var interopScratch = sync.Pool{New: func() any {
	b := make([]byte, 0, 256)
	return &b
}}

// InteropKey returns the interop/v1 key for one call: the segments are
// validated first (errors wrap ErrInvalidKey), then the arguments are
// canonically encoded (errors wrap ErrUnsupported or ErrTooLarge) and
// hashed. args is the full effective argument list in declaration order.
func InteropKey(namespace, operation string, args ...any) (string, error) {
	if err := ValidateInteropSegments(namespace, operation); err != nil {
		return "", err
	}
	bp := interopScratch.Get().(*[]byte)
	enc, err := AppendCanonicalArgs((*bp)[:0], args...)
	var sum [blake2b.Size256]byte
	if err == nil {
		sum = blake2b.Sum256(enc)
	}
	if cap(enc) <= maxPooledScratch {
		clear(enc) // the arguments do not linger in pooled memory
		*bp = enc[:0]
		interopScratch.Put(bp)
	}
	if err != nil {
		return "", err
	}
	var key [InteropKeyMaxLen]byte
	k := append(key[:0], namespace...)
	k = append(k, ':')
	k = append(k, operation...)
	k = append(k, ':')
	k = hex.AppendEncode(k, sum[:])
	return string(k), nil
}

// ValidateInteropSegments checks a namespace and an operation against the
// segment grammar, the ".." ban and the reserved namespaces. SDK callers
// run it when an interop function is registered, so a bad segment fails at
// start-up rather than on the first call. Errors wrap ErrInvalidKey and
// name the segment and the rule, never the segment text.
//
// In this module InteropKey and ValidateInteropKey call it; it is exported
// for the start-up check described above.
func ValidateInteropSegments(namespace, operation string) error {
	if reason := segmentDefect(namespace); reason != "" {
		return formatErr(opInteropKey, ErrInvalidKey, "namespace "+reason)
	}
	if namespace == "ns" || namespace == "nsapi" {
		return formatErr(opInteropKey, ErrInvalidKey, "namespace is one of the two names the server reserves for its own prefixes")
	}
	if reason := segmentDefect(operation); reason != "" {
		return formatErr(opInteropKey, ErrInvalidKey, "operation "+reason)
	}
	return nil
}

// ValidateInteropKey reports whether key is a well-formed interop/v1 key:
// exactly two ':' separators, valid segments and a 64-digit lowercase hex
// args_hash. It cannot tell whether the hash matches any arguments. Errors
// wrap ErrInvalidKey.
func ValidateInteropKey(key string) error {
	if len(key) > InteropKeyMaxLen {
		return formatErr(opInteropKey, ErrInvalidKey, "key is longer than 194 bytes")
	}
	first := strings.IndexByte(key, ':')
	if first < 0 {
		return formatErr(opInteropKey, ErrInvalidKey, "key has no ':' separator")
	}
	rest := key[first+1:]
	second := strings.IndexByte(rest, ':')
	if second < 0 {
		return formatErr(opInteropKey, ErrInvalidKey, "key has one ':' separator, want two")
	}
	if err := ValidateInteropSegments(key[:first], rest[:second]); err != nil {
		return err
	}
	hash := rest[second+1:]
	if len(hash) != InteropHashLen {
		return formatErr(opInteropKey, ErrInvalidKey, "args_hash is not 64 characters")
	}
	for i := 0; i < len(hash); i++ {
		c := hash[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return formatErr(opInteropKey, ErrInvalidKey, "args_hash is not lowercase hex")
		}
	}
	return nil
}

// segmentDefect returns why s is not a valid segment, or "" when it is.
// The check is byte-wise, so any non-ASCII byte fails it.
func segmentDefect(s string) string {
	switch {
	case len(s) == 0:
		return "is empty"
	case len(s) > InteropSegmentMaxLen:
		return "is longer than 64 characters"
	case !isSegmentLead(s[0]):
		return "must start with a lowercase ASCII letter or a digit"
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !isSegmentLead(c) && c != '.' && c != '_' && c != '-' {
			return "holds a character outside [a-z0-9._-]"
		}
		if c == '.' && s[i-1] == '.' {
			return "contains '..'"
		}
	}
	return ""
}

// isSegmentLead reports whether c may start a segment: [a-z0-9].
func isSegmentLead(c byte) bool {
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
}
