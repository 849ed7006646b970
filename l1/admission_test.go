package l1

import (
	"strconv"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/testwait"
)

// A new key is served from the index while ristretto's admission of it is
// in flight. These tests hold that admission at one step (the Cost
// callback, where ristretto's goroutine takes the entry from its buffer,
// before it decides) and interleave writes, Delete and Clear, then check
// that Get never served a stale value and that, once ristretto has decided,
// the index serves exactly what ristretto holds.

// verdictGate holds ristretto's goroutine when it reaches the entry of key.
type verdictGate struct {
	reached chan struct{}
	release chan struct{}
}

// holdVerdict makes ristretto's goroutine stop before deciding on key's
// next new or updated entry until the returned gate is released.
func holdVerdict(t *testing.T, c *Cache, key string) *verdictGate {
	t.Helper()
	g := &verdictGate{reached: make(chan struct{}), release: make(chan struct{})}
	h := c.keyHash(key)
	armed := true
	c.testHookVerdict = func(e *entry) {
		if armed && e.hash == h {
			armed = false // only ristretto's goroutine runs the hook
			close(g.reached)
			<-g.release
		}
	}
	t.Cleanup(func() {
		select {
		case <-g.release:
		default:
			close(g.release)
		}
	})
	return g
}

func (g *verdictGate) wait(t *testing.T) {
	t.Helper()
	select {
	case <-g.reached:
	case <-time.After(10 * time.Second):
		t.Fatal("ristretto never reached the held entry")
	}
}

func (g *verdictGate) open() { close(g.release) }

// settled checks, after every queued verdict, that key's index entry is
// the very entry ristretto stores for it (or that neither has one), and
// that Get returns want (nil: a miss).
func settled(t *testing.T, c *Cache, key string, want []byte) {
	t.Helper()
	c.Wait()
	e := indexed(c, key)
	inStore, ok := c.rc.Get(c.keyHash(key))
	switch {
	case e == nil && ok:
		t.Fatal("ristretto stores an entry the index does not serve")
	case e != nil && !ok:
		t.Fatal("the index serves an entry ristretto does not hold: never charged, never evicted")
	case e != nil && inStore != e:
		t.Fatal("the index serves another entry than the one ristretto holds")
	}
	if want == nil {
		mustMiss(t, c, key)
	} else {
		mustGet(t, c, key, want)
	}
}

// Delete while the new key's admission is in flight: the key is gone at
// once and stays gone once ristretto admits the entry (its queued delete
// follows the admission).
func TestDeleteDuringAdmission(t *testing.T) {
	c := newCache(t, Config{MaxBytes: 1 << 20})
	g := holdVerdict(t, c, "k")
	if !c.Set("k", value(1, 10), time.Hour) {
		t.Fatal("Set returned false")
	}
	g.wait(t)
	mustGet(t, c, "k", value(1, 10)) // read-your-write before the verdict
	c.Delete("k")
	mustMiss(t, c, "k")
	g.open()
	settled(t, c, "k", nil)
}

// Delete, then a new Set of the key, while the first entry's admission is
// in flight: the second value is served throughout and kept.
func TestDeleteThenSetDuringAdmission(t *testing.T) {
	c := newCache(t, Config{MaxBytes: 1 << 20})
	g := holdVerdict(t, c, "k")
	c.Set("k", value(1, 10), time.Hour)
	g.wait(t)
	c.Delete("k")
	v2 := value(2, 10)
	if !c.Set("k", v2, time.Hour) {
		t.Fatal("Set returned false")
	}
	mustGet(t, c, "k", v2)
	g.open()
	settled(t, c, "k", v2)
}

// The subtle order: the deleted entry reaches ristretto's store before the
// delete queued behind it is applied, and a new Set of the key comes in
// between. Ristretto must not let the new entry replace the deleted one
// (its queued delete would then remove the new entry from the store while
// the index serves it, uncharged and never evicted): shouldUpdate refuses.
func TestSetBetweenAdmissionAndQueuedDelete(t *testing.T) {
	c := newCache(t, Config{MaxBytes: 1 << 20})
	gate := holdVerdict(t, c, "gate")
	c.Set("gate", value(9, 10), time.Hour)
	gate.wait(t) // ristretto's goroutine is held; what follows queues up
	c.Set("k", value(1, 10), time.Hour)
	blocker := &verdictGate{reached: make(chan struct{}), release: make(chan struct{})}
	hb := c.keyHash("blocker")
	armed := true
	prevHook := c.testHookVerdict
	c.testHookVerdict = func(e *entry) {
		if armed && e.hash == hb {
			armed = false
			close(blocker.reached)
			<-blocker.release
			return
		}
		prevHook(e)
	}
	defer close(blocker.release)
	c.Set("blocker", value(8, 10), time.Hour)
	c.Delete("k") // k's entry is still queued: its delete queues behind blocker
	gate.open()
	blocker.wait(t) // k's entry is now in the store; its delete is queued
	if !held(c, "k") {
		t.Fatal("the deleted entry is not in ristretto's store; the test needs it there")
	}
	mustMiss(t, c, "k")
	v2 := value(2, 10)
	if !c.Set("k", v2, time.Hour) {
		t.Fatal("Set returned false")
	}
	mustGet(t, c, "k", v2)
	blocker.release <- struct{}{}
	settled(t, c, "k", v2)
}

