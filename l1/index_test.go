package l1

import (
	"fmt"
	"strings"
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
		clk.Advance(window)
	}
	// A clock that steps back starts a fresh count too.
	clk.Advance(-10 * window)
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
	held := 0
	for _, k := range keys {
		_, inIndex := c.index.Load(k)
		_, inRistretto := c.rc.GetTTL(k)
		if inIndex != inRistretto {
			t.Fatalf("index has key: %v, ristretto has it: %v", inIndex, inRistretto)
		}
		if inIndex {
			held++
		}
	}
	if held == 0 {
		t.Fatal("nothing held")
	}
}

// An eviction racing with the write that publishes the entry removes it
// whichever runs first.
func TestPublishAndEvictInEitherOrder(t *testing.T) {
	c := newCache(t, Config{MaxBytes: 1 << 20})
	evict := func(e *entry) { c.onEvict(&ristretto.Item[*entry]{Value: e}) }

	e := newEntry("a", stored{val: value(1, 10), exp: c.deadline(time.Hour)}, 10)
	evict(e)
	c.publish(e)
	mustMiss(t, c, "a")

	e = newEntry("b", stored{val: value(2, 10), exp: c.deadline(time.Hour)}, 10)
	c.publish(e)
	mustGet(t, c, "b", value(2, 10))
	evict(e)
	mustMiss(t, c, "b")

	// The eviction of an entry that a newer one has replaced leaves the
	// newer one in place.
	old := newEntry("c", stored{val: value(3, 10), exp: c.deadline(time.Hour)}, 10)
	c.publish(old)
	cur := newEntry("c", stored{val: value(4, 10), exp: c.deadline(time.Hour)}, 10)
	c.publish(cur)
	evict(old)
	mustGet(t, c, "c", value(4, 10))
}

// A Set never rewrites an entry ristretto has already dropped: it goes
// through ristretto again, so the value stays accounted for.
func TestRewriteSkipsEvictedEntry(t *testing.T) {
	c := newCache(t, Config{MaxBytes: 1 << 20})
	c.Set("k", value(1, 10), time.Hour)
	ei, _ := c.index.Load("k")
	e := ei.(*entry)
	e.gone.Store(true) // as OnEvict leaves it, before it unpublishes
	before := c.Stats().Rewrites
	if !c.Set("k", value(2, 10), time.Hour) {
		t.Fatal("Set returned false")
	}
	if c.Stats().Rewrites != before {
		t.Fatal("the Set rewrote an evicted entry")
	}
	ni, _ := c.index.Load("k")
	if ni.(*entry) == e {
		t.Fatal("the index still holds the evicted entry")
	}
	mustGet(t, c, "k", value(2, 10))
	if _, ok := c.rc.GetTTL("k"); !ok {
		t.Fatal("ristretto does not hold the key Get returns")
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
		_, inIndex := c.index.Load(k)
		_, inRistretto := c.rc.GetTTL(k)
		if inIndex != inRistretto {
			t.Fatalf("index has key: %v, ristretto has it: %v", inIndex, inRistretto)
		}
	}
}

// The index keeps its own copy of a key, so a key sliced from a larger
// string does not keep that string alive for the entry's lifetime.
func TestIndexCopiesKey(t *testing.T) {
	c := newCache(t, Config{MaxBytes: 1 << 20})
	big := strings.Repeat("x", 1<<16) + "key"
	key := big[len(big)-4:]
	c.Set(key, value(1, 10), time.Hour)
	ei, ok := c.index.Load(key)
	if !ok {
		t.Fatal("key not indexed")
	}
	if unsafe.StringData(ei.(*entry).key) == unsafe.StringData(key) {
		t.Fatal("the entry shares the caller's key bytes")
	}
	mustGet(t, c, key, value(1, 10))
}

// Entries start their report windows at their own phase, within one
// window, so hot keys do not all report at the same instants.
func TestTouchPhasesSpread(t *testing.T) {
	c := newCache(t, Config{MaxBytes: 1 << 20})
	phases := map[int64]bool{}
	for i := range 20 {
		k := fmt.Sprintf("k%d", i)
		c.Set(k, value(i, 10), time.Hour)
		ei, ok := c.index.Load(k)
		if !ok {
			t.Fatal("not indexed")
		}
		p := ei.(*entry).phase
		if p < 0 || p >= 1<<touchWindowShift {
			t.Fatalf("phase %d outside one window", p)
		}
		phases[p] = true
	}
	if len(phases) < 15 {
		t.Fatalf("20 entries share %d phases", len(phases))
	}
}
