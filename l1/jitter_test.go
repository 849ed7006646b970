package l1

import (
	"math"
	"testing"
	"time"
)

// expiryOf reads the clock-based expiry of key's entry (white box).
func expiryOf(t *testing.T, c *Cache, key string) time.Time {
	t.Helper()
	e := indexed(c, key)
	if e == nil {
		t.Fatal("entry missing")
	}
	_, exp := e.load()
	return time.Unix(0, exp)
}

func TestJitterFractions(t *testing.T) {
	const ttl = 100 * time.Second
	cases := []struct {
		name   string
		jitter float64
		r      float64
		want   time.Duration // effective TTL
	}{
		{"no jitter ignores rand", 0, 0.9, ttl},
		{"r=0 keeps full ttl", 0.5, 0, ttl},
		{"r=0.5 j=0.5", 0.5, 0.5, 75 * time.Second},
		{"r=0.5 j=0.1", 0.1, 0.5, 95 * time.Second},
		{"r just below 1", 0.5, math.Nextafter(1, 0), 50*time.Second + 1},
		{"r=1 clamped below 1", 0.5, 1, 50*time.Second + 1},
		{"r>1 clamped", 0.5, 7, 50*time.Second + 1},
		{"negative r clamped to 0", 0.5, -3, ttl},
		{"NaN r clamped to 0", 0.5, math.NaN(), ttl},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			c := newCache(t, Config{MaxBytes: 1 << 20, TTLJitter: tc.jitter, Clock: clk.Now,
				Rand: func() float64 { return tc.r }})
			start := clk.Now()
			v := value(1, 8)
			c.Set("k", v, ttl)
			got := expiryOf(t, c, "k").Sub(start)
			// float rounding may move the cut by a few ns
			if d := got - tc.want; d < -8 || d > 8 {
				t.Fatalf("effective TTL %v, want %v", got, tc.want)
			}
			if tc.jitter == 0 && got != ttl {
				t.Fatalf("effective TTL %v without jitter, want %v", got, ttl)
			}
			if tc.jitter > 0 && (got > ttl || got <= time.Duration(float64(ttl)*(1-tc.jitter))) {
				t.Fatalf("effective TTL %v outside (ttl×(1−j), ttl]", got)
			}
			clk.Add(got - 1)
			mustGet(t, c, "k", v)
			clk.Add(1)
			mustMiss(t, c, "k")
		})
	}
}

// With the default random source, every TTL lands in (ttl×(1−j), ttl] and
// the values actually spread.
func TestJitterBoundsDefaultRand(t *testing.T) {
	const (
		ttl = time.Minute
		j   = 0.3
		n   = 2000
	)
	clk := newFakeClock()
	c := newCache(t, Config{MaxBytes: 1 << 20, TTLJitter: j, Clock: clk.Now})
	start := clk.Now()
	lo, hi := ttl, time.Duration(0)
	for i := range n {
		k := string(rune(0x100 + i))
		if !c.Set(k, value(i, 8), ttl) {
			t.Fatal("Set returned false")
		}
		d := expiryOf(t, c, k).Sub(start)
		if d > ttl || d <= time.Duration(float64(ttl)*(1-j)) {
			t.Fatalf("effective TTL %v outside (%v, %v]", d, time.Duration(float64(ttl)*(1-j)), ttl)
		}
		lo, hi = min(lo, d), max(hi, d)
	}
	// 2000 uniform draws: the extremes sit well within 10% of the range ends.
	span := time.Duration(float64(ttl) * j)
	if hi-lo < span*8/10 {
		t.Fatalf("TTLs spread over %v only, want most of %v", hi-lo, span)
	}
}

func TestJitterNeverProducesZeroTTL(t *testing.T) {
	s := settings{jitter: MaxTTLJitter, rand: func() float64 { return math.Nextafter(1, 0) }}
	for _, ttl := range []time.Duration{1, 2, 3, time.Microsecond, math.MaxInt64} {
		got := s.jittered(ttl)
		if got < 1 || got > ttl {
			t.Fatalf("jittered(%v) = %v, want in [1, ttl]", ttl, got)
		}
	}
}
