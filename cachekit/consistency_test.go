package cachekit

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/testenv"
)

// Read-your-write: two goroutines each Set then immediately Get their own
// keys; a Get that returns anything but the value just written fails.
func TestReadYourWrite(t *testing.T) {
	t.Parallel()
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
				wg.Go(func() {
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
				})
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

// The stale-backfill race (a Get reads the old value from Redis, a Set or
// Delete lands, then the Get would backfill L1) is driven through the
// public API, with the Get held after Redis answered, in
// TestCoherenceBackfillSet (Get) and TestCoherenceMGetSet (MGet).

// The same race with real goroutines: readers backfilling while a writer
// moves the value forward; after the writer's last Set, every Get sees it.
func TestConcurrentBackfillAndSet(t *testing.T) {
	t.Parallel()
	c, _ := redisClient(t, Options{L1MaxBytes: 1 << 20, Encryption: encConfig("")})
	const rounds = 300
	stop := testenv.Spin(2, func() {
		c.l1.Delete("hot") // keep readers on the backfill path
		_, _ = Get[int](bg, c, "hot")
	})
	defer stop()
	for i := range rounds {
		mustSet(t, c, "hot", i)
		if v, err := Get[int](bg, c, "hot"); err != nil || v < i {
			stop()
			t.Fatalf("round %d: read %d, %v (older than the last Set)", i, v, err)
		}
	}
}
