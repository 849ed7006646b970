package l1

import (
	"encoding/binary"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/testenv"
)

func TestVersionStableWithoutWrites(t *testing.T) {
	c := newCache(t, Config{MaxBytes: 1 << 20})
	v := c.Version("k")
	c.Get("k")
	c.Get("other")
	if c.Version("k") != v {
		t.Fatal("reads changed the version")
	}
	if !c.SetIfVersion("k", value(1, 8), time.Minute, v) {
		t.Fatal("backfill with a current token did not land")
	}
	mustGet(t, c, "k", value(1, 8))
}

// Each row is one deterministic interleaving: the backfill reads the token,
// then `between` runs, then the backfill tries to land.
func TestSetIfVersionInterleavings(t *testing.T) {
	newer := value(2, 8)
	stale := value(1, 8)
	cases := []struct {
		name    string
		between func(c *Cache)
		lands   bool
		want    []byte // nil: the key must be absent
	}{
		{"nothing", func(*Cache) {}, true, stale},
		{"Set", func(c *Cache) { c.Set("k", newer, time.Minute) }, false, newer},
		{"Delete", func(c *Cache) { c.Delete("k") }, false, nil},
		{"Set then Delete", func(c *Cache) { c.Set("k", newer, time.Minute); c.Delete("k") }, false, nil},
		{"rejected Set", func(c *Cache) { c.Set("k", value(3, 1<<21), time.Minute) }, false, nil},
		{"Set with ttl 0", func(c *Cache) { c.Set("k", newer, 0) }, false, nil},
		{"other backfill landed", func(c *Cache) {
			c.SetIfVersion("k", newer, time.Minute, c.Version("k"))
		}, false, newer},
		{"Clear", func(c *Cache) { c.Clear() }, false, nil},
		{"read of the key", func(c *Cache) { c.Get("k") }, true, stale},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCache(t, Config{MaxBytes: 1 << 20})
			v := c.Version("k")
			tc.between(c)
			staleBefore := c.Stats().Stale
			if got := c.SetIfVersion("k", stale, time.Minute, v); got != tc.lands {
				t.Fatalf("SetIfVersion = %v, want %v", got, tc.lands)
			}
			if !tc.lands && c.Stats().Stale != staleBefore+1 {
				t.Fatal("skipped backfill not counted in Stats.Stale")
			}
			if tc.want == nil {
				mustMiss(t, c, "k")
			} else {
				mustGet(t, c, "k", tc.want)
			}
		})
	}
}

// A Set that starts while a backfill holds the key's stripe waits for it and
// then wins: the backfill can never land after a Set that began later.
func TestSetWaitsForBackfillInProgress(t *testing.T) {
	c := newCache(t, Config{MaxBytes: 1 << 20})
	newer := value(2, 8)
	setDone := make(chan struct{})
	var setReturned atomic.Bool
	c.testHookLocked = func() {
		c.testHookLocked = nil // only the backfill runs the hook
		started := make(chan struct{})
		go func() {
			close(started)
			c.Set("k", newer, time.Minute)
			setReturned.Store(true)
			close(setDone)
		}()
		<-started
		time.Sleep(20 * time.Millisecond) // give a broken lock the chance to let Set through
		if setReturned.Load() {
			t.Error("Set completed while a backfill of the same key held its stripe")
		}
	}
	if !c.SetIfVersion("k", value(1, 8), time.Minute, c.Version("k")) {
		t.Fatal("backfill with a fresh token did not land")
	}
	<-setDone
	mustGet(t, c, "k", newer)
}

// The client's pattern with real goroutines: readers delete and backfill
// from a "slower tier" while a writer moves the value forward. Whenever the
// writer reads its key after a Set, it must see that Set's value or newer
// (or a miss when a reader deleted it), never an older value.
func TestBackfillRaceNeverGoesBackwards(t *testing.T) {
	c := newCache(t, Config{MaxBytes: 1 << 20})
	var tier atomic.Uint64 // the slower tier's current sequence number
	enc := func(n uint64) []byte { b := make([]byte, 8); binary.BigEndian.PutUint64(b, n); return b }
	stop := testenv.Spin(2, func() {
		c.Delete("k")
		if _, ok := c.Get("k"); !ok {
			v := c.Version("k")
			c.SetIfVersion("k", enc(tier.Load()), time.Minute, v)
		}
	})
	defer stop()
	for i := uint64(1); i <= 3000; i++ {
		tier.Store(i)
		c.Set("k", enc(i), time.Minute)
		if got, ok := c.Get("k"); ok && binary.BigEndian.Uint64(got) < i {
			stop()
			t.Fatalf("after Set %d read older value %d", i, binary.BigEndian.Uint64(got))
		}
	}
}
