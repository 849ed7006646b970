package cachekit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/redistest"
)

// TestMGetOrLoad: hits come from the cache, the misses from one loader
// call that sees only them; what it returns is cached for DefaultTTL, what
// it leaves out is absent and not cached; a loader error is returned.
func TestMGetOrLoad(t *testing.T) {
	t.Parallel()
	for name, c := range apiModes(t) {
		t.Run(name, func(t *testing.T) {
			if err := MSet(bg, c, map[string]int{"a": 1, "b": 2}); err != nil {
				t.Fatal(err)
			}
			var calls atomic.Int32
			var saw []string
			load := func(ctx context.Context, missing []string) (map[string]int, error) {
				calls.Add(1)
				saw = slices.Sorted(slices.Values(missing))
				return map[string]int{"c": 3, "d": 4}, nil // "e" does not exist
			}
			got, err := MGetOrLoad(bg, c, []string{"a", "b", "c", "d", "e", "c"}, load)
			if err != nil {
				t.Fatal(err)
			}
			if want := map[string]int{"a": 1, "b": 2, "c": 3, "d": 4}; !mapsEqual(got, want) {
				t.Fatalf("MGetOrLoad = %v, want %v", got, want)
			}
			if calls.Load() != 1 || !slices.Equal(saw, []string{"c", "d", "e"}) {
				t.Fatalf("loader called %d times with %v; want once with [c d e]", calls.Load(), saw)
			}
			if _, left, err := GetWithTTL[int](bg, c, "d"); err != nil || !near(left, 90*time.Second) {
				t.Fatalf("a loaded value: TTL %v, %v; want DefaultTTL", left, err)
			}
			if ok, _ := c.Exists(bg, "e"); ok {
				t.Fatal("a key the loader left out was cached")
			}
			got, err = MGetOrLoad(bg, c, []string{"a", "c"}, func(context.Context, []string) (map[string]int, error) {
				t.Error("loader called although every key is cached")
				return nil, nil
			})
			if err != nil || len(got) != 2 {
				t.Fatalf("all hits: %v, %v", got, err)
			}
			boom := errors.New("boom")
			if _, err := MGetOrLoad(bg, c, []string{"x"}, func(context.Context, []string) (map[string]int, error) { return nil, boom }); !errors.Is(err, boom) {
				t.Fatalf("loader error = %v, want boom", err)
			}
		})
	}
}

// TestMGetOrLoadSingleFlight: concurrent MGetOrLoads and GetOrLoads of
// overlapping keys load each key once: a key already being loaded is
// waited for, not handed to another loader.
func TestMGetOrLoadSingleFlight(t *testing.T) {
	t.Parallel()
	c := newClient(t, Options{L1MaxBytes: 1 << 20})
	release := make(chan struct{})
	started := make(chan struct{}, 2) // one per batch loader
	var loadedMu sync.Mutex
	loaded := map[string]int{}
	load := func(ctx context.Context, missing []string) (map[string]string, error) {
		loadedMu.Lock()
		for _, k := range missing {
			loaded[k]++
		}
		loadedMu.Unlock()
		started <- struct{}{}
		<-release
		out := map[string]string{}
		for _, k := range missing {
			out[k] = "v:" + k
		}
		return out, nil
	}
	first := make(chan map[string]string, 1)
	go func() {
		m, _ := MGetOrLoad(bg, c, []string{"a", "b"}, load)
		first <- m
	}()
	<-started // the first batch holds a and b
	second := make(chan map[string]string, 1)
	go func() {
		m, _ := MGetOrLoad(bg, c, []string{"b", "c"}, load)
		second <- m
	}()
	single := make(chan string, 1)
	go func() {
		v, _ := GetOrLoad(bg, c, "a", func(context.Context) (string, error) {
			t.Error("GetOrLoad loaded a key a batch was loading")
			return "", nil
		})
		single <- v
	}()
	<-started // the second batch started: with c only
	close(release)
	m1, m2, v := <-first, <-second, <-single
	if m1["a"] != "v:a" || m1["b"] != "v:b" || m2["b"] != "v:b" || m2["c"] != "v:c" || v != "v:a" {
		t.Fatalf("results: %v, %v, %q", m1, m2, v)
	}
	for k, n := range loaded {
		if n != 1 {
			t.Fatalf("key %s loaded %d times: %v", k, n, loaded)
		}
	}
}

