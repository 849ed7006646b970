package l1

import (
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/testenv"
)

// newFakeClock is a manually advanced Config.Clock.
func newFakeClock() *testenv.Clock {
	return testenv.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
}

// newCache builds a Cache and closes it when the test ends.
func newCache(tb testing.TB, cfg Config) *Cache {
	tb.Helper()
	c, err := New(cfg)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	tb.Cleanup(c.Close)
	return c
}

// value returns n bytes that encode tag, so distinct writes are distinct.
func value(tag, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(tag >> (8 * (i % 4)))
	}
	return b
}

// mustGet fails unless key holds exactly want. Messages never print values.
func mustGet(tb testing.TB, c *Cache, key string, want []byte) {
	tb.Helper()
	got, ok := c.Get(key)
	if !ok {
		tb.Fatalf("Get: miss, want a hit")
	}
	if string(got) != string(want) {
		tb.Fatalf("Get: wrong value (len %d, want len %d)", len(got), len(want))
	}
}

func mustMiss(tb testing.TB, c *Cache, key string) {
	tb.Helper()
	if _, ok := c.Get(key); ok {
		tb.Fatalf("Get: hit, want a miss")
	}
}

// held reports whether ristretto's store holds key.
func held(c *Cache, key string) bool {
	_, ok := c.rc.GetTTL(c.keyHash(key))
	return ok
}

// indexed returns the entry Get finds for key, or nil.
func indexed(c *Cache, key string) *entry {
	return c.lookup(c.keyHash(key), key)
}

// chargeOf is what an entry whose value has capacity n is charged.
func chargeOf(n int) int64 {
	if n > 0 && n <= minChunk/8 { // in the arena of any cache
		return EntryOverhead + (recHeader+int64(n)+7)&^7
	}
	return EntryOverhead + allocSize(n)
}
