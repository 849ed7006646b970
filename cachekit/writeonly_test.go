package cachekit

import (
	"errors"
	"testing"

	"github.com/cachekit-io/cachekit-go/protocol"
)

// TestNoWriteOnlyValues: Set refuses, before any I/O and without touching
// what is stored, a value no Get could read back; a nil []byte reads back
// as empty bytes.
func TestNoWriteOnlyValues(t *testing.T) {
	t.Parallel()
	c := newClient(t, Options{L1MaxBytes: 1 << 20})
	mustSet(t, c, "k", "kept")
	var deep any = "leaf"
	for range protocol.DefaultMaxDepth + 2 {
		deep = []any{deep}
	}
	err := c.Set(bg, "k", deep)
	var fe *FormatError
	if err == nil || !errors.As(err, &fe) {
		t.Fatalf("Set of a value nested past the read depth bound = %v, want a *FormatError", err)
	}
	if err := c.MSetWithTTL(bg, map[string]any{"k": deep}, 60e9); err == nil {
		t.Fatal("MSet accepted a value no Get can read")
	}
	if v, err := Get[string](bg, c, "k"); err != nil || v != "kept" {
		t.Fatalf("stored value after the refused writes = %q, %v", v, err)
	}

	mustSet(t, c, "nil-bytes", []byte(nil))
	b, err := c.GetBytes(bg, "nil-bytes")
	if err != nil || len(b) != 0 {
		t.Fatalf("GetBytes after Set([]byte(nil)) = %q, %v; want empty bytes", b, err)
	}
}
