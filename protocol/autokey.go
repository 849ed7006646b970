package protocol

import "strings"

// AutoKey returns the auto-mode key of a call of function with positional
// args, for a cache configured with the integrity envelope on and the
// default serializer (MessagePack): function is "{module}.{name}", split
// at its last dot into KeySpec's Module and Function. A function without a
// module or a name is a *FormatError matching ErrInvalidKey; everything
// else is as GenerateKey.
func AutoKey(namespace, function string, args ...any) (string, error) {
	dot := strings.LastIndexByte(function, '.')
	if dot <= 0 || dot == len(function)-1 {
		return "", &FormatError{Op: "cache-key", Reason: "function must be qualified: {module}.{name}", Err: ErrInvalidKey}
	}
	return GenerateKey(KeySpec{Namespace: namespace, Module: function[:dot], Function: function[dot+1:],
		Args: args, IntegrityCheck: true, Serializer: SerializerDefault})
}
