package cachekit

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/internal/redistest"
	"github.com/cachekit-io/cachekit-go/internal/seam"
	"github.com/cachekit-io/cachekit-go/internal/testenv"
	"github.com/cachekit-io/cachekit-go/l2"
)

// Interop mode plants no lease in a shared key, but its load still never
// overwrites a write this Client (or anyone) made while the loader ran: it
// stores only where the key holds nothing (SET NX). A plain SET undid this
// Client's Set and Delete.
func TestInteropLoadNeverOverwritesAWrite(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"Set", "Delete then Set"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, raw := redisClient(t, Options{Interop: true})
			key, err := InteropKey("users", "get_user", name)
			if err != nil {
				t.Fatal(err)
			}
			v, err := GetOrLoadTTL(bg, c, key, time.Minute, func(ctx context.Context) (string, error) {
				if name == "Delete then Set" {
					if err := c.Delete(ctx, key); err != nil {
						return "", err
					}
				}
				return "loaded", c.SetWithTTL(ctx, key, "written", time.Minute)
			})
			if err != nil || v != "loaded" {
				t.Fatalf("GetOrLoad = %q, %v", v, err)
			}
			c.FlushLocal()
			if got, err := Get[string](bg, c, key); err != nil || got != "written" {
				t.Fatalf("after the load Redis holds %q, %v: the load overwrote the Set made while it ran", got, err)
			}
			if n, _ := raw.Exists(bg, key+":lock").Result(); n != 0 {
				t.Fatal("the side lock was left")
			}
		})
	}
	// A key that holds nothing still gets the loaded value.
	c, _ := redisClient(t, Options{Interop: true})
	key, _ := InteropKey("users", "get_user", "fresh")
	if _, err := GetOrLoadTTL(bg, c, key, time.Minute, func(context.Context) (string, error) { return "loaded", nil }); err != nil {
		t.Fatal(err)
	}
	c.FlushLocal()
	if got, err := Get[string](bg, c, key); err != nil || got != "loaded" {
		t.Fatalf("the load stored %q, %v", got, err)
	}
}

