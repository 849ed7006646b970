package l1

import (
	"testing"
	"time"
)

// remaining returns ristretto's own remaining TTL for key.
func remaining(tb testing.TB, c *Cache, key string) time.Duration {
	tb.Helper()
	d, ok := c.rc.GetTTL(key)
	if !ok {
		tb.Fatal("entry missing from ristretto")
	}
	return d
}

func TestRewriteOfHotKeyStaysInPlace(t *testing.T) {
	c := newCache(t, Config{MaxBytes: 1 << 20})
	v1, v2, v3 := value(1, 100), value(2, 100), value(3, 60)
	if !c.Set("k", v1, time.Hour) {
		t.Fatal("first Set returned false")
	}
	before := c.Stats()
	for i, v := range [][]byte{v2, v3} {
		if !c.Set("k", v, time.Hour) {
			t.Fatalf("rewrite %d returned false", i)
		}
		mustGet(t, c, "k", v)
	}
	c.rc.Wait()
	st := c.Stats()
	if got := st.Rewrites - before.Rewrites; got != 2 {
		t.Fatalf("Rewrites grew by %d, want 2 (same length, then shorter but over half)", got)
	}
	if got := st.Sets - before.Sets; got != 2 {
		t.Fatalf("Sets grew by %d, want 2: a rewrite is a Set", got)
	}
	// The charge stays the first value's: never below what is held.
	if st.CostBytes != 100 {
		t.Fatalf("CostBytes = %d, want the 100 charged for the entry", st.CostBytes)
	}
}

func TestRewriteRefusedWhenItWouldChangeTheContract(t *testing.T) {
	cases := []struct {
		name   string
		first  int // value length and TTL of the write that creates the entry
		ttl1   time.Duration
		second int
		ttl2   time.Duration
	}{
		{"longer value", 100, time.Hour, 101, time.Hour},
		{"under half the charge", 100, time.Hour, 49, time.Hour},
		{"shorter TTL than the entry has left", 100, time.Hour, 100, time.Minute},
		{"entry has under three quarters of the new TTL left", 100, time.Minute, 100, 2 * time.Minute},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCache(t, Config{MaxBytes: 1 << 20})
			if !c.Set("k", value(1, tc.first), tc.ttl1) {
				t.Fatal("first Set returned false")
			}
			before := c.Stats().Rewrites
			v := value(2, tc.second)
			if !c.Set("k", v, tc.ttl2) {
				t.Fatal("second Set returned false")
			}
			mustGet(t, c, "k", v)
			if got := c.Stats().Rewrites; got != before {
				t.Fatalf("Rewrites = %d, want %d: this write must go through ristretto", got, before)
			}
			if left := remaining(t, c, "k"); left > tc.ttl2 {
				t.Fatalf("entry expires in %v, after the TTL %v of the write", left, tc.ttl2)
			}
			c.rc.Wait() // ristretto applies an update's cost on its policy goroutine
			if got := c.Stats().CostBytes; got != int64(tc.second) {
				t.Fatalf("CostBytes = %d, want %d after a full write", got, tc.second)
			}
		})
	}
}

func TestRewriteNeverOutlivesItsTTL(t *testing.T) {
	// An entry with about 260ms left takes a rewrite with a 300ms TTL (left
	// within [225ms, 300ms]) and keeps its expiry, which is inside 300ms. A
	// loaded machine can overshoot the window; then try again with a new key.
	c := newCache(t, Config{MaxBytes: 1 << 20})
	const ttl = 300 * time.Millisecond
	for attempt := 0; ; attempt++ {
		if attempt == 20 {
			t.Fatal("no rewrite landed in 20 attempts")
		}
		key := string(rune('a' + attempt))
		before := c.Stats().Rewrites
		if !c.Set(key, value(1, 10), ttl) {
			t.Fatal("first Set returned false")
		}
		time.Sleep(40 * time.Millisecond)
		if !c.Set(key, value(2, 10), ttl) {
			t.Fatal("second Set returned false")
		}
		if c.Stats().Rewrites == before {
			continue
		}
		written := time.Now()
		if left := remaining(t, c, key); left > ttl {
			t.Fatalf("rewritten entry expires in %v, beyond the write's TTL", left)
		}
		for {
			if _, ok := c.Get(key); !ok {
				break
			}
			if time.Since(written) > ttl+50*time.Millisecond {
				t.Fatalf("rewritten entry still served %v after a write with TTL %v", time.Since(written), ttl)
			}
			time.Sleep(5 * time.Millisecond)
		}
		return
	}
}

func TestRewriteAdvancesVersion(t *testing.T) {
	c := newCache(t, Config{MaxBytes: 1 << 20})
	c.Set("k", value(1, 100), time.Hour)
	tok := c.Version("k")
	c.Set("k", value(2, 100), time.Hour)
	if c.Stats().Rewrites != 1 {
		t.Fatal("second Set was not a rewrite; the test needs one")
	}
	if c.SetIfVersion("k", value(3, 100), time.Hour, tok) {
		t.Fatal("a backfill with a token from before the rewrite landed")
	}
	mustGet(t, c, "k", value(2, 100))
}

func TestRewriteUsesInjectedClock(t *testing.T) {
	clk := newFakeClock()
	c := newCache(t, Config{MaxBytes: 1 << 20, Clock: clk.Now})
	c.Set("k", value(1, 100), time.Hour)
	clk.Advance(50 * time.Minute)
	v := value(2, 100)
	c.Set("k", v, time.Hour)
	if c.Stats().Rewrites != 1 {
		t.Fatal("second Set was not a rewrite; the test needs one")
	}
	clk.Advance(50 * time.Minute) // 100 min after the first write, 50 after the rewrite
	mustGet(t, c, "k", v)
	clk.Advance(11 * time.Minute)
	mustMiss(t, c, "k")
}
