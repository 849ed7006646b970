package l1

import (
	"encoding/binary"
	"strconv"
	"sync"
	"testing"
	"time"
)

// arenaLimit is what the chunks may hold after a run of Sets of values of
// up to maxLen bytes and c.Wait: cleaning keeps them at most a few chunks
// over 9/8 of the live records while Sets run, and the new entries still
// queued when the last Set returned evict as many more after it.
func arenaLimit(c *Cache, maxLen int) int64 {
	live := c.arena.live.Load()
	return live + live/8 + 6*int64(c.arena.size) + maxQueued*(recHeader+int64(maxLen))
}

// running reports whether stop is still open.
func running(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return false
	default:
		return true
	}
}

// keyed is a value of n bytes (n ≥ 8) that names the key it was written
// under: a read that returns another key's bytes is caught.
func keyed(i, n int) []byte {
	b := make([]byte, n)
	for j := 0; j+8 <= n; j += 8 {
		binary.LittleEndian.PutUint64(b[j:], uint64(i))
	}
	return b
}

func keyOf(tb testing.TB, b []byte) int {
	tb.Helper()
	i := binary.LittleEndian.Uint64(b)
	for j := 8; j+8 <= len(b); j += 8 {
		if binary.LittleEndian.Uint64(b[j:]) != i {
			tb.Fatalf("value torn: word %d is %d, word 0 is %d", j/8, binary.LittleEndian.Uint64(b[j:]), i)
		}
	}
	return int(i)
}

// Under eviction on every Set, cleaning keeps the arena's chunks within
// 9/8 of the live records plus a few chunks, and every value it moved
// reads back as written.
func TestArenaCleaningBoundsChunks(t *testing.T) {
	c := newCache(t, Config{MaxBytes: 4 << 20})
	const n = 200_000
	for i := range n {
		c.Set("arena:"+strconv.Itoa(i), keyed(i, 32+8*(i%10)), time.Hour)
	}
	c.Wait()
	a := &c.arena
	total, live := a.total.Load(), a.live.Load()
	t.Logf("%d entries, %d B of live records in %d B of chunks (%.2f×; chunk %d B)",
		c.Stats().Entries, live, total, float64(total)/float64(live), a.size)
	if limit := arenaLimit(c, 32+8*9); total > limit {
		t.Fatalf("chunks hold %d B for %d B of live records, over %d", total, live, limit)
	}
	held := 0
	for i := range n {
		if b, ok := c.Get("arena:" + strconv.Itoa(i)); ok {
			held++
			if got := keyOf(t, b); got != i || len(b) != 32+8*(i%10) {
				t.Fatalf("key %d reads key %d's value (%d bytes)", i, got, len(b))
			}
		}
	}
	if held == 0 {
		t.Fatal("no entry held")
	}
}

// The live count is exact: after every key is deleted, or the cache
// cleared, no record is live.
func TestArenaLiveCount(t *testing.T) {
	c := newCache(t, Config{MaxBytes: 64 << 20})
	for i := range 1000 {
		c.Set("k"+strconv.Itoa(i), keyed(i, 40), time.Hour)
	}
	for i := range 1000 { // rewrites: one record replaces another
		c.Set("k"+strconv.Itoa(i), keyed(i, 48), time.Hour)
	}
	c.Wait()
	if got, want := c.arena.live.Load(), int64(1000*(recHeader+48)); got != want {
		t.Fatalf("live = %d, want %d", got, want)
	}
	for i := range 500 {
		c.Delete("k" + strconv.Itoa(i))
	}
	if got, want := c.arena.live.Load(), int64(500*(recHeader+48)); got != want {
		t.Fatalf("live after deletes = %d, want %d", got, want)
	}
	c.Clear()
	if got := c.arena.live.Load(); got != 0 {
		t.Fatalf("live after Clear = %d", got)
	}
}

// Chunks each a little under 8/9 live (57 of 65 records, 0.877 of the
// chunk) hold more than 9/8 of the live records: cleaning must bring them
// back under the mark, not put every chunk back as too live to copy.
func TestArenaCleaningUniformlyLiveChunks(t *testing.T) {
	c := newCache(t, Config{MaxBytes: 64 << 20})
	const perChunk, chunks = 65, 800
	val := func(i int) []byte { return keyed(i, c.arena.size/perChunk-recHeader) }
	for i := range perChunk * chunks {
		c.Set("u"+strconv.Itoa(i), val(i), time.Hour)
	}
	c.Wait()
	if st := c.Stats(); st.Entries != perChunk*chunks {
		t.Fatalf("%d entries held of %d", st.Entries, perChunk*chunks)
	}
	for i := range perChunk * chunks {
		if i%perChunk < 8 {
			c.Delete("u" + strconv.Itoa(i))
		}
	}
	for i := range 2000 { // writes, which clean once a chunk fills
		c.Set("w"+strconv.Itoa(i), val(i), time.Hour)
	}
	c.Wait()
	total, live := c.arena.total.Load(), c.arena.live.Load()
	t.Logf("%d B of live records in %d B of chunks (%.3f×)", live, total, float64(total)/float64(live))
	if limit := live + live/8 + 3*int64(c.arena.size); total > limit {
		t.Fatalf("chunks hold %d B for %d B of live records, over %d", total, live, limit)
	}
}

