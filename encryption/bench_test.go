package encryption

import (
	"bytes"
	"context"
	"crypto/cipher"
	"testing"

	"github.com/cachekit-io/cachekit-go/internal/vectors"
)

var benchSizes = []struct {
	name string
	n    int
}{
	{"100B", 100},
	{"1KiB", 1 << 10},
	{"16KiB", 16 << 10},
	{"1MiB", 1 << 20},
}

// benchAAD is shaped like a real AAD v0x03 for a short key.
var benchAAD = []byte("\x03\x00\x00\x00\x07default\x00\x00\x00\x0cusers:get:42\x00\x00\x00\x07msgpack\x00\x00\x00\x04True")

// rawAEAD returns the bare cipher.AEAD the Manager would use for testKeyHex
// and tenant "bench": the floor the Manager is measured against.
func rawAEAD(tb testing.TB) cipher.AEAD {
	tb.Helper()
	return rawGCM(tb).std
}

// rawGCM is rawAEAD with the chunked path beside it.
func rawGCM(tb testing.TB) *aesGCM {
	tb.Helper()
	var k [KeySize]byte
	if err := deriveKey(&k, vectors.Hex(tb, testKeyHex), DomainEncryption, "bench"); err != nil {
		tb.Fatal(err)
	}
	a, err := newAEAD(&k)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

// benchSized runs one sub-benchmark per benchSizes entry: setup builds,
// for n bytes, the operation each iteration runs.
func benchSized(b *testing.B, setup func(n int) (op func() error)) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			op := setup(s.n)
			b.SetBytes(int64(s.n))
			b.ReportAllocs()
			for b.Loop() {
				if err := op(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkSealRaw(b *testing.B) {
	a, nonce := rawAEAD(b), make([]byte, NonceSize)
	benchSized(b, func(n int) func() error {
		pt, dst := bytes.Repeat([]byte{7}, n), make([]byte, 0, n+TagSize)
		return func() error { a.Seal(dst[:0], nonce, pt, benchAAD); return nil }
	})
}

func BenchmarkOpenRaw(b *testing.B) {
	a, nonce := rawAEAD(b), make([]byte, NonceSize)
	benchSized(b, func(n int) func() error {
		ct, dst := a.Seal(nil, nonce, bytes.Repeat([]byte{7}, n), benchAAD), make([]byte, 0, n)
		return func() error { _, err := a.Open(dst[:0], nonce, ct, benchAAD); return err }
	})
}

func BenchmarkEncryptNow(b *testing.B) {
	m := staticManager(b, "bench", testKeyHex)
	benchSized(b, func(n int) func() error {
		pt, dst := bytes.Repeat([]byte{7}, n), make([]byte, 0, n+Overhead)
		return func() error { _, _, err := m.EncryptNow(dst[:0], pt, benchAAD); return err }
	})
}

func BenchmarkDecryptNow(b *testing.B) {
	m := staticManager(b, "bench", testKeyHex)
	benchSized(b, func(n int) func() error {
		sealed, _, _ := m.EncryptNow(nil, bytes.Repeat([]byte{7}, n), benchAAD)
		dst := make([]byte, 0, n)
		return func() error { _, _, err := m.DecryptNow(dst[:0], sealed, benchAAD); return err }
	})
}

// BenchmarkEncryptDeferred measures the deferred path once keys exist: the
// Deferred EncryptNow hands out before derivation, then its Wait.
func BenchmarkEncryptDeferred(b *testing.B) {
	m := staticManager(b, "bench", testKeyHex)
	ctx := context.Background()
	b.Run("100B", func(b *testing.B) {
		pt := bytes.Repeat([]byte{7}, 100)
		dst := make([]byte, 0, 100+Overhead)
		b.SetBytes(100)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := m.deferred(opEncrypt, dst[:0], pt, benchAAD).Wait(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkKeyringDecryptPrevious opens a value sealed under the previous
// key: one failed attempt with the current key, then success.
func BenchmarkKeyringDecryptPrevious(b *testing.B) {
	const other = "2222222222222222222222222222222222222222222222222222222222222222"
	old := staticManager(b, "bench", testKeyHex)
	ring := staticManager(b, "bench", other, testKeyHex)
	b.Run("100B", func(b *testing.B) {
		sealed, _, _ := old.EncryptNow(nil, bytes.Repeat([]byte{7}, 100), benchAAD)
		dst := make([]byte, 0, 100)
		b.SetBytes(100)
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := ring.DecryptNow(dst[:0], sealed, benchAAD); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestAllocationBudget: with keys derived and dst large enough, EncryptNow
// and DecryptNow allocate nothing, whatever the keyring index.
func TestAllocationBudget(t *testing.T) {
	m := staticManager(t, "bench", "2222222222222222222222222222222222222222222222222222222222222222", testKeyHex)
	old := staticManager(t, "bench", testKeyHex)
	for _, n := range []int{0, 100, 16 << 10} {
		pt := bytes.Repeat([]byte{7}, n)
		encDst := make([]byte, 0, n+Overhead)
		decDst := make([]byte, 0, n)
		sealed, _, _ := m.EncryptNow(nil, pt, benchAAD)
		sealedOld, _, _ := old.EncryptNow(nil, pt, benchAAD)
		checks := map[string]func(){
			"EncryptNow": func() {
				if _, _, err := m.EncryptNow(encDst[:0], pt, benchAAD); err != nil {
					t.Fatal(err)
				}
			},
			"DecryptNow": func() {
				if _, _, err := m.DecryptNow(decDst[:0], sealed, benchAAD); err != nil {
					t.Fatal(err)
				}
			},
			"DecryptNow previous key": func() {
				if _, _, err := m.DecryptNow(decDst[:0], sealedOld, benchAAD); err != nil {
					t.Fatal(err)
				}
			},
			"DecryptNow auth failure": func() {
				if _, _, err := m.DecryptNow(decDst[:0], sealed, benchAAD[1:]); err == nil {
					t.Fatal("opened under the wrong AAD")
				}
			},
		}
		for name, f := range checks {
			if allocs := testing.AllocsPerRun(100, f); allocs != 0 {
				t.Errorf("%s %d bytes: %.1f allocs per call, want 0", name, n, allocs)
			}
		}
	}
}