// A second Set of a new key, with a value too different to rewrite the
// entry in place, while the first entry's admission is in flight: ristretto
// would refuse the second of two queued new entries of one key, so this Set
// waits for the first verdict and then replaces the entry.
func TestOverwriteDuringAdmission(t *testing.T) {
	c := newCache(t, Config{MaxBytes: 1 << 20})
	g := holdVerdict(t, c, "k")
	c.Set("k", value(1, 10), time.Hour)
	g.wait(t)
	v2 := value(2, 1000)
	done := make(chan bool)
	go func() { done <- c.Set("k", v2, time.Hour) }()
	// The Set publishes its entry, queues it behind the held one, and
	// waits for the verdicts.
	testwait.For(t, 10*time.Second, func() bool {
		got, ok := c.Get("k")
		return ok && string(got) == string(v2)
	}, "the second entry published")
	g.open()
	if !<-done {
		t.Fatal("Set returned false")
	}
	mustGet(t, c, "k", v2)
	settled(t, c, "k", v2)
	if st := c.Stats(); st.Rejected != 0 || st.Refused != 0 {
		t.Fatalf("Rejected, Refused = %d, %d: the retried duplicate was counted", st.Rejected, st.Refused)
	}
}

// Clear while a new key's admission is in flight: the key is gone once
// Clear returns, and ristretto's drop of it reaches the index.
func TestClearDuringAdmission(t *testing.T) {
	c := newCache(t, Config{MaxBytes: 1 << 20})
	g := holdVerdict(t, c, "k")
	c.Set("k", value(1, 10), time.Hour)
	g.wait(t)
	swapped := make(chan struct{})
	c.testHookClear = func() { close(swapped) }
	cleared := make(chan struct{})
	go func() { c.Clear(); close(cleared) }()
	<-swapped
	mustMiss(t, c, "k")
	g.open()
	<-cleared
	settled(t, c, "k", nil)
	v2 := value(2, 10)
	c.Set("k", v2, time.Hour)
	settled(t, c, "k", v2)
}

// A refused new entry leaves the index when the verdict comes, not before:
// Get serves it until then.
func TestRefusalAfterSetReturned(t *testing.T) {
	c := newCache(t, Config{MaxBytes: chargeOf(16)})
	c.Set("a", value(1, 16), time.Hour)
	c.Wait()
	g := holdVerdict(t, c, "b")
	if !c.Set("b", value(2, 16), time.Hour) {
		t.Fatal("Set returned false")
	}
	g.wait(t)
	mustGet(t, c, "b", value(2, 16))
	g.open()
	c.Wait()
	// One of the two stays (which one, admission decides); the index
	// agrees with ristretto on both.
	settledEither(t, c, "a", value(1, 16))
	settledEither(t, c, "b", value(2, 16))
	if indexed(c, "a") != nil && indexed(c, "b") != nil {
		t.Fatal("both entries held in a cache with room for one")
	}
}

// settledEither is settled for a key that may or may not have stayed.
func settledEither(t *testing.T, c *Cache, key string, v []byte) {
	t.Helper()
	if indexed(c, key) != nil {
		settled(t, c, key, v)
	} else {
		settled(t, c, key, nil)
	}
}

// A burst of new keys faster than ristretto's goroutine admits them is
// paced, not dropped: Set waits once maxQueued entries are queued. The
// queue count returns to zero once ristretto has taken them, after a
// Clear that drops queued entries too.
func TestNewKeyBurstIsPacedNotDropped(t *testing.T) {
	c := newCache(t, Config{MaxBytes: 1 << 20}) // about 4,000 entries: it evicts
	v := value(1, 32)
	for i := range 100_000 {
		if !c.Set("burst:"+strconv.Itoa(i), v, time.Hour) {
			t.Fatalf("Set %d returned false", i)
		}
		if q := c.queued.Load(); q > maxQueued+1 {
			t.Fatalf("%d entries queued, over maxQueued", q)
		}
		if i == 50_000 {
			c.Clear()
		}
	}
	c.Wait()
	st := c.Stats()
	if st.Dropped != 0 {
		t.Fatalf("%d new keys dropped", st.Dropped)
	}
	if q := c.queued.Load(); q != 0 {
		t.Fatalf("queued = %d after every verdict, want 0", q)
	}
	if st.Evictions == 0 {
		t.Fatal("no evictions: the test does not load ristretto's goroutine")
	}
}