// An entry interop mode cannot open is replaced by the load (compared by
// digest, not SET NX), and only that entry.
func TestInteropLoadReplacesUnopenableEntry(t *testing.T) {
	t.Parallel()
	c, raw := redisClient(t, Options{Interop: true})
	key, _ := InteropKey("users", "get_user", 7)
	if err := raw.Set(bg, key, "\xc1 not msgpack", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	v, err := GetOrLoadTTL(bg, c, key, time.Minute, func(context.Context) (string, error) { return "loaded", nil })
	if err != nil || v != "loaded" {
		t.Fatalf("GetOrLoad over an unopenable entry = %q, %v", v, err)
	}
	c.FlushLocal()
	if got, err := Get[string](bg, c, key); err != nil || got != "loaded" {
		t.Fatalf("Redis holds %q, %v: the unopenable entry was not replaced", got, err)
	}
}

// MGetOrLoad replaces an entry it cannot open: it plants a lease over
// exactly those bytes and stores the loaded value, so the next call is a
// hit. It reloaded on every call and stored nothing.
func TestMGetOrLoadReplacesUnopenableEntry(t *testing.T) {
	t.Parallel()
	c, raw := redisClient(t, Options{Encryption: encConfig(""), L1MaxBytes: 1 << 20})
	for _, k := range []string{"bad", "good"} {
		mustSet(t, c, k, "old-"+k)
	}
	if err := raw.Set(bg, c.fullKey("bad"), "tampered bytes, not an entry", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	c.FlushLocal()
	var loads atomic.Int32
	loader := func(_ context.Context, keys []string) (map[string]string, error) {
		loads.Add(1)
		out := map[string]string{}
		for _, k := range keys {
			out[k] = "loaded-" + k
		}
		return out, nil
	}
	for i := range 2 {
		got, err := MGetOrLoad(bg, c, []string{"bad", "good"}, loader)
		if err != nil || got["bad"] != "loaded-bad" || got["good"] != "old-good" {
			t.Fatalf("call %d: %v, %v", i+1, got, err)
		}
	}
	if n := loads.Load(); n != 1 {
		t.Fatalf("%d loads over two calls, want 1: the unopenable entry was not replaced", n)
	}
	c.FlushLocal()
	if v, err := Get[string](bg, c, "bad"); err != nil || v != "loaded-bad" {
		t.Fatalf("Redis holds %q, %v", v, err)
	}
}

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

// LoadTimeout ending a load reaches a caller without a deadline as the
// Client's own timeout (ErrTimeout), not as a bare
// context.DeadlineExceeded, which says the caller's deadline passed.
func TestLoadTimeoutIsErrTimeout(t *testing.T) {
	t.Parallel()
	c := newClient(t, Options{L1MaxBytes: 1 << 20, LoadTimeout: 50 * time.Millisecond})
	_, err := GetOrLoad(bg, c, "k", func(ctx context.Context) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	})
	if !errors.Is(err, ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("GetOrLoad past LoadTimeout = %v, want ErrTimeout (and not context.DeadlineExceeded)", err)
	}
}

// A large value reads back through a slow link with the defaults: its read
// gets its size's transfer allowance once the value is known to be large
// (the first read asks for at most 128 KiB and the length), as its write
// did; a small read keeps its 200 ms bound. Every Get of a 24 MiB value
// through an 18 MiB/s link used to time out.
func TestLargeValueReadsThroughSlowLink(t *testing.T) {
	// Not parallel, and not under the race detector (make test runs it
	// again without): it paces bytes in wall time against the allowance.
	if testenv.RaceEnabled {
		t.Skip("wall-time pacing: run without -race")
	}
	srv, _ := withRedis(t)
	proxy := redistest.StartProxy(t, srv.Addr())
	o := Production()
	o.RedisURL, o.Invalidation, o.L1MaxBytes = proxy.URL(), nil, 0
	c := newClient(t, o)
	big := make([]byte, 24<<20)
	rand.Read(big) // incompressible: 24 MiB cross the link
	proxy.Throttle(18 << 20)
	start := time.Now()
	if err := c.SetWithTTL(bg, "big", big, time.Minute); err != nil || c.ReliabilityStats().Degraded != 0 {
		t.Fatalf("Set of 24 MiB through 18 MiB/s: %v (absorbed: %d) after %v", err, c.ReliabilityStats().Degraded, time.Since(start))
	}
	if took := time.Since(start); took < time.Second {
		t.Fatalf("24 MiB crossed an 18 MiB/s link in %v: no throttle", took)
	}
	got, err := c.GetBytes(bg, "big")
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("Get of 24 MiB through 18 MiB/s: %d bytes, %v", len(got), err)
	}
	if st := c.Stats(); st.L2Errors != 0 {
		t.Fatalf("L2Errors = %d: a long value's first read is no failure", st.L2Errors)
	}
}

// A large conditional write after Redis lost its scripts (SCRIPT FLUSH, a
// restart) sends its value once: the script is loaded first. It sent
// EVALSHA with the value, got NOSCRIPT, then EVAL with the value again,
// past the one-send allowance: ErrTimeout for a write that was stored.
func TestLargeScriptedWriteSendsValueOnce(t *testing.T) {
	// Not parallel, and not under the race detector (make test runs it
	// again without): it paces bytes in wall time against the allowance.
	if testenv.RaceEnabled {
		t.Skip("wall-time pacing: run without -race")
	}
	srv, raw := withRedis(t)
	proxy := redistest.StartProxy(t, srv.Addr())
	o := Minimal()
	o.RedisURL, o.L1MaxBytes = proxy.URL(), 0
	defaultBound(&o)
	c := newClient(t, o)
	v := make([]byte, 8<<20)
	rand.Read(v) // incompressible
	if err := raw.ScriptFlush(bg).Err(); err != nil {
		t.Fatal(err)
	}
	proxy.Throttle(17 << 20)
	stored, err := c.SetIfAbsent(bg, "big", v, time.Minute)
	if err != nil || !stored {
		t.Fatalf("SetIfAbsent of 8 MiB through 17 MiB/s after SCRIPT FLUSH = %v, %v", stored, err)
	}
}
