package l1

import (
	"math"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/testenv"
	"github.com/cachekit-io/cachekit-go/internal/testwait"
)

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
	if st.CostBytes != chargeOf(100) {
		t.Fatalf("CostBytes = %d, want the %d charged for the entry", st.CostBytes, chargeOf(100))
	}
}

func TestRewriteRefusedWhenTheChargeWouldNotFit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		second int
	}{
		{"larger charge", 113},        // 128 bytes against the entry's 112
		{"under half the charge", 38}, // 48 bytes, under half of 112
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCache(t, Config{MaxBytes: 1 << 20})
			if !c.Set("k", value(1, 100), time.Hour) {
				t.Fatal("first Set returned false")
			}
			before := c.Stats().Rewrites
			v := value(2, tc.second)
			if !c.Set("k", v, time.Hour) {
				t.Fatal("second Set returned false")
			}
			mustGet(t, c, "k", v)
			if got := c.Stats().Rewrites; got != before {
				t.Fatalf("Rewrites = %d, want %d: this write must go through ristretto", got, before)
			}
			c.rc.Wait() // ristretto applies an update's cost on its policy goroutine
			if got := c.Stats().CostBytes; got != chargeOf(tc.second) {
				t.Fatalf("CostBytes = %d, want %d after a full write", got, chargeOf(tc.second))
			}
		})
	}
}

func TestRewriteCarriesItsOwnTTL(t *testing.T) {
	// A rewrite with a shorter TTL than the entry had expires by the new
	// TTL; one with a longer TTL lives the new TTL.
	clk := newFakeClock()
	c := newCache(t, Config{MaxBytes: 1 << 20, Clock: clk.Now})
	c.Set("short", value(1, 100), time.Hour)
	c.Set("long", value(1, 100), time.Minute)
	vs, vl := value(2, 100), value(3, 100)
	c.Set("short", vs, time.Minute)
	c.Set("long", vl, time.Hour)
	if got := c.Stats().Rewrites; got != 2 {
		t.Fatalf("Rewrites = %d, want 2; the test needs both", got)
	}
	clk.Add(time.Minute - time.Nanosecond)
	mustGet(t, c, "short", vs)
	clk.Add(time.Nanosecond)
	mustMiss(t, c, "short")
	mustGet(t, c, "long", vl)
	clk.Add(59 * time.Minute)
	mustMiss(t, c, "long")
}

func TestExpiryWithoutClock(t *testing.T) {
	// Real time: a value is served until its TTL and never after; a rewrite
	// restarts the TTL.
	c := newCache(t, Config{MaxBytes: 1 << 20})
	const ttl = 150 * time.Millisecond
	c.Set("k", value(1, 10), ttl)
	time.Sleep(100 * time.Millisecond) // real time passing is what this test is about
	v := value(2, 10)
	written := time.Now()
	c.Set("k", v, ttl)
	if c.Stats().Rewrites != 1 {
		t.Fatal("second Set was not a rewrite; the test needs one")
	}
	testwait.For(t, ttl+200*time.Millisecond, func() bool {
		got, ok := c.Get("k")
		if ok && string(got) != string(v) {
			t.Fatal("Get returned the value before the rewrite")
		}
		return !ok
	}, "the rewritten entry expiring after its TTL")
	if age := time.Since(written); age < ttl {
		t.Fatalf("rewritten entry missed after %v, before its TTL %v", age, ttl)
	}
	before := c.Stats().Expirations
	mustMiss(t, c, "k")
	if c.Stats().Expirations != before+1 {
		t.Fatal("a Get of an expired entry was not counted in Expirations")
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

func TestHugeTTLDoesNotWrap(t *testing.T) {
	// With a Clock, expiry is Unix nanoseconds: now + MaxInt64 would wrap
	// negative and expire the value at once.
	clk := newFakeClock()
	c := newCache(t, Config{MaxBytes: 1 << 20, Clock: clk.Now})
	v := value(1, 10)
	if !c.Set("k", v, time.Duration(math.MaxInt64)) {
		t.Fatal("Set returned false")
	}
	clk.Add(100 * 365 * 24 * time.Hour)
	mustGet(t, c, "k", v)
}

// Readers racing rewrites see one whole value, never one value's bytes
// with another's length or expiry: a rewrite stores the value's three words
// under the entry's sequence counter.
func TestRewriteReadersSeeWholeValues(t *testing.T) {
	c := newCache(t, Config{MaxBytes: 1 << 20})
	long, short := value(1, 100), value(2, 60) // one size class apart: rewrites
	c.Set("k", long, time.Hour)
	var torn atomic.Int64
	stop := testenv.Spin(2, func() {
		if got, ok := c.Get("k"); !ok || (string(got) != string(long) && string(got) != string(short)) {
			torn.Add(1)
		}
	})
	for i := range 20000 {
		v := long
		if i%2 == 0 {
			v = short
		}
		c.Set("k", v, time.Hour)
	}
	stop()
	if c.Stats().Rewrites < 20000 {
		t.Fatalf("%d rewrites: the test needs every Set to rewrite", c.Stats().Rewrites)
	}
	if n := torn.Load(); n != 0 {
		t.Fatalf("%d Gets returned a value that was never stored", n)
	}
}

// A rewrite keeps no reference to the value it replaced: the old value's
// memory can be collected while the entry lives on.
func TestRewriteReleasesOldValue(t *testing.T) {
	c := newCache(t, Config{MaxBytes: 1 << 20})
	old := make([]byte, 100)
	freed := make(chan struct{})
	runtime.AddCleanup(&old[0], func(ch chan struct{}) { close(ch) }, freed)
	c.Set("k", old, time.Hour)
	old = nil
	v := value(2, 100)
	c.Set("k", v, time.Hour)
	if c.Stats().Rewrites != 1 {
		t.Fatal("the second Set was not a rewrite; the test needs one")
	}
	deadline := time.After(10 * time.Second)
	for {
		runtime.GC()
		select {
		case <-freed:
			mustGet(t, c, "k", v)
			return
		case <-deadline:
			t.Fatal("the replaced value is still reachable after the rewrite")
		default:
			runtime.Gosched()
		}
	}
}
