package cachekit

import (
	"bytes"
	"errors"
	"testing"

	"github.com/cachekit-io/cachekit-go/protocol"
)

// The Client builds its AAD from a template validated in New. These tests
// hold it to what the per-call builder produced before: the same bytes for
// every key shape, and, for components that were invalid, the same error on
// every operation rather than a failure in New.

func TestClientAADMatchesPerCallBuilder(t *testing.T) {
	keys := []string{"k", "user:12345", "ключ", "a b\tc", string(bytes.Repeat([]byte("x"), 300))}
	for _, prefix := range []string{"", "app:", "τ/"} {
		for _, tenant := range []string{"", "acme"} {
			for _, disable := range []bool{false, true} {
				c := newClient(t, Options{L1MaxBytes: 1 << 20, KeyPrefix: prefix, Encryption: encConfig(tenant), DisableCompression: disable})
				wantTenant := tenant
				if wantTenant == "" {
					wantTenant = "default"
				}
				for _, key := range append(keys, "", "\xff") {
					s := getScratch()
					got, gerr := c.appendAAD(s, key)
					want, werr := protocol.AppendAADKey(nil, wantTenant, prefix, key, protocol.FormatMsgpack, !disable)
					if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
						t.Fatalf("prefix %q tenant %q: error %v, want %v", prefix, tenant, gerr, werr)
					}
					if gerr == nil && !bytes.Equal(got, want) {
						t.Fatalf("prefix %q tenant %q: AAD differs from AppendAADKey", prefix, tenant)
					}
					putScratch(s)
				}
			}
		}
	}
}

func TestClientInvalidPrefixFailsEveryEncryptedOp(t *testing.T) {
	c := newClient(t, Options{L1MaxBytes: 1 << 20, KeyPrefix: "\xffp:", Encryption: encConfig("")})
	_, want := protocol.AppendAADKey(nil, "default", "\xffp:", "k", protocol.FormatMsgpack, true)
	if want == nil {
		t.Fatal("reference builder accepted an invalid prefix")
	}
	for i := 0; i < 3; i++ {
		err := c.Set(bg, "k", []byte("v"))
		if err == nil || err.Error() != want.Error() || !errors.Is(err, protocol.ErrMalformed) {
			t.Fatalf("Set #%d: %v, want %v", i, err, want)
		}
	}
	// Without encryption no AAD is built: the prefix is only a Redis key part.
	p := newClient(t, Options{L1MaxBytes: 1 << 20, KeyPrefix: "\xffp:"})
	if err := p.Set(bg, "k", []byte("v")); err != nil {
		t.Fatalf("plain client: %v", err)
	}
}
