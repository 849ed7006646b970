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

func runRYW(t *testing.T, c *Cache, roomy bool) {
	var wg sync.WaitGroup
	errs := make(chan string, 2)
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			prefix := strconv.Itoa(g) + ":"
			fail := func(msg string, i int) {
				errs <- msg + " at iteration " + strconv.Itoa(i)
			}
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
					fail("Set returned false in a roomy cache", i)
					return
				}
				got, hit := c.Get(key)
				if ok && roomy && !hit {
					fail("missing value after Set returned true", i)
					return
				}
				if hit && (!ok || string(got) != string(v)) {
					fail("stale value after Set", i)
					return
				}
				if i%7 == 0 {
					c.Delete(key)
					if _, hit := c.Get(key); hit {
						fail("value readable after Delete", i)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for msg := range errs {
		t.Error(msg)
	}
}

// Both goroutines write the same keys. A goroutine that just stored its
// sequence number s may read the other goroutine's value, but never one of
// its own older values.
func TestReadYourWriteSharedKeys(t *testing.T) {
	c := newCache(t, Config{MaxBytes: 64 << 20})
	var wg sync.WaitGroup
	errs := make(chan string, 2)
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rywOps {
				key := "shared:" + strconv.Itoa(i%8)
				if i%5 == 0 {
					key = "shared:new:" + strconv.Itoa(i) // both create it
				}
				v := make([]byte, 16)
				binary.BigEndian.PutUint64(v, uint64(g))
				binary.BigEndian.PutUint64(v[8:], uint64(i))
				if !c.Set(key, v, time.Minute) {
					errs <- "Set returned false in a roomy cache"
					return
				}
				got, hit := c.Get(key)
				if !hit {
					errs <- "miss after Set returned true at " + strconv.Itoa(i)
					return
				}
				if binary.BigEndian.Uint64(got) == uint64(g) && binary.BigEndian.Uint64(got[8:]) != uint64(i) {
					errs <- "own older value read back at " + strconv.Itoa(i)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for msg := range errs {
		t.Error(msg)
	}
}
