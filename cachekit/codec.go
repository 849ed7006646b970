package cachekit

import (
	"fmt"

	"github.com/cachekit-io/cachekit-go/internal/codec"
	"github.com/cachekit-io/cachekit-go/protocol"
)

// The value codec itself (msgpack in auto mode, the protocol's canonical
// msgpack in interop mode, their pools) is internal/codec; this file binds
// it to a Client's mode and bounds.

// encode turns a caller's value into the msgpack payload, in s.value.
// Auto mode uses vmihailenco/msgpack with shortest-width integers (structs
// become maps keyed by field name or `msgpack` tag). Interop mode writes
// the protocol's canonical encoding, going through a generic decode when
// the value is a struct or another type the canonical writer does not take.
// A payload the read path would refuse is refused here, before any write.
func (c *Client) encode(s *scratch, value any) ([]byte, error) {
	out, err := c.encodeValue(s, value)
	if err != nil {
		return nil, err
	}
	if len(out) > c.maxValue {
		return nil, fmt.Errorf("%w: %d bytes encoded, MaxValueBytes %d", ErrValueTooLarge, len(out), c.maxValue)
	}
	// Refuse what no Get could read back (nesting past the decoder's depth
	// bound, more than its size bound) before anything is written.
	if err := protocol.CheckMsgpack(out, c.limits); err != nil {
		return nil, fmt.Errorf("cachekit: value would not read back: %w", err)
	}
	return out, nil
}

// encodeValue is encode without the read-back check.
func (c *Client) encodeValue(s *scratch, value any) ([]byte, error) {
	if b, ok := value.([]byte); ok && b == nil {
		value = []byte{} // a nil []byte reads back through GetBytes as empty, not as "not bytes"
	}
	var out []byte
	var err error
	if c.interop {
		out, err = codec.AppendInterop(s.value[:0], value, c.jsonTags)
	} else {
		out, err = codec.Append(s.value[:0], value, c.jsonTags)
	}
	if err != nil {
		return nil, err
	}
	s.value = out
	return out, nil
}

// decode decodes a checked payload into dst the way this Client's mode
// wrote it.
func (c *Client) decode(payload []byte, dst any) error {
	if c.interop {
		return codec.DecodeInterop(payload, dst, c.jsonTags)
	}
	return codec.Decode(payload, dst, c.jsonTags)
}

// errEmptyKey is what every call given the key "" returns, before any I/O.
var errEmptyKey = &protocol.FormatError{Op: "cache-key", Reason: "empty key", Err: protocol.ErrInvalidKey}

// checkKey rejects keys the mode cannot store: empty keys, and in interop
// mode anything that is not an interop/v1 key.
func (c *Client) checkKey(key string) error {
	if key == "" {
		return errEmptyKey
	}
	if c.interop {
		return protocol.ValidateInteropKey(key)
	}
	return nil
}
