package cachekit

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// Read-your-write: two goroutines each Set then immediately Get their own
// keys; a Get that returns anything but the value just written fails.
func TestReadYourWrite(t *testing.T) {
	_, rdb := withRedis(t)
	n := 10000
	if testing.Short() {
		n = 1000
	}
	for name, opts := range map[string]Options{
		"L1-only":         {L1MaxBytes: 64 << 20, Encryption: encConfig("")},
		"L1+Redis":        {L1MaxBytes: 64 << 20, Encryption: encConfig(""), Redis: rdb},
		"L1-only/plain":   {L1MaxBytes: 64 << 20},
		"L1+Redis/shared": {L1MaxBytes: 64 << 20, Redis: rdb},
	} {
		t.Run(name, func(t *testing.T) {
			c := newClient(t, opts)
			var wg sync.WaitGroup
			errs := make(chan error, 2)
			for g := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range n {
						key := fmt.Sprintf("%s:g%d:k%d", name, g, i%97) // new and existing keys
						if err := c.SetWithTTL(bg, key, i, time.Minute); err != nil {
							errs <- err
							return
						}
						v, err := Get[int](bg, c, key)
						if err != nil || v != i {
							errs <- fmt.Errorf("goroutine %d iteration %d: got %d, %v", g, i, v, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			if r := c.Stats().L1Rejected; r != 0 {
				t.Logf("L1 rejected %d sets", r)
			}
		})
	}
}

// A backfill that read the old value from Redis before a Set must not
// overwrite the newer value in L1, nor resurrect a deleted key.
func TestStaleBackfillNeverOverwritesNewerSet(t *testing.T) {
	_, rdb := withRedis(t)
	c := newClient(t, Options{Redis: rdb, L1MaxBytes: 1 << 20, Encryption: encConfig("")})
	if err := c.Set(bg, "race", "old"); err != nil {
		t.Fatal(err)
	}
	c.l1.Delete("race") // force the next Get through L2
	// Interleave by hand: snapshot the version as load does, read L2, then
	// let a Set land before the backfill.
	ver := c.l1.Version("race")
	stale, err := rdb.Get(bg, "race").Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Set(bg, "race", "new"); err != nil {
		t.Fatal(err)
	}
	if c.l1.SetIfVersion("race", stale, time.Minute, ver) {
		t.Fatal("stale backfill landed over a newer Set")
	}
	if v, _ := Get[string](bg, c, "race"); v != "new" {
		t.Fatalf("got %q, want new", v)
	}
	// And a Delete in between: the backfill must not resurrect the key.
	ver = c.l1.Version("race")
	stale, _ = rdb.Get(bg, "race").Bytes()
	if err := c.Delete(bg, "race"); err != nil {
		t.Fatal(err)
	}
	if c.l1.SetIfVersion("race", stale, time.Minute, ver) {
		t.Fatal("stale backfill resurrected a deleted key")
	}
	if _, err := Get[string](bg, c, "race"); err == nil {
		t.Fatal("deleted key readable")
	}
}

// The same race with real goroutines: readers backfilling while a writer
// moves the value forward; after the writer's last Set, every Get sees it.
func TestConcurrentBackfillAndSet(t *testing.T) {
	_, rdb := withRedis(t)
	c := newClient(t, Options{Redis: rdb, L1MaxBytes: 1 << 20, Encryption: encConfig("")})
	const rounds = 300
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				c.l1.Delete("hot") // keep readers on the backfill path
				_, _ = Get[int](bg, c, "hot")
			}
		}()
	}
	for i := range rounds {
		if err := c.Set(bg, "hot", i); err != nil {
			t.Fatal(err)
		}
		if v, err := Get[int](bg, c, "hot"); err != nil || v < i {
			close(stop)
			wg.Wait()
			t.Fatalf("round %d: read %d, %v (older than the last Set)", i, v, err)
		}
	}
	close(stop)
	wg.Wait()
}
