package cachekit

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/l2"
)

// Six Clients missing one cold key at once run one load, and every caller
// returns within the load's time and 100 ms: woken by invalidation, or
// polling (capped at 50 ms) without it.
func TestFleetSingleFlight(t *testing.T) {
	t.Parallel()
	for _, inv := range []bool{true, false} {
		t.Run(fmt.Sprint("invalidation=", inv), func(t *testing.T) {
			t.Parallel()
			srv, _ := withRedis(t)
			o := Options{RedisURL: srv.URL(), L1MaxBytes: 1 << 20, Encryption: encConfig(""), FleetSingleFlight: true}
			if inv {
				o.Invalidation = &Invalidation{}
			}
			const load = 300 * time.Millisecond
			var calls atomic.Int32
			var loaded atomic.Int64 // when the load returned, UnixNano
			loader := func(ctx context.Context) (string, error) {
				calls.Add(1)
				time.Sleep(load) // the work a load does
				loaded.Store(time.Now().UnixNano())
				return "v", nil
			}
			clients := make([]*Client, 6)
			for i := range clients {
				clients[i] = newClient(t, o)
			}
			var wg sync.WaitGroup
			took := make([]time.Duration, len(clients))
			ended := make([]int64, len(clients))
			for i, c := range clients {
				wg.Go(func() {
					start := time.Now()
					v, err := GetOrLoad(bg, c, "cold", loader)
					took[i], ended[i] = time.Since(start), time.Now().UnixNano()
					if err != nil || v != "v" {
						t.Errorf("client %d: %q, %v", i, v, err)
					}
				})
			}
			wg.Wait()
			if n := calls.Load(); n != 1 {
				t.Fatalf("%d loads, want 1", n)
			}
			// Each caller is back within 100 ms of the load's end: woken (or,
			// without invalidation, polling every 50 ms at most), not waiting
			// out a lease.
			for i, e := range ended {
				if after := time.Duration(e - loaded.Load()); after > 100*time.Millisecond {
					t.Errorf("client %d returned %v after the load ended, want at most 100ms", i, after)
				}
			}
			t.Logf("callers returned after %v", took)
		})
	}
}

// A load longer than the lease stays the only one: its Client renews the
// lease while the loader runs.
func TestFleetLongLoadRunsOnce(t *testing.T) {
	t.Parallel()
	srv, _ := withRedis(t)
	o := Options{RedisURL: srv.URL(), L1MaxBytes: 1 << 20, Encryption: encConfig(""), FleetSingleFlight: true,
		Invalidation: &Invalidation{}, LeaseTTL: time.Second}
	var calls atomic.Int32
	loader := func(ctx context.Context) (string, error) {
		calls.Add(1)
		time.Sleep(4 * time.Second) // four lease lifetimes: the work a long load does
		return "v", nil
	}
	var wg sync.WaitGroup
	for range 3 {
		c := newClient(t, o)
		wg.Go(func() {
			if v, err := GetOrLoad(bg, c, "slow", loader); err != nil || v != "v" {
				t.Errorf("%q, %v", v, err)
			}
		})
	}
	wg.Wait()
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d loads, want 1", n)
	}
}

// A lease nobody renews (its holder could neither store nor release it)
// is not waited out: with less than half of LeaseTTL left the miss takes
// it over (compare-and-set on the placeholder), loads at once and stores
// its value; a lease renewed on time is waited for.
func TestFleetAbandonedLeaseNotWaitedOut(t *testing.T) {
	t.Parallel()
	c, rdb := redisClient(t, Options{L1MaxBytes: 1 << 20, Encryption: encConfig(""), FleetSingleFlight: true,
		LeaseTTL: 4 * time.Second, Invalidation: &Invalidation{}})
	full := c.fullKey("k")
	if err := rdb.Set(bg, full, l2.NewLease(), 1500*time.Millisecond).Err(); err != nil { // 1.5 s of 4 s left
		t.Fatal(err)
	}
	start := time.Now()
	v, err := GetOrLoad(bg, c, "k", func(context.Context) (string, error) { return "v", nil })
	if took := time.Since(start); err != nil || v != "v" || took > 500*time.Millisecond {
		t.Fatalf("GetOrLoad = %q, %v after %v; want v at once", v, err, took)
	}
	if got, _ := rdb.Get(bg, full).Bytes(); l2.IsLease(got) || len(got) == 0 {
		t.Fatal("the abandoned lease was not taken over: the loaded value is not stored")
	}
	if err := rdb.Set(bg, full, l2.NewLease(), 3500*time.Millisecond).Err(); err != nil { // renewed on time
		t.Fatal(err)
	}
	c.DeleteLocal("k")
	go func() { time.Sleep(300 * time.Millisecond); rdb.Del(bg, full) }() // its holder releases it
	start = time.Now()
	v, err = GetOrLoad(bg, c, "k", func(context.Context) (string, error) { return "w", nil })
	if took := time.Since(start); err != nil || v != "w" || took < 250*time.Millisecond {
		t.Fatalf("GetOrLoad = %q, %v after %v; want w after the lease was released", v, err, took)
	}
}

// MGetOrLoad's store of what its loader returned runs under the
// reliability stack's bounds: against a Redis stopped (SIGSTOP) while the
// loader ran, the call returns the loaded values within the stack's
// OperationTimeout (400 ms by default), not after go-redis's own read
// timeout (4 s here, sized for the largest value).
func TestMGetOrLoadStoreIsBounded(t *testing.T) {
	t.Parallel()
	srv, _ := withRedis(t)
	c := newClient(t, Options{RedisURL: srv.URL(), Encryption: encConfig(""), Reliability: &Reliability{}})
	defer srv.Resume()
	start := time.Now()
	got, err := MGetOrLoad(bg, c, []string{"a", "b"}, func(_ context.Context, keys []string) (map[string]string, error) {
		srv.Pause() // the leases are planted; the store finds Redis stopped
		start = time.Now()
		return map[string]string{"a": "1", "b": "2"}, nil
	})
	if took := time.Since(start); err != nil || got["a"] != "1" || got["b"] != "2" || took > time.Second {
		t.Fatalf("MGetOrLoad = %v, %v; the store took %v, want at most 1s", got, err, took)
	}
}
