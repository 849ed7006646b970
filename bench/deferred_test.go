package bench

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/internal/fixture"
)

// providerDelay stands in for a key service's round trip.
const providerDelay = time.Millisecond

// slowProvider returns the fixture master key after providerDelay, as a
// KeyProvider backed by a KMS would.
func slowProvider(ctx context.Context) (encryption.Keys, error) {
	t := time.NewTimer(providerDelay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return encryption.Keys{}, ctx.Err()
	}
	return encryption.Keys{Current: append([]byte(nil), fixture.MasterKey...)}, nil
}

var cryptSizes = []struct {
	name string
	n    int
}{{"100B", 100}, {"1KiB", 1 << 10}, {"16KiB", 16 << 10}, {"1MiB", 1 << 20}}

var cryptAAD = []byte("\x03\x00\x00\x00\x07default\x00\x00\x00\x0cusers:get:42\x00\x00\x00\x07msgpack\x00\x00\x00\x04True")

// BenchmarkCrypt compares the synchronous fast path (keys derived:
// EncryptNow and DecryptNow return within the call) with the real
// deferred path (a fresh Manager whose provider takes 1 ms: the call hands
// out a Deferred, and Wait runs the provider and the derivation first),
// both directions, 100 B to 1 MiB. Rows: Crypt/{fast,deferred}/{encrypt,
// decrypt}/<size>.
func BenchmarkCrypt(b *testing.B) {
	ctx := context.Background()
	warm, err := encryption.NewManager(encryption.Config{Provider: slowProvider})
	if err != nil {
		b.Fatal(err)
	}
	defer warm.Close()
	if err := warm.Warm(ctx); err != nil {
		b.Fatal(err)
	}
	fresh := func(b *testing.B) *encryption.Manager {
		m, err := encryption.NewManager(encryption.Config{Provider: slowProvider})
		if err != nil {
			b.Fatal(err)
		}
		return m
	}
	for _, s := range cryptSizes {
		pt := bytes.Repeat([]byte{7}, s.n)
		sealed, _, err := warm.EncryptNow(nil, pt, cryptAAD)
		if err != nil {
			b.Fatal(err)
		}
		out := make([]byte, 0, s.n+encryption.Overhead)
		b.Run("fast/encrypt/"+s.name, func(b *testing.B) {
			b.SetBytes(int64(s.n))
			b.ReportAllocs()
			for b.Loop() {
				if _, d, err := warm.EncryptNow(out[:0], pt, cryptAAD); err != nil || d != nil {
					b.Fatal("not the fast path", err)
				}
			}
		})
		b.Run("fast/decrypt/"+s.name, func(b *testing.B) {
			b.SetBytes(int64(s.n))
			b.ReportAllocs()
			for b.Loop() {
				if _, d, err := warm.DecryptNow(out[:0], sealed, cryptAAD); err != nil || d != nil {
					b.Fatal("not the fast path", err)
				}
			}
		})
		b.Run("deferred/encrypt/"+s.name, func(b *testing.B) {
			b.SetBytes(int64(s.n))
			b.ReportAllocs()
			for b.Loop() {
				m := fresh(b)
				_, d, err := m.EncryptNow(out[:0], pt, cryptAAD)
				if err != nil || d == nil {
					b.Fatal("not the deferred path", err)
				}
				if _, err := d.Wait(ctx); err != nil {
					b.Fatal(err)
				}
				m.Close()
			}
		})
		b.Run("deferred/decrypt/"+s.name, func(b *testing.B) {
			b.SetBytes(int64(s.n))
			b.ReportAllocs()
			for b.Loop() {
				m := fresh(b)
				_, d, err := m.DecryptNow(out[:0], sealed, cryptAAD)
				if err != nil || d == nil {
					b.Fatal("not the deferred path", err)
				}
				if _, err := d.Wait(ctx); err != nil {
					b.Fatal(err)
				}
				m.Close()
			}
		})
	}
}
