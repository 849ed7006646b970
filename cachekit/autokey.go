package cachekit

import (
	"strings"

	"github.com/cachekit-io/cachekit-go/protocol"
)

// AutoKey returns the CacheKit protocol's auto-mode key for a call of
// function with args, the key every CacheKit SDK's decorator derives for
// the same call ("ns:{namespace}:func:{function}:args:{hash}:1s", at most
// 250 characters): function is the function's qualified name,
// "{module}.{name}" (a Go package path and function name, or a Python
// function's __module__ and __qualname__), namespace may be empty (no ns:
// segment). The key is the one for a cache configured as this SDK is by
// default (the integrity envelope on, MessagePack), with positional
// arguments only; protocol.GenerateKey takes the other settings and named
// arguments. Arguments may be nil, bool, integers, floats, strings, []byte,
// time.Time, protocol.UUID, protocol.Set, slices and string-keyed maps.
// Errors match protocol.ErrInvalidKey (no module or name in function,
// invalid UTF-8) or protocol.ErrUnsupported (an argument of another type),
// and never echo the arguments.
func AutoKey(namespace, function string, args ...any) (string, error) {
	dot := strings.LastIndexByte(function, '.')
	if dot <= 0 || dot == len(function)-1 {
		return "", &FormatError{Op: "cache-key", Reason: "function must be qualified: {module}.{name}", Err: protocol.ErrInvalidKey}
	}
	return protocol.GenerateKey(protocol.KeySpec{
		Namespace:      namespace,
		Module:         function[:dot],
		Function:       function[dot+1:],
		Args:           args,
		IntegrityCheck: true,
		Serializer:     protocol.SerializerDefault,
	})
}
