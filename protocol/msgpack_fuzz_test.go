package protocol

import (
	"bytes"
	"testing"

	"github.com/cachekit-io/cachekit-go/internal/vectors"
)

// FuzzBoundedDecode drives arbitrary bytes through both untrusted-decode
// entry points. They must never panic, must agree on every verdict (the
// same error value), must match the reference walk, and whatever they
// accept and the canonical writer can express must re-encode stably.
func FuzzBoundedDecode(f *testing.F) {
	seeds := 0
	for _, group := range []string{"reject_vectors", "accept_vectors"} {
		for _, r := range vectors.DecodeBounds(f, group) {
			f.Add(iopBoundsInput(f, r))
			seeds++
		}
	}
	for _, group := range []string{"reader_accept_vectors", "reader_reject_vectors"} {
		for _, r := range vectors.Group[iopReaderRow](f, "interop-mode.json", group) {
			f.Add(vectors.Hex(f, r.MsgpackHex))
			seeds++
		}
	}
	for _, r := range vectors.Group[iopValueRow](f, "interop-mode.json", "value_vectors") {
		f.Add(vectors.Hex(f, r.CanonicalMsgpackHex))
		seeds++
	}
	f.Add(vectors.Hex(f, iopCKFrame))
	seeds++
	if seeds == 0 {
		f.Fatal("no seeds: the vector groups yielded nothing")
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		iopAgree(t, "fuzz", in)
		v, err := DecodeMsgpack(in, DecodeLimits{})
		if err != nil {
			return
		}
		enc, err := AppendCanonicalValue(nil, v)
		if err != nil {
			return // NaN, invalid UTF-8, Ext, non-string keys: outside the model
		}
		v2, err := DecodeMsgpack(enc, DecodeLimits{})
		if err != nil {
			t.Fatalf("canonical output rejected: %v", err)
		}
		enc2, err := AppendCanonicalValue(nil, v2)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("canonical value encoding is not idempotent")
		}
	})
}

// FuzzCanonicalArgs decodes arbitrary argument arrays and re-encodes them in
// the argument profile: canonical output must decode, and encoding it
// again must give the same bytes. Seeds are the key vectors' canonical
// argument arrays, which must come back byte for byte.
func FuzzCanonicalArgs(f *testing.F) {
	rows := vectors.Group[iopKeyRow](f, "interop-mode.json", "key_vectors")
	for _, r := range rows {
		f.Add(vectors.Hex(f, r.CanonicalArgsHex))
	}
	if len(rows) == 0 {
		f.Fatal("no seeds: key_vectors yielded nothing")
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		v, err := DecodeMsgpack(in, DecodeLimits{})
		if err != nil {
			return
		}
		args, ok := v.([]any)
		if !ok {
			return
		}
		enc, err := AppendCanonicalArgs(nil, args...)
		if err != nil {
			return
		}
		v2, err := DecodeMsgpack(enc, DecodeLimits{})
		if err != nil {
			t.Fatalf("canonical args rejected by the reader: %v", err)
		}
		args2, ok := v2.([]any)
		if !ok {
			t.Fatalf("canonical args decode to %T", v2)
		}
		enc2, err := AppendCanonicalArgs(nil, args2...)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("canonical args encoding is not idempotent: %x then %x (%v)", enc, enc2, err)
		}
		if _, err := InteropKey("t", "op", args...); err != nil {
			t.Fatalf("InteropKey fails where AppendCanonicalArgs succeeds: %v", err)
		}
	})
}
