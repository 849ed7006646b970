package cachekit

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/cachekit-io/cachekit-go/internal/chunked"
	"github.com/cachekit-io/cachekit-go/internal/structdec"
	"github.com/cachekit-io/cachekit-go/protocol"
)

// appendWriter is an io.Writer that appends to a byte slice, so the msgpack
// encoder writes straight into a pooled scratch buffer.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = chunked.Append(w.b, p)
	return len(p), nil
}

// WriteByte lets the msgpack encoder use the writer directly instead of
// wrapping it in a buffered writer of its own (one allocation per encode).
func (w *appendWriter) WriteByte(b byte) error {
	w.b = append(w.b, b)
	return nil
}

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
	if c.interop {
		out, err := protocol.AppendCanonicalValue(s.value[:0], value)
		if err == nil {
			s.value = out
			return out, nil
		}
		if !errors.Is(err, protocol.ErrUnsupported) {
			return nil, err
		}
		raw, merr := appendMsgpack(nil, value, c.jsonTags)
		if merr != nil {
			return nil, merr
		}
		generic, derr := protocol.DecodeMsgpack(raw, protocol.DefaultDecodeLimits)
		if derr != nil {
			return nil, derr
		}
		if generic, derr = canonicalTree(generic); derr != nil {
			return nil, derr
		}
		if out, err = protocol.AppendCanonicalValue(s.value[:0], generic); err != nil {
			return nil, err
		}
		s.value = out
		return out, nil
	}
	out, err := appendMsgpack(s.value[:0], value, c.jsonTags)
	if err != nil {
		return nil, err
	}
	s.value = out
	return out, nil
}

// msgpackWriter is a pooled encoder bound to its own appendWriter, so an
// encode neither allocates the writer nor re-wraps it.
type msgpackWriter struct {
	w   appendWriter
	enc *msgpack.Encoder
}

var msgpackWriters = sync.Pool{New: func() any {
	mw := new(msgpackWriter)
	mw.enc = msgpack.NewEncoder(&mw.w)
	mw.enc.UseCompactInts(true)
	return mw
}}

// jsonTagWriters are msgpackWriters whose encoder names struct fields by
// their json tag where they have no msgpack tag (Options.StructTag "json").
var jsonTagWriters = sync.Pool{New: func() any {
	mw := new(msgpackWriter)
	mw.enc = msgpack.NewEncoder(&mw.w)
	mw.enc.UseCompactInts(true)
	mw.enc.SetCustomStructTag("json")
	return mw
}}

// appendMsgpack appends the msgpack encoding of value to dst, integers in
// their shortest width; with jsonTags, struct fields without a msgpack tag
// take their json tag's name.
func appendMsgpack(dst []byte, value any, jsonTags bool) ([]byte, error) {
	pool := &msgpackWriters
	if jsonTags {
		pool = &jsonTagWriters
	}
	mw := pool.Get().(*msgpackWriter)
	mw.w.b = dst
	err := mw.enc.Encode(value)
	out := mw.w.b
	mw.w.b = nil
	pool.Put(mw)
	if err != nil {
		return nil, fmt.Errorf("cachekit: encode value: %w", err)
	}
	return out, nil
}

// decode decodes a checked payload into dst the way this Client's mode
// wrote it.
func (c *Client) decode(payload []byte, dst any) error {
	if c.interop {
		return decodeInterop(payload, dst, c.jsonTags)
	}
	return decodeInto(payload, dst, c.jsonTags)
}

// jsonTagReader is a pooled msgpack decoder for Options.StructTag "json".
type jsonTagReader struct {
	r   bytes.Reader
	dec *msgpack.Decoder
}

var jsonTagReaders = sync.Pool{New: func() any {
	jr := new(jsonTagReader)
	jr.dec = msgpack.NewDecoder(&jr.r)
	return jr
}}

// decodeInto decodes a checked msgpack payload into dst; with jsonTags,
// struct fields without a msgpack tag are matched by their json tag's name.
func decodeInto(payload []byte, dst any, jsonTags bool) error {
	if dst == nil {
		return errors.New("cachekit: decode: nil destination")
	}
	if jsonTags {
		// msgpack's own decoder: structdec knows only msgpack tags.
		jr := jsonTagReaders.Get().(*jsonTagReader)
		jr.r.Reset(payload)
		jr.dec.Reset(&jr.r)
		jr.dec.SetCustomStructTag("json")
		err := jr.dec.Decode(dst)
		jr.r.Reset(nil)
		jsonTagReaders.Put(jr)
		if err != nil {
			return fmt.Errorf("cachekit: decode value: %w", err)
		}
		return nil
	}
	// Struct destinations of the common shapes decode without msgpack's
	// reflection; structdec reports false for everything else, and for
	// anything it is unsure of, leaving it to Unmarshal with the same result.
	if structdec.Decode(payload, dst) {
		return nil
	}
	if err := msgpack.Unmarshal(payload, dst); err != nil {
		return fmt.Errorf("cachekit: decode value: %w", err)
	}
	return nil
}

// binPayload returns the bytes of a payload that is one msgpack bin, or a
// str, so GetBytes also reads a value that was stored from a Go string.
func binPayload(p []byte) ([]byte, error) {
	if body, ok := protocol.BytesItem(p); ok {
		return body, nil
	}
	return nil, ErrNotBytes
}

// checkKey rejects keys the mode cannot store: empty keys, and in interop
// mode anything that is not an interop/v1 key.
// errEmptyKey is what every call given the key "" returns, before any I/O.
var errEmptyKey = &protocol.FormatError{Op: "cache-key", Reason: "empty key", Err: protocol.ErrInvalidKey}

func (c *Client) checkKey(key string) error {
	if key == "" {
		return errEmptyKey
	}
	if c.interop {
		return protocol.ValidateInteropKey(key)
	}
	return nil
}
