package cachekit

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/protocol"
)

// allocsOfGetBytes reads key through c's GetBytes, after a GC, and returns
// the bytes the process allocated during the read (MemStats.TotalAlloc) and
// the read's error. Its callers are not parallel.
func allocsOfGetBytes(c *Client, key string) (uint64, error) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := c.GetBytes(bg, key)
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, err
}

// TestMaxValueBytes: a value encoding to more than MaxValueBytes is refused
// at Set before any I/O, and an entry claiming to be larger (here: a real
// 8 MiB envelope of zeros, about 32 KiB stored, that a reader limited to 1 MiB
// meets) is refused before the reader allocates for it.
func TestMaxValueBytes(t *testing.T) {
	// Not parallel: reads the process's allocation counter.
	small, rdb := redisClient(t, Options{MaxValueBytes: 1 << 20})
	big := make([]byte, 2<<20)
	if err := small.Set(bg, "k", big); !errors.Is(err, ErrValueTooLarge) {
		t.Fatalf("Set of 2 MiB with MaxValueBytes 1 MiB = %v, want ErrValueTooLarge", err)
	}
	if n, _ := rdb.Exists(bg, "k").Result(); n != 0 {
		t.Fatal("a refused value reached Redis")
	}

	env, err := protocol.SealEnvelope(nil, append([]byte{0xc6, 0, 0x80, 0, 0}, make([]byte, 8<<20)...), protocol.FormatMsgpack)
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(bg, "bomb", env, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("stored %d bytes claiming %d", len(env), 8<<20+5)
	grew, err := allocsOfGetBytes(small, "bomb")
	if !errors.Is(err, protocol.ErrTooLarge) {
		t.Fatalf("reading an 8 MiB entry with MaxValueBytes 1 MiB = %v, want ErrTooLarge", err)
	}
	namesLimit(t, "an envelope over the limit", err)
	if grew > 1<<20 {
		t.Fatalf("the refused read allocated %d bytes", grew)
	}
	// An encrypted entry far larger than the limit is refused before it is
	// decrypted into a buffer of its size.
	enc := newClient(t, Options{Redis: rdb, Encryption: encConfig(""), MaxValueBytes: 1 << 20})
	if err := rdb.Set(bg, "huge", make([]byte, 4<<20), time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	encGrew, err := allocsOfGetBytes(enc, "huge")
	if !errors.Is(err, protocol.ErrTooLarge) {
		t.Fatalf("a 4 MiB encrypted entry with MaxValueBytes 1 MiB = %v, want ErrTooLarge", err)
	}
	namesLimit(t, "an encrypted entry over the limit", err)
	// Uncompressed: the msgpack value itself is over the limit.
	plainBig := newClient(t, Options{Redis: rdb, DisableCompression: true})
	mustSet(t, plainBig, "plain", make([]byte, 1<<20+1000))
	plainSmall := newClient(t, Options{Redis: rdb, DisableCompression: true, MaxValueBytes: 1 << 20})
	_, err = plainSmall.GetBytes(bg, "plain")
	if !errors.Is(err, protocol.ErrTooLarge) {
		t.Fatalf("an uncompressed value over MaxValueBytes = %v, want ErrTooLarge", err)
	}
	namesLimit(t, "an uncompressed value over the limit", err)
	if encGrew > 4<<20+1<<20 {
		t.Fatalf("the refused encrypted read allocated %d bytes beyond the reply", encGrew)
	}
	// The default limit reads it.
	def := newClient(t, Options{Redis: rdb})
	if b, err := def.GetBytes(bg, "bomb"); err != nil || len(b) != 8<<20 {
		t.Fatalf("default MaxValueBytes (64 MiB): %d bytes, %v", len(b), err)
	}
	if _, err := New(Options{L1MaxBytes: 1, MaxValueBytes: 600 << 20}); !errors.Is(err, ErrConfig) {
		t.Fatalf("MaxValueBytes above 512 MiB: %v, want ErrConfig", err)
	}
}

// namesLimit fails t unless err, a size refusal, names MaxValueBytes and
// its value (1 MiB), not the protocol's 512 MiB (written "512 MiB" or
// 536870912: the error also carries a key digest, whose hex may hold
// "512").
func namesLimit(t *testing.T, what string, err error) {
	t.Helper()
	if msg := err.Error(); !strings.Contains(msg, "MaxValueBytes (1048576 bytes)") ||
		strings.Contains(msg, "512 MiB") || strings.Contains(msg, "536870912") || strings.Contains(msg, "536,870,912") {
		t.Errorf("%s: %q, want the error to name MaxValueBytes (1048576 bytes)", what, msg)
	}
}

// TestHugeEntryReadIsBounded: a hostile 32 MiB value in Redis, read by a
// Client whose MaxValueBytes is 1 MiB, is refused (naming MaxValueBytes)
// after reading at most the largest entry that limit allows plus a byte
// (GETRANGE), not the whole value: with L1 on (GETRANGE and PTTL) and off.
func TestHugeEntryReadIsBounded(t *testing.T) {
	// Not parallel: reads the process's allocation counter.
	_, rdb := withRedis(t)
	if err := rdb.Set(bg, "huge", make([]byte, 32<<20), time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	for name, l1 := range map[string]int64{"l1-on": 1 << 20, "l1-off": 0} {
		c := newClient(t, Options{Redis: rdb, L1MaxBytes: l1, MaxValueBytes: 1 << 20})
		grew, err := allocsOfGetBytes(c, "huge")
		if !errors.Is(err, protocol.ErrTooLarge) {
			t.Fatalf("%s: a 32 MiB value with MaxValueBytes 1 MiB = %v, want ErrTooLarge", name, err)
		}
		namesLimit(t, name, err)
		t.Logf("%s: refusing a 32 MiB value allocated %d bytes", name, grew)
		if grew > 4<<20 {
			t.Errorf("%s: the refused read allocated %d bytes, want at most about the 1 MiB limit", name, grew)
		}
	}
}
