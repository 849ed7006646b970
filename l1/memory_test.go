//go:build !race

package l1

import (
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/testenv"
)

// liveHeap returns HeapAlloc and HeapInuse after a full collection.
var liveHeap = testenv.HeapAfterGC

// fill stores n entries of vlen-byte values under fresh keys, then waits
// for ristretto's verdicts.
func fill(tb testing.TB, c *Cache, from, n, vlen int) {
	tb.Helper()
	for i := from; i < from+n; i++ {
		if !c.Set("overhead:key:"+strconv.Itoa(i), make([]byte, vlen), time.Hour) {
			tb.Fatalf("Set %d returned false", i)
		}
	}
	c.rc.Wait()
}

// overheadTolerance is how far EntryOverhead may lie from what the heap
// shows. Go's maps (ristretto's store and cost maps) double, so the bytes
// per entry move with the entry count (156 to 209 on Go 1.26); the
// measurement averages four counts spaced evenly, on a log scale, across
// one doubling.
const overheadTolerance = 0.15

// EntryOverhead re-measured: what the heap grows by per entry, beyond the
// value's allocation, averaged over points across one doubling of Go's maps.
// (Named Alloc so that make test runs it in its pass without -race.)
func TestAllocEntryOverheadMeasured(t *testing.T) {
	const vlen = 16
	c := newCache(t, Config{MaxBytes: 256 << 20})
	base, baseInuse := liveHeap()
	sum, n := 0.0, 0
	for _, upto := range []int{100_000, 118_921, 141_421, 168_179} { // 100k × 2^(k/4)
		fill(t, c, n, upto-n, vlen)
		n = upto
		if st := c.Stats(); st.Entries != int64(n) || st.Rejected != 0 {
			t.Fatalf("after %d Sets: %d entries, %d rejected", n, st.Entries, st.Rejected)
		}
		alloc, inuse := liveHeap()
		// The value is a record in the arena, which fills chunks in
		// order: no cleaning happens without evictions.
		rec := float64(c.arena.recBytes(vlen))
		per := float64(alloc-base)/float64(n) - rec
		t.Logf("%d entries: %.1f B/entry beyond the value's record (HeapAlloc), %.1f (HeapInuse)",
			n, per, float64(inuse-baseInuse)/float64(n)-rec)
		sum += per
	}
	mean := sum / 4
	t.Logf("mean %.1f B/entry; EntryOverhead = %d", mean, EntryOverhead)
	if lo, hi := mean*(1-overheadTolerance), mean*(1+overheadTolerance); float64(EntryOverhead) < lo || float64(EntryOverhead) > hi {
		t.Fatalf("EntryOverhead = %d, measured %.1f B/entry: outside ±%.0f%%; re-measure and update it",
			EntryOverhead, mean, overheadTolerance*100)
	}
	runtime.KeepAlive(c)
}

// FixedBytes re-measured: what New allocates for an empty cache, within
// 10%, for small and preset-sized caps.
func TestAllocFixedBytesMeasured(t *testing.T) {
	for _, maxBytes := range []int64{1 << 20, 16 << 20, 64 << 20, 256 << 20} {
		base, _ := liveHeap()
		c := newCache(t, Config{MaxBytes: maxBytes})
		alloc, _ := liveHeap()
		got, want := alloc-base, FixedBytes(maxBytes)
		t.Logf("MaxBytes %d MiB: New allocated %.2f MiB, FixedBytes %.2f MiB", maxBytes>>20,
			float64(got)/(1<<20), float64(want)/(1<<20))
		if d := float64(got-want) / float64(want); d > 0.1 || d < -0.1 {
			t.Fatalf("FixedBytes(%d) = %d, New allocated %d: off by %.0f%%", maxBytes, want, got, d*100)
		}
		c.Close()
		runtime.KeepAlive(c)
	}
}

// TestMemorySweep measures, for caps of 8, 16 and 64 MiB and one value
// size at a time, the heap a full cache holds after 25 times the keys it
// can hold (at most 3 million) were Set, as a ratio of the cap once
// FixedBytes is taken off (bench/README.md quotes it). A measurement, not
// a gate: a few minutes, so it runs only with CACHEKIT_MEMSWEEP set.
func TestMemorySweep(t *testing.T) {
	if os.Getenv("CACHEKIT_MEMSWEEP") == "" {
		t.Skip("a measurement: set CACHEKIT_MEMSWEEP=1 to run it")
	}
	for _, capBytes := range []int64{8 << 20, 16 << 20, 64 << 20} {
		for _, vlen := range []int{40, 70, 130, 200, 250, 600, 2000} {
			base, baseInuse := liveHeap()
			c := newCache(t, Config{MaxBytes: capBytes})
			val := make([]byte, vlen)
			n := int(min(25*capBytes/(EntryOverhead+c.valueCharge(val)), 3_000_000))
			for i := range n {
				c.Set("sweep:"+strconv.Itoa(i), val, time.Hour)
			}
			c.Wait()
			alloc, inuse := liveHeap()
			fixed := c.FixedBytes()
			t.Logf("cap %d MiB, value %4d B: %6d entries; HeapInuse %.3f × cap + FixedBytes (HeapAlloc %.3f ×); arena %.2f × its live records",
				capBytes>>20, vlen, c.Stats().Entries, float64(inuse-baseInuse-fixed)/float64(capBytes),
				float64(alloc-base-fixed)/float64(capBytes), float64(c.arena.total.Load())/float64(max(c.arena.live.Load(), 1)))
			c.Close()
		}
	}
}
