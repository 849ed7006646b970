package cachekit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/redistest"
	"github.com/cachekit-io/cachekit-go/internal/seam"
	"github.com/cachekit-io/cachekit-go/l2"
	"github.com/redis/go-redis/v9"
)

// Redis over maxmemory with noeviction (its default policy) refuses a
// script as a writer, so a lease cannot be planted: GetOrLoad loads
// without one and returns the value, in every preset, instead of failing
// without ever running the loader.
func TestGetOrLoadUnderOOM(t *testing.T) {
	t.Parallel()
	presets := map[string]func() Options{"Minimal": Minimal, "Production": Production,
		"Secure": func() Options { o, _ := Secure(fmt.Sprintf("%064x", 7)); return o }}
	for name, preset := range presets {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv, raw := withRedis(t)
			o := preset()
			o.RedisURL = srv.URL()
			o.Invalidation = nil
			c := newClient(t, o)
			if err := raw.ConfigSet(bg, "maxmemory-policy", "noeviction").Err(); err != nil {
				t.Fatal(err)
			}
			if err := raw.ConfigSet(bg, "maxmemory", "1").Err(); err != nil {
				t.Fatal(err)
			}
			defer raw.ConfigSet(bg, "maxmemory", "0")
			var loads atomic.Int32
			v, err := GetOrLoad(bg, c, "k", func(context.Context) (string, error) { loads.Add(1); return "v", nil })
			if err != nil || v != "v" || loads.Load() != 1 {
				t.Fatalf("GetOrLoad under OOM = %q, %v after %d loads; want the loaded value", v, err, loads.Load())
			}
		})
	}
}

// The lease is kept until its fill has answered: a store that takes
// longer than the lease has left (a large value on a slow link; here the
// fill is held before it is sent) still stores. The renewer used to stop
// when the loader returned.
func TestLeaseKeptUntilFillAnswers(t *testing.T) {
	t.Parallel()
	h := redistest.NewHoldBefore("lease.fill", "k").Named(seam.CommandName)
	c, _, raw := heldClientWith(t, h, Options{LeaseTTL: 300 * time.Millisecond})
	done := async(func() error {
		_, err := GetOrLoad(bg, c, "k", func(context.Context) (string, error) { return "v", nil })
		return err
	})
	<-h.Held()
	// The fault: the fill is held while the lease is renewed twice, past
	// its 300 ms lifetime; without the renewals it expires and the fill
	// finds nothing to replace.
	renewals, last := 0, time.Duration(0)
	waitWithin(t, 5*time.Second, func() bool {
		left, _ := raw.PTTL(bg, "k").Result()
		if left > last {
			renewals++
		}
		last = left
		return renewals >= 7 // the first read counts as one: 600 ms, two lifetimes
	})
	h.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := c.Stats().LeasesLost; n != 0 {
		t.Fatalf("LeasesLost = %d: the lease expired while its fill was on its way", n)
	}
	if got, _ := raw.Get(bg, "k").Bytes(); len(got) == 0 || l2.IsLease(got) {
		t.Fatal("the loaded value was not stored")
	}
}

// A dead holder's lease (one not renewed, with less than half of LeaseTTL
// left) is taken over by one caller of the fleet: exactly one load runs,
// stores its value, and every caller gets it. Every miss used to load
// without storing until the lease expired.
func TestDeadHolderTakenOverByOne(t *testing.T) {
	t.Parallel()
	_, raw := withRedis(t)
	o := Options{Redis: raw, L1MaxBytes: 1 << 20, Encryption: encConfig(""), FleetSingleFlight: true,
		LeaseTTL: 4 * time.Second, Invalidation: &Invalidation{}}
	var clients []*Client
	for range 4 {
		clients = append(clients, newClient(t, o))
	}
	if err := raw.Set(bg, clients[0].fullKey("k"), l2.NewLease(), 1500*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	var loads atomic.Int32
	release := make(chan struct{})
	start := time.Now()
	var wg sync.WaitGroup
	for _, c := range clients {
		for range 8 {
			wg.Go(func() {
				v, err := GetOrLoad(bg, c, "k", func(context.Context) (string, error) {
					loads.Add(1)
					<-release
					return "v", nil
				})
				if err != nil || v != "v" {
					t.Errorf("GetOrLoad = %q, %v", v, err)
				}
			})
		}
	}
	// Every Client is in: one loads, the three others wait for its lease.
	waitWithin(t, 5*time.Second, func() bool {
		var waits uint64
		for _, c := range clients {
			waits += c.Stats().LeaseWaits
		}
		return loads.Load() >= 1 && waits >= 3
	})
	close(release)
	wg.Wait()
	if n := loads.Load(); n != 1 {
		t.Fatalf("%d loads in a fleet of 4 Clients x 8 callers over a dead holder's lease, want 1", n)
	}
	if got, _ := raw.Get(bg, clients[0].fullKey("k")).Bytes(); len(got) == 0 || l2.IsLease(got) {
		t.Fatal("the taken-over load did not store its value")
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("the fleet took %v: it waited out the dead lease (1.5 s) instead of taking it over", took)
	}
}

// A caller whose ctx ends while its lease is being planted leaves no lease
// behind: on the auto-pipelined stream the Acquire still runs after the
// caller stopped waiting, and the lease is released after it (rueidis had
// the same leak in rueidisaside). Here the batch carrying the Acquire is
// held before it is sent until the caller has given up.
func TestCancelledAcquireLeavesNoLease(t *testing.T) {
	if noAutoPipeline {
		t.Skip("auto-pipelining off for this run")
	}
	t.Parallel()
	// The hold is a go-redis hook only (no Seam): it holds the stream's
	// batch that carries the Acquire, after the caller queued it.
	h := redistest.NewHoldBefore("lease.acquire", "k").Named(seam.CommandName)
	_, raw := withRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: raw.Options().Addr, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	rdb.AddHook(h)
	t.Cleanup(h.Release)
	// A lease outlives the test's wait: one left behind is found.
	c := newClient(t, Options{Redis: rdb, Encryption: encConfig(""), LeaseTTL: time.Minute})
	// The scripts in Redis's cache: the held EVALSHA must plant, not fail
	// with NOSCRIPT.
	if _, err := GetOrLoad(bg, c, "warm", func(context.Context) (string, error) { return "v", nil }); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 4 { // other callers: the Acquire goes through the stream
		wg.Go(func() {
			for j := 0; ; j++ {
				select {
				case <-stop:
					return
				default:
				}
				_, _ = c.GetBytes(bg, fmt.Sprintf("other:%d:%d", i, j%8))
			}
		})
	}
	ctx, cancel := context.WithCancel(bg)
	done := async(func() error {
		_, err := GetOrLoad(ctx, c, "k", func(ctx context.Context) (string, error) { return "v", nil })
		return err
	})
	<-h.Held()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("GetOrLoad after its cancel = %v", err)
	}
	scripts := func() int {
		info, _ := raw.Info(bg, "commandstats").Result()
		_, rest, _ := strings.Cut(info, "cmdstat_evalsha:calls=")
		n, _ := strconv.Atoi(strings.SplitN(rest, ",", 2)[0])
		return n
	}
	before := scripts()
	h.Release()
	waitWithin(t, 5*time.Second, func() bool { return scripts() > before }) // the Acquire ran
	close(stop)
	wg.Wait()
	waitWithin(t, 5*time.Second, func() bool {
		v, _ := raw.Get(bg, "k").Bytes()
		return !l2.IsLease(v)
	})
}
