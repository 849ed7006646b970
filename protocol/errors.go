package protocol

import "errors"

// Sentinel causes a *FormatError wraps, so callers can branch with errors.Is
// without parsing messages.
var (
	// ErrMalformed: the bytes or inputs do not follow the protocol's grammar
	// (wrong type tag, arity, width, sign, truncation, trailing bytes).
	ErrMalformed = errors.New("protocol: malformed")
	// ErrTooLarge: a size limit was exceeded (envelope limits, decompression
	// ratio, AAD cap, decode bounds, key length).
	ErrTooLarge = errors.New("protocol: limit exceeded")
	// ErrChecksum: the envelope's xxHash3-64 checksum does not match the
	// decompressed bytes.
	ErrChecksum = errors.New("protocol: checksum mismatch")
	// ErrPythonFrame: the bytes carry the Python SDK's "CK" frame, which only
	// the Python SDK may decode (an auto-mode entry written by cachekit-py).
	ErrPythonFrame = errors.New("protocol: written by the Python SDK (CK frame)")
	// ErrForeignContainer: where plain MessagePack is expected, the bytes
	// have the exact shape of a ByteStorage envelope: another SDK's
	// auto-mode container (cachekit-ts stores one by default), or an entry
	// written with compression on. No SDK decodes another's auto-mode
	// container, so such bytes are refused, never unwrapped.
	ErrForeignContainer = errors.New("protocol: a ByteStorage envelope where plain msgpack is expected")
	// ErrInvalidKey: a cache key, namespace, operation or argument cannot be
	// used (grammar, reserved namespace, unsupported argument type).
	ErrInvalidKey = errors.New("protocol: invalid key")
	// ErrInvalidTTL: a TTL is zero, negative or above the protocol maximum.
	ErrInvalidTTL = errors.New("protocol: invalid ttl")
	// ErrUnsupported: a value cannot be represented in the requested encoding
	// (NaN or infinite floats, out-of-range integers, unknown Go types).
	ErrUnsupported = errors.New("protocol: unsupported value")
)

// FormatError reports what was wrong with bytes or inputs handled by this
// package. It never carries key material, plaintext values or raw cache
// keys: Reason describes the defect (a tag, a size, an offset), not the data.
type FormatError struct {
	// Op names the codec that failed: "aad", "envelope", "msgpack",
	// "canonical", "interop-key", "cache-key" or "ttl".
	Op string
	// Reason says what was wrong, in words fit for a log line.
	Reason string
	// Err is the sentinel cause (ErrMalformed, ErrTooLarge, ...).
	Err error
}

// Error implements error as "protocol: <op>: <reason>".
func (e *FormatError) Error() string { return "protocol: " + e.Op + ": " + e.Reason }

// Unwrap returns the sentinel cause.
func (e *FormatError) Unwrap() error { return e.Err }

func formatErr(op string, cause error, reason string) error {
	return &FormatError{Op: op, Reason: reason, Err: cause}
}
