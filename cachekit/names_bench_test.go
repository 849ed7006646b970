package cachekit

import (
	"bytes"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/internal/fixture"
	"github.com/cachekit-io/cachekit-go/internal/redistest"
)

// benchNamedKey is a key of the shape applications use (an identifier in
// it), long enough that hashing it is not free.
const benchNamedKey = "session:user:alice@example.com:tok_9f8e7d6c"

// nameKeyModes pairs a Client without a name key with the same Client
// with one: the difference is what a name key costs.
func nameKeyModes(l1 int64) []struct {
	name string
	opts Options
} {
	named := encConfig("")
	named.NameKey = append([]byte(nil), testNameKey...)
	return []struct {
		name string
		opts Options
	}{
		{"off", Options{L1MaxBytes: l1, KeyPrefix: "app:", Encryption: encConfig("")}},
		{"on", Options{L1MaxBytes: l1, KeyPrefix: "app:", Encryption: named}},
	}
}

// BenchmarkNameKeyL1Hit: an encrypted 100 B L1 hit (AppendValue) without
// and with a name key, for a 43-byte key (its 22-byte name is shorter) and
// a 10-byte one (its name is longer).
func BenchmarkNameKeyL1Hit(b *testing.B) {
	for _, m := range nameKeyModes(64 << 20) {
		for _, key := range []string{benchNamedKey, "user:12345"} {
			b.Run(m.name+"/key"+strconv.Itoa(len(key))+"B", func(b *testing.B) {
				c := newClient(b, m.opts)
				mustSetTTL(b, c, key, fixture.NewBytes(100), time.Hour)
				dst := make([]byte, 0, 128)
				b.ReportAllocs()
				for b.Loop() {
					var err error
					if dst, err = c.AppendValue(bg, dst[:0], key); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkNameKeyRoundTrip: a 1 KiB Set then Get through Redis (L1 off)
// without and with a name key.
func BenchmarkNameKeyRoundTrip(b *testing.B) {
	srv := redistest.Start(b)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true})
	defer rdb.Close()
	for _, m := range nameKeyModes(0) {
		b.Run(m.name, func(b *testing.B) {
			opts := m.opts
			opts.Redis = rdb
			c := newClient(b, opts)
			val := fixture.NewBytes(1024)
			dst := make([]byte, 0, 1100)
			b.ReportAllocs()
			for b.Loop() {
				if err := c.SetWithTTL(bg, benchNamedKey, val, time.Hour); err != nil {
					b.Fatal(err)
				}
				var err error
				if dst, err = c.AppendValue(bg, dst[:0], benchNamedKey); err != nil || !bytes.Equal(dst, val) {
					b.Fatal(err)
				}
			}
		})
	}
}

// The hot-path budget holds with a name key: the L1 hit allocates nothing
// (the key's name comes from the memo).
func TestAllocsNameKeyAppendValueL1Hit(t *testing.T) {
	// Not parallel: counts allocations.
	named := encConfig("")
	named.NameKey = append([]byte(nil), testNameKey...)
	assertL1HitAllocatesNothing(t, Options{L1MaxBytes: 1 << 20, KeyPrefix: "app:", Encryption: named})
}
