package cachekit

import (
	"bytes"
	"crypto/rand"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/redistest"
	"github.com/cachekit-io/cachekit-go/internal/testenv"
	"github.com/redis/go-redis/v9"
)

// A large value reads back through a slow link with the defaults: its read
// gets its size's transfer allowance once the value is known to be large
// (the first read asks for at most 128 KiB and the length), as its write
// did; a small read keeps its 200 ms bound. Every Get of a 24 MiB value
// through an 18 MiB/s link used to time out; the link here is 22 MiB/s,
// 1.1 s of transfer in a 1.7 s allowance, so that a loaded machine's
// scheduling fits in the margin.
func TestLargeValueReadsThroughSlowLink(t *testing.T) {
	o := Production()
	o.Invalidation = nil
	c, _, big := slowLink(t, o, 24<<20, 22<<20)
	start := time.Now()
	if err := c.SetWithTTL(bg, "big", big, time.Minute); err != nil || c.ReliabilityStats().Degraded != 0 {
		t.Fatalf("Set of 24 MiB through 22 MiB/s: %v (absorbed: %d) after %v", err, c.ReliabilityStats().Degraded, time.Since(start))
	}
	if took := time.Since(start); took < 800*time.Millisecond {
		t.Fatalf("24 MiB crossed a 22 MiB/s link in %v: no throttle", took)
	}
	got, err := c.GetBytes(bg, "big")
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("Get of 24 MiB through 22 MiB/s: %d bytes, %v", len(got), err)
	}
	if st := c.Stats(); st.L2Errors != 0 {
		t.Fatalf("L2Errors = %d: a long value's first read is no failure", st.L2Errors)
	}
}

// A large conditional write after Redis lost its scripts (SCRIPT FLUSH, a
// restart) sends its value once: the script is loaded first. It sent
// EVALSHA with the value, got NOSCRIPT, then EVAL with the value again,
// past the one-send allowance: ErrTimeout for a write that was stored.
// 32 MiB through 22 MiB/s: once is 1.45 s of a 2.2 s allowance, twice
// 2.9 s; both margins hold on a loaded machine.
func TestLargeScriptedWriteSendsValueOnce(t *testing.T) {
	o := Minimal()
	defaultBound(&o)
	c, raw, v := slowLink(t, o, 32<<20, 22<<20)
	if err := raw.ScriptFlush(bg).Err(); err != nil {
		t.Fatal(err)
	}
	stored, err := c.SetIfAbsent(bg, "big", v, time.Minute)
	if err != nil || !stored {
		t.Fatalf("SetIfAbsent of 32 MiB through 22 MiB/s after SCRIPT FLUSH = %v, %v", stored, err)
	}
}

// slowLink returns a Client built from o (without L1) that reaches a
// private Redis through a link of rate bytes per second each way, the
// test's own client of that Redis, and n incompressible bytes to send. It
// skips under the race detector (make test runs these tests again
// without): they pace bytes in wall time against an allowance, and the
// callers are not parallel for the same reason.
func slowLink(t *testing.T, o Options, n, rate int) (*Client, *redis.Client, []byte) {
	t.Helper()
	if testenv.RaceEnabled {
		t.Skip("wall-time pacing: run without -race")
	}
	srv, raw := withRedis(t)
	proxy := redistest.StartProxy(t, srv.Addr())
	o.RedisURL, o.L1MaxBytes = proxy.URL(), 0
	c := newClient(t, o)
	v := make([]byte, n)
	rand.Read(v) // incompressible: n bytes cross the link
	proxy.Throttle(rate)
	return c, raw, v
}