// TestMGetOrLoadCallerCancel: a caller whose ctx ends gets ctx.Err() at
// once; the load goes on for the others.
func TestMGetOrLoadCallerCancel(t *testing.T) {
	t.Parallel()
	c := newClient(t, Options{L1MaxBytes: 1 << 20})
	release, entered := make(chan struct{}), make(chan struct{})
	ctx, cancel := context.WithCancel(bg)
	done := make(chan error, 1)
	go func() {
		_, err := MGetOrLoad(ctx, c, []string{"k"}, func(context.Context, []string) (map[string]int, error) {
			close(entered)
			<-release
			return map[string]int{"k": 7}, nil
		})
		done <- err
	}()
	<-entered // the load is running and k's flight exists
	waiter := make(chan int, 1)
	go func() {
		m, _ := MGetOrLoad(bg, c, []string{"k"}, func(context.Context, []string) (map[string]int, error) {
			t.Error("second loader ran while the first was loading")
			return nil, nil
		})
		waiter <- m["k"]
	}()
	// Until the second caller waits on k's flight too.
	waitWithin(t, 5*time.Second, func() bool { return c.flights.Waiting("k") == 2 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller = %v, want context.Canceled", err)
	}
	close(release)
	if v := <-waiter; v != 7 {
		t.Fatalf("the other caller got %d, want 7", v)
	}
}

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestMGetOrLoadReleasesUnusedLeases: a key the loader leaves out, and one
// whose value cannot be stored, have their leases given back when
// MGetOrLoad returns (not left to expire after LeaseTTL), so the next
// reader of either key loads at once instead of waiting on a lease.
func TestMGetOrLoadReleasesUnusedLeases(t *testing.T) {
	t.Parallel()
	c, rdb := redisClient(t, Options{Encryption: encConfig(""), LeaseTTL: time.Minute})
	got, err := MGetOrLoad(bg, c, []string{"kept", "omitted", "unsealable"}, func(context.Context, []string) (map[string]any, error) {
		return map[string]any{"kept": 1, "unsealable": func() {}}, nil
	})
	if err != nil || len(got) != 2 {
		t.Fatalf("MGetOrLoad = %v, %v; want kept and unsealable returned", got, err)
	}
	for _, k := range []string{"omitted", "unsealable"} {
		if n, err := rdb.Exists(bg, c.fullKey(k)).Result(); err != nil || n != 0 {
			t.Fatalf("%s: EXISTS = %d, %v after MGetOrLoad returned; want its lease released", k, n, err)
		}
	}
	if n, _ := rdb.Exists(bg, c.fullKey("kept")).Result(); n != 1 {
		t.Fatal("the loaded value was not stored")
	}
}

// TestMGetOrLoadKeepsLargeBatchLeases: MGetOrLoad of 5,000 keys whose
// loader takes 6 s (more than LeaseTTL, 5 s), every request to Redis
// held 1 ms by a proxy: the leases are renewed in one pipeline per
// renewal, so every one holds until the store (before, one round trip
// per key: a renewal pass took over 5 s, and 2,596 of 5,000 leases and
// their stores were lost).
func TestMGetOrLoadKeepsLargeBatchLeases(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	proxy := redistest.StartProxy(t, srv.Addr())
	opts := Production()
	opts.RedisURL = proxy.URL()
	opts.Invalidation, opts.SWR = nil, nil
	// Time enough for the 5,000-script store itself on a loaded machine
	// under -race (CI once took longer than the default 400 ms to build
	// and send it: nothing stored, no lease lost); the renewals' pace is
	// what is tested.
	opts.Reliability = &Reliability{FailOpen: true, AttemptTimeout: 5 * time.Second, OperationTimeout: 10 * time.Second}
	c := newClient(t, opts)
	keys := make([]string, 5000)
	for i := range keys {
		keys[i] = fmt.Sprintf("batch:%d", i)
	}
	// Its connections open (a Delay holds those open now): the command
	// pool's, and the pipeline pool's.
	mustSet(t, c, "warm", 1)
	if _, err := MGet[int](bg, c, []string{"warm", "warm2"}); err != nil {
		t.Fatal(err)
	}
	proxy.Delay(time.Millisecond)
	got, err := MGetOrLoad(bg, c, keys, func(ctx context.Context, missing []string) (map[string]int, error) {
		select {
		case <-time.After(6 * time.Second): // the query's own time
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		m := make(map[string]int, len(missing))
		for i, k := range missing {
			m[k] = i
		}
		return m, nil
	})
	proxy.Delay(0)
	if err != nil || len(got) != len(keys) {
		t.Fatalf("MGetOrLoad = %d values, %v", len(got), err)
	}
	if st := c.Stats(); st.LeasesLost != 0 {
		t.Fatalf("Stats.LeasesLost = %d, want 0: leases expired while the loader ran", st.LeasesLost)
	}
	reader := newClient(t, Options{RedisURL: srv.URL()})
	vals, err := MGet[int](bg, reader, keys)
	if err != nil || len(vals) != len(keys) {
		t.Fatalf("Redis holds %d of the %d loaded values (%v)", len(vals), len(keys), err)
	}
}
