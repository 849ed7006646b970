package bench

import (
	"crypto/aes"
	"crypto/cipher"
	"testing"
	"time"

	"github.com/dgraph-io/ristretto/v2"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/cachekit-io/cachekit-go/internal/fixture"
	"github.com/cachekit-io/cachekit-go/protocol"
)

// BenchmarkFloor measures the building blocks a cache read or write cannot
// avoid: one AES-GCM seal or open, one ristretto lookup, one raw go-redis
// GET or SET of the very bytes our client stores, and one msgpack decode.
// Our rows divided by these are the client's overhead.
func BenchmarkFloor(b *testing.B) {
	b.Run("SealRaw/100B", benchSealRaw)
	b.Run("OpenRaw/100B", benchOpenRaw)
	b.Run("RistrettoGet/100B", benchRistrettoGet)
	b.Run("GoRedisGet/1KiB", benchGoRedisGet)
	b.Run("GoRedisSet/1KiB", func(b *testing.B) { benchGoRedisSet(b, 0) })
	b.Run("GoRedisSetAfterBusy2us/1KiB", func(b *testing.B) { benchGoRedisSet(b, 2*time.Microsecond) })
	b.Run("MsgpackUnmarshal/struct/100B", benchMsgpackUnmarshal)
}

// rawAEAD is a bare crypto/cipher AES-256-GCM with a fixed key, and the AAD
// our client would bind for a short key.
func rawAEAD(tb testing.TB) (cipher.AEAD, []byte) {
	tb.Helper()
	block, err := aes.NewCipher(fixture.MasterKey)
	if err != nil {
		tb.Fatal(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		tb.Fatal(err)
	}
	aad, err := protocol.AppendAAD(nil, "default", "user:12345", protocol.FormatMsgpack, true)
	if err != nil {
		tb.Fatal(err)
	}
	return aead, aad
}

func benchSealRaw(b *testing.B) {
	aead, aad := rawAEAD(b)
	pt := fixture.NewBytes(100)
	nonce := make([]byte, aead.NonceSize())
	dst := make([]byte, 0, len(pt)+aead.Overhead())
	b.SetBytes(int64(len(pt)))
	b.ReportAllocs()
	for b.Loop() {
		dst = aead.Seal(dst[:0], nonce, pt, aad)
	}
}

func benchOpenRaw(b *testing.B) {
	aead, aad := rawAEAD(b)
	pt := fixture.NewBytes(100)
	nonce := make([]byte, aead.NonceSize())
	sealed := aead.Seal(nil, nonce, pt, aad)
	dst := make([]byte, 0, len(pt))
	b.SetBytes(int64(len(pt)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if dst, err = aead.Open(dst[:0], nonce, sealed, aad); err != nil {
			b.Fatal(err)
		}
	}
}

func benchRistrettoGet(b *testing.B) {
	c, err := ristretto.NewCache(&ristretto.Config[string, []byte]{NumCounters: 1e5, MaxCost: 64 << 20, BufferItems: 64})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	v := fixture.NewBytes(100)
	c.SetWithTTL("user:12345", v, int64(len(v)), time.Hour)
	c.Wait()
	b.SetBytes(int64(len(v)))
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := c.Get("user:12345"); !ok {
			b.Fatal("ristretto: miss")
		}
	}
}

// storedBytes1KiB writes a 1 KiB bytes value through an encrypted client and
// returns its key and the sealed bytes Redis now holds.
func storedBytes1KiB(b *testing.B) (string, []byte) {
	c := newClient(b, clientConfig{encrypted: true, redis: true})
	key := benchKey(b, "floor")
	if err := c.SetWithTTL(bg, key, fixture.NewBytes(1024), time.Hour); err != nil {
		b.Fatal(err)
	}
	stored, err := c.Raw().Get(bg, key)
	if err != nil {
		b.Fatal(err)
	}
	return key, stored
}

func benchGoRedisGet(b *testing.B) {
	rdb := rawRedis(b)
	key, stored := storedBytes1KiB(b)
	b.SetBytes(1024)
	runRedis(b, func() error {
		got, err := rdb.Get(bg, key).Bytes()
		if err == nil && len(got) != len(stored) {
			b.Fatalf("GET: %d bytes, stored %d", len(got), len(stored))
		}
		return err
	})
}

// benchGoRedisSet sends raw SETs. With busy > 0 each SET follows that
// much CPU work on the client, about what sealing 1 KiB costs ours: the
// row measures what client CPU between round trips adds to them on the
// machine at hand, beyond its own duration.
func benchGoRedisSet(b *testing.B, busy time.Duration) {
	rdb := rawRedis(b)
	key, stored := storedBytes1KiB(b)
	b.SetBytes(1024)
	runRedis(b, func() error {
		if busy > 0 {
			spin(busy)
		}
		return rdb.Set(bg, key, stored, time.Hour).Err()
	})
}

// spinSink keeps spin's loop from being optimised away.
var spinSink uint64

// spin keeps the CPU busy for d, reading the clock as it goes.
func spin(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
		spinSink++
	}
}

func benchMsgpackUnmarshal(b *testing.B) {
	enc, err := msgpack.Marshal(fixture.NewRecord(100))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	var r fixture.Record
	for b.Loop() {
		if err := msgpack.Unmarshal(enc, &r); err != nil {
			b.Fatal(err)
		}
	}
}
