package l1

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/dgraph-io/ristretto/v2"
)

// countTouches makes c count the accesses it reports to ristretto (from
// one goroutine).
func countTouches(c *Cache) *int {
	n := new(int)
	c.testHookTouch = func() { *n++ }
	return n
}

// Every miss reaches ristretto; hits of one entry reach it up to
// touchesPerWindow times per window of the expiry clock.
func TestTouchPolicy(t *testing.T) {
	clk := newFakeClock()
	c := newCache(t, Config{MaxBytes: 1 << 20, Clock: clk.Now})
	n := countTouches(c)
	for range 100 {
		mustMiss(t, c, "absent")
	}
	if *n != 100 {
		t.Fatalf("100 misses reported %d accesses, want 100", *n)
	}
	v := value(1, 10)
	c.Set("k", v, time.Hour)
	window := time.Duration(1) << touchWindowShift
	for w := 1; w <= 3; w++ {
		*n = 0
		for range 10 * touchesPerWindow {
			mustGet(t, c, "k", v)
		}
		if *n != touchesPerWindow {
			t.Fatalf("window %d: %d hits reported %d accesses, want %d", w, 10*touchesPerWindow, *n, touchesPerWindow)
		}
		clk.Add(window)
	}
	// A clock that steps back starts a fresh count too.
	clk.Add(-10 * window)
	*n = 0
	mustGet(t, c, "k", v)
	if *n != 1 {
		t.Fatalf("a hit after the clock stepped back reported %d accesses, want 1", *n)
	}
}

// Concurrent hits never report more than touchesPerWindow in a window.
func TestTouchCapUnderContention(t *testing.T) {
	clk := newFakeClock()
	c := newCache(t, Config{MaxBytes: 1 << 20, Clock: clk.Now})
	var n atomic.Int64
	c.testHookTouch = func() { n.Add(1) }
	v := value(1, 10)
	c.Set("k", v, time.Hour)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				c.Get("k")
			}
		})
	}
	wg.Wait()
	if got := n.Load(); got < 1 || got > touchesPerWindow {
		t.Fatalf("8000 concurrent hits reported %d accesses, want 1..%d", got, touchesPerWindow)
	}
}

// On the real clock a hot key costs ristretto a bounded number of reports.
func TestTouchBoundedOnRealClock(t *testing.T) {
	c := newCache(t, Config{MaxBytes: 1 << 20})
	n := countTouches(c)
	v := value(1, 10)
	c.Set("k", v, time.Hour)
	start := time.Now()
	const hits = 200_000
	for range hits {
		c.Get("k")
	}
	windows := int(time.Since(start)>>touchWindowShift) + 2
	if *n < touchesPerWindow || *n > windows*touchesPerWindow {
		t.Fatalf("%d hits over at most %d windows reported %d accesses, want %d..%d",
			hits, windows, *n, touchesPerWindow, windows*touchesPerWindow)
	}
}

func TestTouchAfterCloseSkipsRistretto(t *testing.T) {
	c := newCache(t, Config{MaxBytes: 1 << 20})
	n := countTouches(c)
	c.Set("k", value(1, 10), time.Hour)
	c.Close()
	mustMiss(t, c, "k")
	if *n != 0 {
		t.Fatalf("a Get after Close reached ristretto %d times", *n)
	}
}

// After eviction settles, Get finds exactly the keys ristretto holds.
func TestIndexMatchesRistretto(t *testing.T) {
	c := newCache(t, Config{MaxBytes: 2000})
	keys := make([]string, 300)
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%d", i)
		c.Set(keys[i], value(i, 50+i%100), time.Hour)
		if i%7 == 0 {
			c.Get(keys[i/2]) // some frequency, so admission varies
		}
	}
	c.rc.Wait()
	if c.Stats().Evictions == 0 {
		t.Fatal("no evictions: the test does not exercise OnEvict")
	}
	n := 0
	for _, k := range keys {
		inIndex, inRistretto := indexed(c, k) != nil, held(c, k)
		if inIndex != inRistretto {
			t.Fatalf("index has key: %v, ristretto has it: %v", inIndex, inRistretto)
		}
		if inIndex {
			n++
		}
	}
	held := n
	if held == 0 {
		t.Fatal("nothing held")
	}
}

