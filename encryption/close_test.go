package encryption

import (
	"bytes"
	"runtime"
	"testing"
	"weak"
)

// TestCloseDropsTheKeyring: after Close nothing the Manager holds reaches
// the derived AES-GCM instances (Stats keeps fingerprints and counters
// only), so the garbage collector can reclaim them; Stats still reads.
func TestCloseDropsTheKeyring(t *testing.T) {
	m, err := NewManager(Config{MasterKey: bytes.Repeat([]byte{7}, KeySize)})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Warm(t.Context()); err != nil {
		t.Fatal(err)
	}
	wp := weak.Make(m.state.Load())
	fp := m.Stats().Fingerprint
	_ = m.Close()
	for range 3 {
		runtime.GC()
	}
	if wp.Value() != nil {
		t.Fatal("the derived keyring is still reachable after Close")
	}
	if st := m.Stats(); st.Fingerprint != fp || !st.Closed || st.KeyringSize != 1 {
		t.Fatalf("Stats after Close: %+v", st)
	}
	runtime.KeepAlive(m)
}
