package l1

import (
	"encoding/binary"
	"strconv"
	"sync"
	"testing"
	"time"
)

const rywOps = 10000 // per goroutine

// Two goroutines, each with its own keys: a brand-new key every iteration
// (ristretto's asynchronous path), a small set of keys overwritten again and
// again (its synchronous path), and periodic deletes. After every Set that
// returned true, Get must return exactly that value.
func TestReadYourWriteStress(t *testing.T) {
	c := newCache(t, Config{MaxBytes: 64 << 20})
	runRYW(t, c, true)
	if st := c.Stats(); st.Rejected != 0 || st.Dropped != 0 {
		t.Fatalf("roomy cache refused writes: %+v", st)
	}
}

// The same under heavy eviction pressure: Set may now return false, and an
// entry may be evicted right after its Set, but Get must never return a
// value other than the last one stored.
func TestReadYourWriteUnderEviction(t *testing.T) {
	c := newCache(t, Config{MaxBytes: 4096})
	runRYW(t, c, false)
}

// inTwo runs fn(g) in two goroutines, g 0 and 1, and fails t with what
// each returned ("": nothing wrong).
func inTwo(t *testing.T, fn func(g int) string) {
	t.Helper()
	var wg sync.WaitGroup
	var msgs [2]string
	for g := range 2 {
		wg.Go(func() { msgs[g] = fn(g) })
	}
	wg.Wait()
	for _, msg := range msgs {
		if msg != "" {
			t.Error(msg)
		}
	}
}

func runRYW(t *testing.T, c *Cache, roomy bool) {
	inTwo(t, func(g int) string {
		prefix := strconv.Itoa(g) + ":"
		at := func(msg string, i int) string { return msg + " at iteration " + strconv.Itoa(i) }
		for i := range rywOps {
			var key string
			switch i % 3 {
			case 0:
				key = prefix + "new:" + strconv.Itoa(i) // never written before
			default:
				key = prefix + "hot:" + strconv.Itoa(i%16) // overwritten
			}
			v := value(g<<24|i, 64+i%64)
			ok := c.Set(key, v, time.Minute)
			if roomy && !ok {
				return at("Set returned false in a roomy cache", i)
			}
			got, hit := c.Get(key)
			if ok && roomy && !hit {
				return at("missing value after Set returned true", i)
			}
			if hit && (!ok || string(got) != string(v)) {
				return at("stale value after Set", i)
			}
			if i%7 == 0 {
				c.Delete(key)
				if _, hit := c.Get(key); hit {
					return at("value readable after Delete", i)
				}
			}
		}
		return ""
	})
}

// Both goroutines write the same keys. A goroutine that just stored its
// sequence number s may read the other goroutine's value, but never one of
// its own older values.
func TestReadYourWriteSharedKeys(t *testing.T) {
	c := newCache(t, Config{MaxBytes: 64 << 20})
	inTwo(t, func(g int) string {
		for i := range rywOps {
			key := "shared:" + strconv.Itoa(i%8)
			if i%5 == 0 {
				key = "shared:new:" + strconv.Itoa(i) // both create it
			}
			v := make([]byte, 16)
			binary.BigEndian.PutUint64(v, uint64(g))
			binary.BigEndian.PutUint64(v[8:], uint64(i))
			if !c.Set(key, v, time.Minute) {
				return "Set returned false in a roomy cache"
			}
			got, hit := c.Get(key)
			if !hit {
				return "miss after Set returned true at " + strconv.Itoa(i)
			}
			if binary.BigEndian.Uint64(got) == uint64(g) && binary.BigEndian.Uint64(got[8:]) != uint64(i) {
				return "own older value read back at " + strconv.Itoa(i)
			}
		}
		return ""
	})
}
