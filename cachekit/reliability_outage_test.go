package cachekit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/testwait"
)

// TestOutageUnderLoad stops redis-server in the middle of a two-goroutine
// load and starts it again, for a fail-open (production) and a fail-closed
// (secure) Client: no panic, no wrong value, a miss or a *BackendError as
// the mode says, the breaker opens and recovers, and what was written
// before the outage reads back after it.
func TestOutageUnderLoad(t *testing.T) {
	t.Parallel()
	for _, failOpen := range []bool{true, false} {
		name := map[bool]string{true: "failopen", false: "failclosed"}[failOpen]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv, rdb := withRedis(t)
			c := newClient(t, Options{
				Redis:      rdb,
				Encryption: encConfig(""),
				Reliability: &Reliability{
					FailOpen: failOpen, MaxAttempts: 2, RetryBaseDelay: time.Millisecond,
					BreakerThreshold: 3, BreakerOpenFor: 100 * time.Millisecond,
				},
			})
			const n = 20
			for i := range n {
				mustSet(t, c, fmt.Sprint("pre:", i), fmt.Sprint("value-", i))
			}
			var stop atomic.Bool
			var hits, misses, backendErrs atomic.Int64
			var wg sync.WaitGroup
			errc := make(chan error, 2)
			for g := range 2 {
				wg.Go(func() {
					// Pace the load (about a thousand calls a second per
					// goroutine against a real server), as a service would
					// call, not a spin loop.
					pace := time.NewTicker(time.Millisecond)
					defer pace.Stop()
					for i := 0; !stop.Load(); i, _ = i+1, <-pace.C {
						ctx, cancel := context.WithTimeout(bg, time.Second)
						k := i % n
						v, err := Get[string](ctx, c, fmt.Sprint("pre:", k))
						var be *BackendError
						switch {
						case err == nil:
							if v != fmt.Sprint("value-", k) {
								errc <- fmt.Errorf("wrong value for pre:%d", k)
								cancel()
								return
							}
							hits.Add(1)
						case failOpen && errors.Is(err, ErrNotFound) && errors.As(err, &be):
							misses.Add(1)
						case !failOpen && errors.As(err, &be) && !errors.Is(err, ErrNotFound):
							backendErrs.Add(1)
						default:
							errc <- fmt.Errorf("goroutine %d: unexpected error class: %v", g, err)
							cancel()
							return
						}
						err = c.Set(ctx, fmt.Sprint("live:", g), i)
						if err != nil && (failOpen || !errors.As(err, &be)) {
							errc <- fmt.Errorf("set in %s mode: %v", name, err)
							cancel()
							return
						}
						cancel()
					}
				})
			}
			// A load goroutine that failed has stopped: its error is
			// reported below, so waits for reads end on it too.
			failed := func() bool { return len(errc) > 0 }
			testwait.For(t, 5*time.Second, func() bool { return hits.Load() >= 20 || failed() }, "reads before the outage")
			srv.Stop()
			testwait.For(t, 5*time.Second, func() bool { return c.ReliabilityStats().BreakerOpened > 0 },
				"the breaker opening during the outage")
			// Half-open probes fail while Redis is down: two of them, each
			// reopening the breaker, before Redis comes back.
			testwait.For(t, 5*time.Second, func() bool { return c.ReliabilityStats().BreakerOpened >= 3 },
				"failed probes reopening the breaker during the outage")
			srv.Restart()
			if !testwait.Until(10*time.Second, func() bool { return c.ReliabilityStats().Breaker == BreakerClosed }) {
				t.Fatalf("breaker did not recover: %+v", c.ReliabilityStats())
			}
			recovered := hits.Load()
			testwait.For(t, 5*time.Second, func() bool { return hits.Load() >= recovered+20 || failed() }, "reads after the recovery")
			stop.Store(true)
			wg.Wait()
			close(errc)
			for err := range errc {
				t.Fatal(err)
			}
			if failOpen && misses.Load() == 0 {
				t.Fatal("fail-open: no read was degraded to a miss")
			}
			if !failOpen && backendErrs.Load() == 0 {
				t.Fatal("fail-closed: no read returned a *BackendError")
			}
			st := c.ReliabilityStats()
			if st.Refused == 0 {
				t.Fatalf("the open breaker refused nothing: %+v", st)
			}
			if failOpen != (st.Degraded > 0) {
				t.Fatalf("degraded count %d in %s mode", st.Degraded, name)
			}
			for i := range n {
				v, err := Get[string](bg, c, fmt.Sprint("pre:", i))
				if err != nil || v != fmt.Sprint("value-", i) {
					t.Fatalf("pre:%d after the outage: %q, %v", i, v, err)
				}
			}
			t.Logf("%s: hits %d, misses %d, backend errors %d, stats %+v", name, hits.Load(), misses.Load(), backendErrs.Load(), st)
		})
	}
}

// GetOrLoad under fail-open runs the loader when Redis is down.
func TestFailOpenGetOrLoadLoads(t *testing.T) {
	t.Parallel()
	srv, rdb := withRedis(t)
	c := newClient(t, Options{Redis: rdb, L1MaxBytes: 1 << 20, Reliability: &Reliability{FailOpen: true, MaxAttempts: 1}})
	srv.Stop()
	t.Cleanup(srv.Restart)
	v, err := GetOrLoadTTL(bg, c, "k", time.Minute, func(context.Context) (int, error) { return 7, nil })
	if err != nil || v != 7 {
		t.Fatalf("GetOrLoad during outage: %d, %v", v, err)
	}
	// The absorbed write left nothing in L1 (L1 only holds what L2 holds).
	if _, ok := c.l1.Get("k"); ok {
		t.Fatal("L1 holds a value Redis never stored")
	}
	if err := c.Delete(bg, "k"); err == nil {
		t.Fatal("Delete during an outage must report its error even under fail-open")
	}
}
