package l1

import (
	"sync"
	"sync/atomic"
	"testing"
)

// testEntry returns an entry in segment 0 whose hash is low (the slot).
func testEntry(low uint64, check uint32) *entry {
	return newEntry(low, check, nil, 0, 0)
}

// The index's tables: removal leaves a tombstone that probes pass over,
// tombstones and growth trigger rebuilds, and the live count is exact.
func TestIndexTombstonesAndGrowth(t *testing.T) {
	var x index
	x.init(1, new(arena)) // the smallest tables
	sg := x.segment(0)
	start := len(sg.tab.Load().slots)
	// Colliding hashes (same slot) chain; removing the first keeps the
	// rest reachable through its tombstone.
	a, b, c := testEntry(1, 1), testEntry(1, 2), testEntry(1, 3)
	for _, e := range []*entry{a, b, c} {
		if x.publish(e) != nil {
			t.Fatal("a new entry replaced something")
		}
	}
	if x.remove(1, 1, nil) != a {
		t.Fatal("remove did not return the entry")
	}
	if x.get(1, 2) != b || x.get(1, 3) != c || x.get(1, 1) != nil {
		t.Fatal("entries behind a tombstone are not found")
	}
	// A publish of an existing key replaces it in place.
	c2 := testEntry(1, 3)
	if x.publish(c2) != c || x.get(1, 3) != c2 {
		t.Fatal("publish of an indexed key did not replace its entry")
	}
	// remove with an entry removes only that entry.
	if x.remove(1, 3, c) != nil || x.get(1, 3) != c2 {
		t.Fatal("remove of a replaced entry took the newer one")
	}
	// Many entries grow the table; all stay reachable.
	const n = 1000
	for i := range uint64(n) {
		x.publish(testEntry(100+i, 7))
	}
	if got := len(sg.tab.Load().slots); got <= start || 8*sg.live > 5*got {
		t.Fatalf("table of %d slots for %d entries (started at %d)", got, sg.live, start)
	}
	for i := range uint64(n) {
		if x.get(100+i, 7) == nil {
			t.Fatalf("entry %d lost in a rebuild", i)
		}
	}
	// Churn: removals and inserts keep the table from filling with
	// tombstones (a rebuild purges them) and the count exact.
	size := len(sg.tab.Load().slots)
	for i := range uint64(20 * n) {
		x.remove(100+i, 7, nil)
		x.publish(testEntry(100+n+i, 7))
	}
	if x.len() != n+2 || sg.used > 3*len(sg.tab.Load().slots)/4 {
		t.Fatalf("after churn: %d entries (want %d), %d of %d slots used", x.len(), n+2, sg.used, len(sg.tab.Load().slots))
	}
	if got := len(sg.tab.Load().slots); got > 2*size {
		t.Fatalf("churn at a constant count grew the table from %d to %d slots", size, got)
	}
}

// Readers probing without a lock never miss an entry that stays indexed,
// while writers insert and remove others and rebuild the table under them.
func TestIndexReadersDuringRebuilds(t *testing.T) {
	var x index
	x.init(1, new(arena))
	stable := make([]*entry, 64)
	for i := range stable {
		stable[i] = testEntry(uint64(i)*0x9E3779B97F4A7C15>>8, uint32(i))
		x.publish(stable[i])
	}
	var stop atomic.Bool
	var misses atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for !stop.Load() {
				for _, e := range stable {
					if x.get(e.hash, e.check) != e {
						misses.Add(1)
					}
				}
			}
		})
	}
	for i := range uint64(200_000) {
		h := (i + 1000) * 0x9E3779B97F4A7C15 >> 8
		x.publish(testEntry(h, 99))
		if i >= 500 {
			x.remove((i+500)*0x9E3779B97F4A7C15>>8, 99, nil)
		}
	}
	stop.Store(true)
	wg.Wait()
	if n := misses.Load(); n != 0 {
		t.Fatalf("readers missed stable entries %d times", n)
	}
}