// A ristretto callback (eviction, refusal) takes out only the entry it
// names: once a newer entry of the key is indexed, the older one's
// eviction leaves it in place.
func TestCallbacksRemoveOnlyTheirEntry(t *testing.T) {
	c := newCache(t, Config{MaxBytes: 1 << 20})
	evict := func(key string) *entry {
		e := indexed(c, key)
		c.onEvict(&ristretto.Item[*entry]{Value: e})
		return e
	}
	c.Set("a", value(1, 10), time.Hour)
	evict("a")
	mustMiss(t, c, "a")

	c.Set("c", value(3, 10), time.Hour)
	old := indexed(c, "c")
	c.Set("c", value(4, 1000), time.Hour) // not a rewrite: a new entry
	if indexed(c, "c") == old {
		t.Fatal("the second Set rewrote the entry; the test needs a new one")
	}
	c.onEvict(&ristretto.Item[*entry]{Value: old})
	c.onReject(&ristretto.Item[*entry]{Value: old})
	mustGet(t, c, "c", value(4, 1000))
	if st := c.Stats(); st.Refused != 0 {
		t.Fatalf("Refused = %d for an entry the index no longer served", st.Refused)
	}
}

// Concurrent writers, deleters and readers over a cache small enough to
// evict constantly: once they stop, the index and ristretto agree on every
// key, and no Get ever returned bytes another key was written with.
func TestIndexMatchesRistrettoUnderConcurrency(t *testing.T) {
	c := newCache(t, Config{MaxBytes: 4000})
	const nkeys = 200
	keys := make([]string, nkeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%d", i)
	}
	var wrong atomic.Int64
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 3000 {
				k := (i*7 + g*13) % nkeys
				switch i % 5 {
				case 0, 1:
					c.Set(keys[k], value(k, 40+k%60), time.Hour)
				case 2:
					if i%15 == 2 {
						c.Delete(keys[k])
					}
				default:
					if v, ok := c.Get(keys[k]); ok && string(v) != string(value(k, 40+k%60)) {
						wrong.Add(1)
					}
				}
			}
		})
	}
	wg.Wait()
	c.rc.Wait()
	if n := wrong.Load(); n != 0 {
		t.Fatalf("%d Gets returned another key's value", n)
	}
	if c.Stats().Evictions == 0 {
		t.Fatal("no evictions: the test does not exercise OnEvict")
	}
	for _, k := range keys {
		inIndex, inRistretto := indexed(c, k) != nil, held(c, k)
		if inIndex != inRistretto {
			t.Fatalf("index has key: %v, ristretto has it: %v", inIndex, inRistretto)
		}
	}
}

// An entry is 48 bytes, a size class: no byte is wasted, and it holds no
// copy of the key.
func TestEntryIsOneSizeClass(t *testing.T) {
	if got := unsafe.Sizeof(entry{}); got != 48 {
		t.Fatalf("entry is %d bytes, want 48", got)
	}
}

// Entries start their report windows at their own phase, within one
// window, so hot keys do not all report at the same instants.
func TestTouchPhasesSpread(t *testing.T) {
	c := newCache(t, Config{MaxBytes: 1 << 20})
	phases := map[int64]bool{}
	for i := range 20 {
		k := fmt.Sprintf("k%d", i)
		c.Set(k, value(i, 10), time.Hour)
		e := indexed(c, k)
		if e == nil {
			t.Fatal("not indexed")
		}
		p := e.phase()
		if p < 0 || p >= 1<<touchWindowShift {
			t.Fatalf("phase %d outside one window", p)
		}
		phases[p] = true
	}
	if len(phases) < 15 {
		t.Fatalf("20 entries share %d phases", len(phases))
	}
}