// A Set of an empty slice of the value a Get returned (it starts where
// that value's record does) stores an empty value: cleaning the record's
// chunk must neither bring the old bytes back nor count them as live.
// Cleaning runs as writes trigger it, through the Cache's methods alone.
func TestArenaEmptySliceOfAValue(t *testing.T) {
	c := newCache(t, Config{MaxBytes: 4 << 20})
	c.Set("k", keyed(1, 100), time.Hour)
	c.Wait()
	v, ok := c.Get("k")
	if !ok || len(v) != 100 {
		t.Fatalf("Get = %d bytes, %v", len(v), ok)
	}
	c.Set("k", v[:0], time.Hour)
	// Only Set, Delete and Get: values written and deleted fill chunks
	// that are all dead, so the writes clean them, the record's first.
	for round := range 50 {
		for i := range 200 {
			c.Set("fill"+strconv.Itoa(i), keyed(round, 100), time.Hour)
		}
		c.Wait()
		for i := range 200 {
			c.Delete("fill" + strconv.Itoa(i))
		}
		if v, ok := c.Get("k"); !ok || len(v) != 0 {
			t.Fatalf("round %d: Get = %d bytes, %v; want the empty value", round, len(v), ok)
		}
	}
	if got := c.arena.live.Load(); got != 0 {
		t.Fatalf("live = %d with no value in the arena", got)
	}
}

// Cleaning moves values while Gets read them, Sets rewrite and replace
// them, Deletes remove them and Clear empties the cache: a Get returns a
// value of its own key, whole, and a deleted key does not come back.
func TestArenaCleaningConcurrent(t *testing.T) {
	c := newCache(t, Config{MaxBytes: 1 << 20})
	const keys = 20_000
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; running(stop); j++ {
				i := (j*7919 + w*13) % keys
				k := "c" + strconv.Itoa(i)
				switch {
				case j%97 == 0:
					c.Delete(k)
					if _, ok := c.Get(k); ok {
						t.Errorf("key %d read after its Delete", i)
						return
					}
				case j%50_000 == 49_999:
					c.Clear()
				default:
					c.Set(k, keyed(i, 16+8*(j%12)), time.Hour)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for j := 0; running(stop); j++ {
			i := j % keys
			if b, ok := c.Get("c" + strconv.Itoa(i)); ok {
				if got := keyOf(t, b); got != i {
					t.Errorf("key %d reads key %d's value", i, got)
					return
				}
			}
		}
	}()
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	c.Wait()
	t.Logf("%d B of live records in %d B of chunks", c.arena.live.Load(), c.arena.total.Load())
	if total, live := c.arena.total.Load(), c.arena.live.Load(); total > arenaLimit(c, 16+8*11) {
		t.Fatalf("chunks hold %d B for %d B of live records", total, live)
	}
}

// Cleaning never brings back a value a rewrite replaced: it moves only the
// record the key's entry points at now. Each key is rewritten many times
// (same length: in place) while the cache evicts and cleans; every key it
// holds reads its latest version.
func TestArenaCleaningKeepsLatest(t *testing.T) {
	c := newCache(t, Config{MaxBytes: 1 << 20})
	const keys, rounds = 5000, 40
	val := func(k, v int) []byte {
		b := make([]byte, 48)
		binary.LittleEndian.PutUint64(b, uint64(k))
		binary.LittleEndian.PutUint64(b[8:], uint64(v))
		return b
	}
	for v := range rounds {
		for k := range keys {
			c.Set("latest:"+strconv.Itoa(k), val(k, v), time.Hour)
		}
	}
	c.Wait()
	held := 0
	for k := range keys {
		b, ok := c.Get("latest:" + strconv.Itoa(k))
		if !ok {
			continue
		}
		held++
		if gk, gv := binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:]); gk != uint64(k) || gv != rounds-1 {
			t.Fatalf("key %d reads key %d version %d, want version %d", k, gk, gv, rounds-1)
		}
	}
	if held == 0 {
		t.Fatal("no key held")
	}
}
