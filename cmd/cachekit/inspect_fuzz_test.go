package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cachekit-io/cachekit-go/cachekit"
	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/internal/vectors"
	"github.com/cachekit-io/cachekit-go/protocol"
)

// envelopeSeeds returns every envelope of the wire-format vectors, accepted
// and rejected; it fails when there are none.
func envelopeSeeds(tb testing.TB) [][]byte {
	tb.Helper()
	type row struct {
		EnvelopeHex string `json:"envelope_hex"`
	}
	var seeds [][]byte
	for _, group := range []string{"vectors", "reject_vectors"} {
		for _, r := range vectors.Group[row](tb, "wire-format.json", group) {
			if r.EnvelopeHex != "" {
				seeds = append(seeds, vectors.Hex(tb, r.EnvelopeHex))
			}
		}
	}
	if len(seeds) == 0 {
		tb.Fatal("no fuzz seeds: wire-format.json yielded no envelope")
	}
	return seeds
}

// FuzzInspectEnvelope feeds hostile bytes, as a stored plaintext entry, to
// the client's open (Raw.Open) and inspect's envelope report of it. It must
// never panic, and may only open what protocol.OpenEnvelope opens, to the
// same bytes; a refusal is an integrity error.
func FuzzInspectEnvelope(f *testing.F) {
	for _, s := range envelopeSeeds(f) {
		f.Add(s)
	}
	// Compression on, no encryption, no Redis: Raw.Open opens the envelope.
	c, err := cachekit.New(cachekit.Options{L1MaxBytes: 1 << 20})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = c.Close() })
	f.Fuzz(func(t *testing.T, b []byte) {
		var out bytes.Buffer
		op, oerr := c.Raw().Open(context.Background(), "k", b)
		got := op.Payload
		err := inspectEnvelope(report{&out}, b, got != nil, oerr)
		want, werr := protocol.OpenEnvelope(nil, b)
		switch {
		case err == nil && (werr != nil || !bytes.Equal(got, want)):
			t.Fatalf("inspect opened an envelope protocol.OpenEnvelope does not (%v)", werr)
		case err != nil && werr == nil:
			t.Fatalf("inspect refused an envelope that opens: %v", err)
		case err != nil && !isIntegrity(err):
			t.Fatalf("refusal is not an integrity error: %v", err)
		}
		// looksPlain reads the same hostile bytes.
		_ = looksPlain(&globalFlags{}, b)
	})
}

// ckSeeds returns CK frames around every check inspectPythonFrame makes.
func ckSeeds() [][]byte {
	return [][]byte{
		ckFrame(`{"s": "default", "m": {"format": "msgpack", "compressed": false}, "v": "2.0"}`, []byte("hello")),
		ckFrame(`{"s": "default", "m": {"encrypted": true, "key_fingerprint": "00ff", "original_type": [1, {"a": 2}]}, "v": "2.0"}`, make([]byte, 40)),
		ckFrame(`{"m": null}`, nil),
		ckFrame(`not json`, []byte{1}),
		[]byte("CK"), []byte("CK\x03"), []byte("CK\x04\x00\x00\x00\x00"), []byte("CK\x03\xff\xff\xff\xff{}"),
		[]byte("CK\x03\x00\x00\x00\x09{}"),
	}
}

// FuzzInspectPythonFrame feeds hostile bytes to inspect's CK frame report,
// with and without a keyring to match fingerprints against. It must never
// panic, always end in an integrity error (this SDK never decodes another
// SDK's auto-mode container), and never print a payload byte it was not
// asked about (checked with a marker payload).
func FuzzInspectPythonFrame(f *testing.F) {
	for _, s := range ckSeeds() {
		f.Add(s)
	}
	key, err := encryption.ParseMasterKeyHex(testKeyHex)
	if err != nil {
		f.Fatal(err)
	}
	m, err := encryption.NewManager(encryption.Config{MasterKey: key})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = m.Close() })
	const marker = "PAYLOAD-MARKER-7f3a"
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, mgr := range []*encryption.Manager{nil, m} {
			var out bytes.Buffer
			if err := inspectPythonFrame(report{&out}, mgr, b); !isIntegrity(err) {
				t.Fatalf("CK frame report ended with %v, want an integrity error", err)
			}
			// Whatever the header says, the payload after it is never printed.
			framed := append(append([]byte(nil), b...), marker...)
			out.Reset()
			_ = inspectPythonFrame(report{&out}, mgr, framed)
			if strings.Contains(out.String(), marker) && !bytes.Contains(b, []byte(marker)) {
				t.Fatalf("the report printed payload bytes: %q", out.String())
			}
		}
	})
}

// isIntegrity reports whether err carries the integrity exit code.
func isIntegrity(err error) bool {
	var ee *exitError
	return errors.As(err, &ee) && ee.code == exitIntegrity
}
