package codec

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/cachekit-io/cachekit-go/internal/chunked"
	"github.com/cachekit-io/cachekit-go/internal/structdec"
)

// appendWriter is an io.Writer that appends to a byte slice, so the msgpack
// encoder writes straight into the caller's dst.
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

// Append appends the msgpack encoding of v to dst and returns the extended
// slice, integers in their shortest width (structs become maps keyed by
// field name or `msgpack` tag). With jsonTags, struct fields without a
// msgpack tag take their json tag's name. On error it returns nil, and what
// was appended to dst's spare capacity is left there, not cleared.
func Append(dst []byte, v any, jsonTags bool) ([]byte, error) {
	pool := &msgpackWriters
	if jsonTags {
		pool = &jsonTagWriters
	}
	mw := pool.Get().(*msgpackWriter)
	mw.w.b = dst
	err := mw.enc.Encode(v)
	out := mw.w.b
	mw.w.b = nil
	pool.Put(mw)
	if err != nil {
		return nil, fmt.Errorf("cachekit: encode value: %w", err)
	}
	return out, nil
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

// Decode decodes a checked msgpack payload (one the caller has bounded, see
// the package doc) into dst, which must be a non-nil pointer. With
// jsonTags, struct fields without a msgpack tag are matched by their json
// tag's name. Struct destinations of the common shapes go through
// internal/structdec, everything else through msgpack.Unmarshal, with the
// same result.
func Decode(payload []byte, dst any, jsonTags bool) error {
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
