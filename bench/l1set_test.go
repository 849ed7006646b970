package bench

import (
	"strconv"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/cachekit"
)

// BenchmarkL1OnlySet measures a Set in L1-only mode (Minimal, no Redis) of
// a 32-byte value under a 25-byte key, three ways: a new key into an L1
// with room (no eviction), a new key into a full 16 MiB L1 (each Set
// evicts), and an overwrite of one of 1,024 keys. Issue 32 pairs the new
// key rows with the overwrite row.
func BenchmarkL1OnlySet(b *testing.B) {
	value := make([]byte, 32)
	key := func(prefix byte, i int) string {
		s := strconv.Itoa(i)
		return string(prefix) + ":session:0000000000000000"[:24-len(s)] + s
	}
	newClient := func(b *testing.B, capBytes int64) *cachekit.Client {
		opts := cachekit.Minimal()
		opts.L1MaxBytes = capBytes
		opts.DefaultTTL = time.Hour
		c, err := cachekit.New(opts)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = c.Close() })
		return c
	}
	set := func(b *testing.B, c *cachekit.Client, prefix byte, mod int) {
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			n := i
			if mod > 0 {
				n = i % mod
			}
			if err := c.Set(bg, key(prefix, n), value); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("newkey/room", func(b *testing.B) { set(b, newClient(b, 4<<30), 'n', 0) })
	b.Run("newkey/full", func(b *testing.B) {
		c := newClient(b, 16<<20)
		for i := range 200_000 { // 16 MiB holds about 60,000: it evicts from here on
			if err := c.Set(bg, key('f', i), value); err != nil {
				b.Fatal(err)
			}
		}
		set(b, c, 'g', 0)
	})
	b.Run("overwrite", func(b *testing.B) {
		c := newClient(b, 64<<20)
		for i := range 1024 {
			if err := c.Set(bg, key('o', i), value); err != nil {
				b.Fatal(err)
			}
		}
		set(b, c, 'o', 1024)
	})
}
