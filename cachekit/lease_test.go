package cachekit

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/internal/redistest"
	"github.com/cachekit-io/cachekit-go/internal/seam"
	"github.com/cachekit-io/cachekit-go/l2"
)

// heldLoader returns a loader that reports on started when it runs and
// returns v once release is closed.
func heldLoader(v string, started chan<- struct{}, release <-chan struct{}) func(context.Context) (string, error) {
	var once sync.Once
	return func(ctx context.Context) (string, error) {
		once.Do(func() { close(started) })
		select {
		case <-release:
			return v, nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

// leaseModes are the configurations the lease races run in: with L1 and
// without invalidation (Minimal with Redis), with invalidation
// (Production's coherence), and without L1.
func leaseModes() map[string]Options {
	return map[string]Options{
		"l1":           {L1MaxBytes: 1 << 20, Encryption: encConfig("")},
		"invalidation": {L1MaxBytes: 1 << 20, Encryption: encConfig(""), Invalidation: &Invalidation{}, FleetSingleFlight: true},
		"noL1":         {Encryption: encConfig("")},
	}
}

// A load races every kind of writer: the loader is held while the writer
// writes, and the load's older value must not reach Redis or any L1.
// "foreign" writers are raw go-redis commands, as another tool would send.
func TestLeaseLoadNeverOverwritesAWrite(t *testing.T) {
	t.Parallel()
	writers := map[string]struct {
		write func(a, b *Client, raw *redis.Client) error
		want  string // "" = absent
	}{
		"same client Set":     {func(a, _ *Client, _ *redis.Client) error { return a.Set(bg, "k", "new") }, "new"},
		"same client Delete":  {func(a, _ *Client, _ *redis.Client) error { return a.Delete(bg, "k") }, ""},
		"other client Set":    {func(_, b *Client, _ *redis.Client) error { return b.Set(bg, "k", "new") }, "new"},
		"other client Delete": {func(_, b *Client, _ *redis.Client) error { return b.Delete(bg, "k") }, ""},
		"foreign DEL":         {func(_, _ *Client, raw *redis.Client) error { return raw.Del(bg, "k").Err() }, ""},
		"other client SetIfAbsent": {func(_, b *Client, _ *redis.Client) error {
			ok, err := b.SetIfAbsent(bg, "k", "new", time.Minute)
			if err == nil && !ok {
				err = errors.New("SetIfAbsent refused a key under a lease")
			}
			return err
		}, "new"},
	}
	for mode, opts := range leaseModes() {
		for name, w := range writers {
			t.Run(mode+"/"+name, func(t *testing.T) {
				t.Parallel()
				a, b, raw := loadRace(t, opts, func(a *Client, started chan<- struct{}, release <-chan struct{}) error {
					v, err := GetOrLoadTTL(bg, a, "k", time.Minute, heldLoader("old", started, release))
					if err == nil && v != "old" {
						err = fmt.Errorf("the loading caller got %q, want its own value", v)
					}
					return err
				}, w.write)
				if n := a.Stats().LeasesLost; n != 1 {
					t.Fatalf("LeasesLost = %d, want 1", n)
				}
				mustAgree(t, a, raw, "k", w.want)
				mustAgree(t, b, raw, "k", w.want)
			})
		}
	}
}

// loadRace runs one load race: two Clients of opts on a fresh Redis; load
// (a load of a's, whose loader reports on started and waits for release)
// runs while write writes; it returns once the load has returned, failing
// the test on its error or the writer's.
func loadRace(t *testing.T, opts Options, load func(a *Client, started chan<- struct{}, release <-chan struct{}) error,
	write func(a, b *Client, raw *redis.Client) error) (a, b *Client, raw *redis.Client) {
	t.Helper()
	_, raw = withRedis(t)
	opts.Redis = raw
	a, b = newClient(t, opts), newClient(t, opts)
	started, release := make(chan struct{}), make(chan struct{})
	r := async(func() error { return load(a, started, release) })
	<-started
	if err := write(a, b, raw); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-r; err != nil {
		t.Fatal(err)
	}
	return a, b, raw
}

// A foreign SET of bytes this SDK cannot read stays as it is.
func TestLeaseLoadKeepsForeignSet(t *testing.T) {
	t.Parallel()
	_, raw := withRedis(t)
	a := newClient(t, Options{Redis: raw, L1MaxBytes: 1 << 20, Encryption: encConfig("")})
	started, release := make(chan struct{}), make(chan struct{})
	r := async(func() error {
		_, err := GetOrLoadTTL(bg, a, "k", time.Minute, heldLoader("old", started, release))
		return err
	})
	<-started
	if err := raw.Set(bg, "k", "written by another tool", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-r; err != nil {
		t.Fatal(err)
	}
	if got, _ := raw.Get(bg, "k").Result(); got != "written by another tool" {
		t.Fatalf("redis holds %q after the load", got)
	}
}

// While a load holds its lease every read of the key sees no entry, and
// the lease's bytes never reach a caller.
func TestLeaseReadsAsAbsent(t *testing.T) {
	t.Parallel()
	_, raw := withRedis(t)
	o := Options{Redis: raw, L1MaxBytes: 1 << 20, Encryption: encConfig("")}
	a, b := newClient(t, o), newClient(t, o)
	started, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	go func() { _, _ = GetOrLoadTTL(bg, a, "k", time.Minute, heldLoader("v", started, release)) }()
	<-started
	if v, _ := raw.Get(bg, "k").Bytes(); !l2.IsLease(v) {
		t.Fatalf("redis holds %q during the load, want a lease", v)
	}
	if _, err := Get[string](bg, b, "k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get = %v", err)
	}
	if _, _, err := GetWithTTL[string](bg, b, "k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetWithTTL = %v", err)
	}
	if m, err := MGet[string](bg, b, []string{"k"}); err != nil || len(m) != 0 {
		t.Fatalf("MGet = %v, %v", m, err)
	}
	mustBeAbsentToPresence(t, b, "k")
	if v, _ := raw.Get(bg, "k").Bytes(); !l2.IsLease(v) {
		t.Fatal("a read or refused write replaced the lease")
	}
	if err := b.Delete(bg, "k"); err != nil {
		t.Fatal(err)
	}
	if n, _ := raw.Exists(bg, "k").Result(); n != 0 {
		t.Fatal("Delete left the lease")
	}
}

// mustBeAbsentToPresence fails unless the commands that answer from key's
// presence see none: Exists false, TTL and Touch ErrNotFound, SetIfPresent
// storing nothing (as for a key holding a placeholder: a lease, a negative
// entry).
func mustBeAbsentToPresence(t *testing.T, c *Client, key string) {
	t.Helper()
	if ok, err := c.Exists(bg, key); ok || err != nil {
		t.Fatalf("Exists = %v, %v", ok, err)
	}
	if _, err := c.TTL(bg, key); !errors.Is(err, ErrNotFound) {
		t.Fatalf("TTL = %v", err)
	}
	if err := c.Touch(bg, key, time.Hour); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Touch = %v", err)
	}
	if ok, err := c.SetIfPresent(bg, key, "x", time.Minute); ok || err != nil {
		t.Fatalf("SetIfPresent = %v, %v", ok, err)
	}
}

// A refresh never undoes a write made while its loader ran: with L1 off
// (the same Client's Set and Delete), and with another Client's Set and no
// invalidation.
func TestSWRRefreshNeverOverwritesAWrite(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		noL1  bool
		write func(a, b *Client) error
		want  string
		plain bool // no encryption: equal values store equal bytes
	}{
		"noL1/same client Set":    {true, func(a, _ *Client) error { return a.Set(bg, "k", "new") }, "new", false},
		"noL1/same client Delete": {true, func(a, _ *Client) error { return a.Delete(bg, "k") }, "", false},
		"l1/other client Set":     {false, func(_, b *Client) error { return b.Set(bg, "k", "new") }, "new", false},
		"l1/other client Delete":  {false, func(_, b *Client) error { return b.Delete(bg, "k") }, "", false},
		// ABA: the served bytes are written again (unencrypted, the same
		// bytes): the digest alone cannot tell them from the served entry,
		// their new expiry can.
		"noL1/plain/same client Set new then Set v1 again": {true, func(a, _ *Client) error {
			if err := a.SetWithTTL(bg, "k", "new", swrTTL); err != nil {
				return err
			}
			return a.SetWithTTL(bg, "k", "v1", swrTTL)
		}, "v1", true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var raw *redis.Client
			a, clk := swrClient(t, func(o *Options) {
				if tc.noL1 {
					o.L1MaxBytes = 0
				}
				if tc.plain {
					o.Encryption = nil
				}
				raw = o.Redis.(*redis.Client)
			})
			bo := Options{Redis: raw, L1MaxBytes: 1 << 20, Encryption: encConfig("")}
			if tc.plain {
				bo.Encryption = nil
			}
			b := newClient(t, bo)
			if _, err := GetOrLoadTTL(bg, a, "k", swrTTL, func(context.Context) (string, error) { return "v1", nil }); err != nil {
				t.Fatal(err)
			}
			clk.Add(swrDue)
			started, release := make(chan struct{}), make(chan struct{})
			// Without L1 the entry's age comes from Redis's own clock: read
			// until a read finds it due and starts the (held) refresh.
			waitWithin(t, 5*time.Second, func() bool {
				if v, err := GetOrLoadTTL(bg, a, "k", swrTTL, heldLoader("refreshed", started, release)); err != nil || v != "v1" {
					t.Fatalf("stale read: %q, %v", v, err)
				}
				select {
				case <-started:
					return true
				default:
					return false
				}
			})
			if err := tc.write(a, b); err != nil {
				t.Fatal(err)
			}
			close(release)
			waitWithin(t, 5*time.Second, a.swrIdle) // the refresh, claimed by the stale read, has ended
			if n := a.Stats().LeasesLost; n != 1 {
				t.Fatalf("LeasesLost = %d, want 1 (the refresh dropped)", n)
			}
			if tc.want == "" {
				if n, _ := raw.Exists(bg, "k").Result(); n != 0 {
					t.Fatal("the refresh brought a deleted key back")
				}
				return
			}
			b.FlushLocal()
			if v, err := Get[string](bg, b, "k"); err != nil || v != tc.want {
				t.Fatalf("redis holds %q, %v; want %q", v, err, tc.want)
			}
		})
	}
}

// swrIdle reports whether no SWR refresh is running.
func (c *Client) swrIdle() bool {
	return c.swr.Refreshing() == 0
}

// A loader error gives the key back at once: a waiting Client loads
// itself instead of waiting out the lease.
func TestLeaseReleasedOnLoaderError(t *testing.T) {
	t.Parallel()
	srv, raw := withRedis(t)
	o := Options{RedisURL: srv.URL(), L1MaxBytes: 1 << 20, Encryption: encConfig(""), FleetSingleFlight: true, LeaseTTL: time.Minute}
	a, b := newClient(t, o), newClient(t, o)
	started, release := make(chan struct{}), make(chan struct{})
	r := async(func() error {
		_, err := GetOrLoad(bg, a, "k", func(ctx context.Context) (string, error) {
			close(started)
			<-release
			return "", errors.New("database down")
		})
		return err
	})
	<-started
	got := make(chan string, 1)
	go func() {
		v, _ := GetOrLoad(bg, b, "k", func(context.Context) (string, error) { return "from b", nil })
		got <- v
	}()
	waitWithin(t, 5*time.Second, func() bool { return b.Stats().LeaseWaits >= 1 })
	close(release)
	if err := <-r; err == nil {
		t.Fatal("the loader's error was lost")
	}
	select {
	case v := <-got:
		if v != "from b" {
			t.Fatalf("b got %q", v)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("b still waits for a lease the failed load released")
	}
	if n, _ := raw.Exists(bg, "k").Result(); n != 1 {
		t.Fatal("b's value was not stored")
	}
}

// On a Cluster the lease lives in the key's own slot: a load still loses
// to a write, and MGetOrLoad plants and fills leases for keys of every
// master in one pipeline each.
func TestLeaseOnCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	o := Options{RedisURL: cl.URL(), L1MaxBytes: 1 << 20, Encryption: encConfig(""), Invalidation: &Invalidation{}, FleetSingleFlight: true}
	a, b := newClient(t, o), newClient(t, o)
	started, release := make(chan struct{}), make(chan struct{})
	r := async(func() error {
		_, err := GetOrLoadTTL(bg, a, "user:{42}", time.Minute, heldLoader("old", started, release))
		return err
	})
	<-started
	mustSet(t, b, "user:{42}", "new")
	close(release)
	if err := <-r; err != nil {
		t.Fatal(err)
	}
	for _, c := range []*Client{a, b} {
		waitWithin(t, 5*time.Second, func() bool { v, _ := Get[string](bg, c, "user:{42}"); return v == "new" })
	}
	keys := make([]string, 30)
	for i := range keys {
		keys[i] = fmt.Sprintf("batch:%d", i)
	}
	var calls atomic.Int32
	got, err := MGetOrLoad(bg, a, keys, func(_ context.Context, missing []string) (map[string]int, error) {
		calls.Add(1)
		m := map[string]int{}
		for _, k := range missing {
			m[k] = len(k)
		}
		return m, nil
	})
	if err != nil || len(got) != len(keys) || calls.Load() != 1 {
		t.Fatalf("MGetOrLoad: %d values, %d loader calls, %v", len(got), calls.Load(), err)
	}
	again, err := MGet[int](bg, b, keys)
	if err != nil || len(again) != len(keys) {
		t.Fatalf("MGet after MGetOrLoad: %d values, %v", len(again), err)
	}
}

// In interop mode (keys shared with other SDKs, which know no lease) a
// fleet's GetOrLoad takes the family's {key}:lock instead: two Clients, one
// load, no placeholder ever stored in the key, and the lock released.
func TestInteropFleetUsesSideLock(t *testing.T) {
	t.Parallel()
	_, raw := withRedis(t)
	o := Options{Redis: raw, L1MaxBytes: 1 << 20, Interop: true, FleetSingleFlight: true, LeaseTTL: 2 * time.Second}
	a, b := newClient(t, o), newClient(t, o)
	key, err := InteropKey("users", "get_user", 1)
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	release := make(chan struct{})
	loader := func(ctx context.Context) (string, error) {
		calls.Add(1)
		if v, _ := raw.Get(ctx, key).Bytes(); l2.IsLease(v) {
			t.Error("a lease placeholder in an interop key")
		}
		<-release
		return "v", nil
	}
	var wg sync.WaitGroup
	for _, c := range []*Client{a, b} {
		wg.Go(func() {
			if v, err := GetOrLoadTTL(bg, c, key, time.Minute, loader); err != nil || v != "v" {
				t.Errorf("%q, %v", v, err)
			}
		})
	}
	waitWithin(t, 5*time.Second, func() bool { n, _ := raw.Exists(bg, key+":lock").Result(); return n == 1 && calls.Load() == 1 })
	close(release)
	wg.Wait()
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d loads, want 1", n)
	}
	if n, _ := raw.Exists(bg, key+":lock").Result(); n != 0 {
		t.Fatal("the lock was not released")
	}
}

// An ACL user limited to the Client's prefix (~app:*) runs every
// lease-aware path: the scripts name their keys, so Redis's key checks
// pass them.
func TestLeaseScriptsUnderKeyACL(t *testing.T) {
	t.Parallel()
	srv, raw := withRedis(t)
	if err := raw.Do(bg, "ACL", "SETUSER", "app", "on", ">pw", "~app:*", "&*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: "app", Password: "pw", MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	o := Production()
	o.Redis, o.Encryption, o.KeyPrefix = rdb, encConfig(""), "app:"
	c := newClient(t, o)
	if v, err := GetOrLoad(bg, c, "k", func(context.Context) (string, error) { return "v", nil }); err != nil || v != "v" {
		t.Fatalf("GetOrLoad: %q, %v", v, err)
	}
	if ok, err := c.Exists(bg, "k"); !ok || err != nil {
		t.Fatalf("Exists: %v, %v", ok, err)
	}
	if _, err := c.TTL(bg, "k"); err != nil {
		t.Fatal(err)
	}
	if err := c.Touch(bg, "k", time.Hour); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.SetIfPresent(bg, "k", "w", time.Minute); !ok || err != nil {
		t.Fatalf("SetIfPresent: %v, %v", ok, err)
	}
	if m, err := MGetOrLoad(bg, c, []string{"m1", "m2"}, func(_ context.Context, keys []string) (map[string]string, error) {
		return map[string]string{"m1": "1", "m2": "2"}, nil
	}); err != nil || len(m) != 2 {
		t.Fatalf("MGetOrLoad: %v, %v", m, err)
	}
	if err := c.Delete(bg, "k", "m1", "m2"); err != nil {
		t.Fatal(err)
	}
}

// An entry that opens but does not decode as the loader's type is replaced
// by the load, as one that fails to open is.
func TestLeaseReplacesUndecodableEntry(t *testing.T) {
	t.Parallel()
	_, raw := withRedis(t)
	c := newClient(t, Options{Redis: raw, L1MaxBytes: 1 << 20, Encryption: encConfig("")})
	mustSet(t, c, "k", "not a number")
	c.FlushLocal()
	if v, err := GetOrLoad(bg, c, "k", func(context.Context) (int, error) { return 5, nil }); err != nil || v != 5 {
		t.Fatalf("GetOrLoad: %d, %v", v, err)
	}
	c.FlushLocal()
	if v, err := Get[int](bg, c, "k"); err != nil || v != 5 {
		t.Fatalf("after the load: %d, %v", v, err)
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

// childEnv makes the test binary a lease child instead of running tests:
// "<mode> <redis addr> <key>".
const childEnv = "CACHEKIT_LEASE_CHILD"

// childLoad is how long a fleet child's loader works.
const childLoad = 300 * time.Millisecond

// leaseChild is one process of a cross-process test. Mode "hold" loads key
// with a loader that says "loading" and never returns (the parent kills
// it). Mode "fleet" says "ready", waits for its stdin to close, then
// GetOrLoads key with
// a loader that counts itself in Redis ("<key>:loads"), works for
// childLoad and prints "loaded <unix µs>", and prints "took <µs> <unix µs>"
// (how long the call took, and when it returned).
func leaseChild(args []string) int {
	if len(args) != 3 {
		return 2
	}
	mode, addr, key := args[0], args[1], args[2]
	if strings.HasPrefix(mode, "neg") {
		return negativeChild(mode, addr, key)
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	c, err := New(Options{Redis: rdb, L1MaxBytes: 1 << 20, Encryption: encConfig(""),
		Invalidation: &Invalidation{}, FleetSingleFlight: true, LeaseTTL: time.Second})
	if err != nil {
		fmt.Println("new:", err)
		return 1
	}
	defer c.Close()
	ctx := context.Background()
	switch mode {
	case "hold":
		_, err = GetOrLoad(ctx, c, key, func(context.Context) (string, error) {
			fmt.Println("loading")
			select {}
		})
	case "fleet":
		fmt.Println("ready")
		_, _ = io.Copy(io.Discard, os.Stdin) // the start signal: stdin closes
		start := time.Now()
		var v string
		v, err = GetOrLoad(ctx, c, key, func(ctx context.Context) (string, error) {
			rdb.Incr(ctx, key+":loads")
			time.Sleep(childLoad) // the work a load does
			fmt.Println("loaded", time.Now().UnixMicro())
			return "v", nil
		})
		if err == nil && v != "v" {
			err = fmt.Errorf("got %q", v)
		}
		fmt.Println("took", time.Since(start).Microseconds(), time.Now().UnixMicro())
	}
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	return 0
}

// startChild runs this test binary as a lease child.
func startChild(t *testing.T, spec string) (*exec.Cmd, io.WriteCloser, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+spec)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, stdin, bufio.NewScanner(out)
}

// fleetChild is a child process of a fleet test: closing its stdin is the
// start signal; out is what it prints.
type fleetChild struct {
	stdin io.WriteCloser
	out   *bufio.Scanner
}

// startReadyChildren starts n children as spec says and returns once each
// has built its Client (tracking up) and said "ready".
func startReadyChildren(t *testing.T, n int, spec string) []fleetChild {
	t.Helper()
	children := make([]fleetChild, n)
	for i := range children {
		_, in, out := startChild(t, spec)
		children[i] = fleetChild{in, out}
	}
	for i, ch := range children {
		if !ch.out.Scan() || ch.out.Text() != "ready" {
			t.Fatalf("child %d: %q", i, ch.out.Text())
		}
	}
	return children
}

// A process killed while it holds a key's lease blocks the key no longer
// than the lease's TTL (1 s here): a Client of this process waiting for it
// loads the key itself once the lease has expired.
func TestLeaseOfKilledProcessExpires(t *testing.T) {
	t.Parallel()
	srv, _ := withRedis(t)
	cmd, _, out := startChild(t, "hold "+srv.Addr()+" k")
	if !out.Scan() || out.Text() != "loading" {
		t.Fatalf("child: %q", out.Text())
	}
	c := newClient(t, Options{RedisURL: srv.URL(), L1MaxBytes: 1 << 20, Encryption: encConfig(""),
		Invalidation: &Invalidation{}, FleetSingleFlight: true, LeaseTTL: time.Second})
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	v, err := GetOrLoad(bg, c, "k", func(context.Context) (string, error) { return "after", nil })
	took := time.Since(killed)
	if err != nil || v != "after" {
		t.Fatalf("%q, %v", v, err)
	}
	// The lease was renewed at most LeaseTTL/3 before the kill; Redis
	// expires it within about 100 ms of its TTL.
	if took > time.Second+300*time.Millisecond {
		t.Fatalf("the key loaded %v after its holder died, want within the 1 s lease", took)
	}
	if c.Stats().LeaseWaits == 0 {
		t.Fatal("the Client never waited for the dead process's lease")
	}
	t.Logf("loaded %v after the holder was killed", took)
}

// Six processes missing one cold key at once run one load, and each
// returns within the load's time and 100 ms.
func TestFleetSingleFlightAcrossProcesses(t *testing.T) {
	t.Parallel()
	srv, raw := withRedis(t)
	children := startReadyChildren(t, 6, "fleet "+srv.Addr()+" cold")
	for _, ch := range children {
		_ = ch.stdin.Close()
	}
	var wg sync.WaitGroup
	took := make([]time.Duration, len(children))
	ended := make([]int64, len(children))
	var loaded atomic.Int64
	for i, ch := range children {
		wg.Go(func() {
			for ch.out.Scan() {
				f := strings.Fields(ch.out.Text())
				switch {
				case len(f) == 2 && f[0] == "loaded":
					n, _ := strconv.ParseInt(f[1], 10, 64)
					loaded.Store(n)
				case len(f) == 3 && f[0] == "took":
					us, _ := strconv.Atoi(f[1])
					took[i] = time.Duration(us) * time.Microsecond
					ended[i], _ = strconv.ParseInt(f[2], 10, 64)
				default:
					t.Errorf("child %d: %s", i, ch.out.Text())
				}
			}
		})
	}
	wg.Wait()
	if n, _ := raw.Get(bg, "cold:loads").Int(); n != 1 {
		t.Fatalf("%d loads across 6 processes, want 1", n)
	}
	// Each process is back within 100 ms of the load's end (woken by
	// invalidation), whichever process loaded.
	for i, e := range ended {
		if after := time.Duration(e-loaded.Load()) * time.Microsecond; e == 0 || after > 100*time.Millisecond {
			t.Errorf("process %d returned %v after the load ended, want at most 100ms", i, after)
		}
	}
	t.Logf("processes returned after %v", took)
}

// TestMixedLeaseTTLsOneLoad: Clients with LeaseTTL 5 s and 30 s on one key
// make one load, whichever holds the lease: a lease carries its holder's
// LeaseTTL, and a reader judges it by that, not by its own (before, the
// 30 s Client found the 5 s Client's fresh lease with less than half of
// 30 s left and took it over: two loads, the first one's store lost).
func TestMixedLeaseTTLsOneLoad(t *testing.T) {
	t.Parallel()
	for _, holderTTL := range []time.Duration{5 * time.Second, 30 * time.Second} {
		t.Run(holderTTL.String(), func(t *testing.T) {
			t.Parallel()
			_, raw := withRedis(t)
			o := Options{Redis: raw, Encryption: encConfig(""), FleetSingleFlight: true}
			o.LeaseTTL = holderTTL
			holder := newClient(t, o)
			o.LeaseTTL = 35*time.Second - holderTTL // the other one
			reader := newClient(t, o)
			var loads atomic.Int32
			release := make(chan struct{})
			load := func(context.Context) (string, error) {
				loads.Add(1)
				<-release
				return "v", nil
			}
			first := async(func() error { _, err := GetOrLoad(bg, holder, "k", load); return err })
			waitWithin(t, 5*time.Second, func() bool { return loads.Load() == 1 })
			second := async(func() error { _, err := GetOrLoad(bg, reader, "k", load); return err })
			waitWithin(t, 5*time.Second, func() bool { return reader.Stats().LeaseWaits >= 1 || loads.Load() > 1 })
			close(release)
			if err := errors.Join(<-first, <-second); err != nil {
				t.Fatal(err)
			}
			if n := loads.Load(); n != 1 {
				t.Fatalf("%d loads, want 1: the %v Client took over the %v Client's live lease", n, o.LeaseTTL, holderTTL)
			}
		})
	}
}

// TestOlderClientsLeaseKept: a lease an older Client planted (32 random hex
// digits, no TTL in it) is judged by the reader's own LeaseTTL, as before:
// with the same LeaseTTL (a fleet that agrees), one 4 s from its end is
// waited for, not taken over, and one with less than half left is.
func TestOlderClientsLeaseKept(t *testing.T) {
	t.Parallel()
	_, raw := withRedis(t)
	c := newClient(t, Options{Redis: raw, Encryption: encConfig(""), FleetSingleFlight: true, LeaseTTL: 5 * time.Second})
	old := l2.LeaseMagic + l2.NewToken() // today's format
	if _, ok := l2.LeaseTTLOf([]byte(old)); ok || !l2.IsLease([]byte(old)) {
		t.Fatal("an older Client's lease read as carrying a TTL, or not as a lease")
	}
	if err := raw.Set(bg, c.fullKey("k"), old, 4*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var loadedAt time.Duration
	v, err := GetOrLoad(bg, c, "k", func(context.Context) (string, error) {
		loadedAt = time.Since(start)
		return "v", nil
	})
	if err != nil || v != "v" {
		t.Fatalf("GetOrLoad = %q, %v", v, err)
	}
	if loadedAt < 1400*time.Millisecond {
		t.Fatalf("loaded %v after start: took over an older Client's live lease (4 s of 5 s left)", loadedAt)
	}
	if fresh := l2.NewLeaseFor(5 * time.Second); !l2.IsLease([]byte(fresh)) || len(fresh) != len(old) {
		t.Fatalf("a new lease %q is not a lease of today's length", fresh)
	} else if d, ok := l2.LeaseTTLOf([]byte(fresh)); !ok || d != 5*time.Second {
		t.Fatalf("LeaseTTLOf(new lease) = %v, %v", d, ok)
	}
}

// A loader that panics gives its claim back at once, as one that fails
// does: the lease (GetOrLoad's, every key's of an MGetOrLoad batch, no
// renewal keeping it alive) and interop mode's {key}:lock are
// gone when the call returns its error, and the next load stores.
func TestPanickingLoaderGivesTheKeyBack(t *testing.T) {
	t.Parallel()
	boom := func(context.Context) (string, error) { panic("loader bug") }
	held := func(t *testing.T, raw *redis.Client, keys ...string) {
		t.Helper()
		if n, err := raw.Exists(bg, keys...).Result(); err != nil || n != 0 {
			t.Fatalf("after the panic Redis holds %d of the %d keys (%v): the claim was not given back", n, len(keys), err)
		}
	}
	t.Run("lease", func(t *testing.T) {
		t.Parallel()
		c, raw := redisClient(t, Options{LeaseTTL: 300 * time.Millisecond})
		if _, err := GetOrLoad(bg, c, "k", boom); err == nil {
			t.Fatal("a panicking loader returned no error")
		}
		held(t, raw, "k")
		if v, err := GetOrLoad(bg, c, "k", func(context.Context) (string, error) { return "v", nil }); err != nil || v != "v" {
			t.Fatalf("the next load = %q, %v", v, err)
		}
	})
	t.Run("batch", func(t *testing.T) {
		t.Parallel()
		c, raw := redisClient(t, Options{LeaseTTL: 300 * time.Millisecond})
		_, err := MGetOrLoad(bg, c, []string{"a", "b"}, func(context.Context, []string) (map[string]string, error) {
			panic("loader bug")
		})
		if err == nil {
			t.Fatal("a panicking batch loader returned no error")
		}
		held(t, raw, "a", "b")
	})
	t.Run("interop lock", func(t *testing.T) {
		t.Parallel()
		c, raw := redisClient(t, Options{Interop: true, FleetSingleFlight: true})
		key, err := InteropKey("users", "get_user", "panics")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := GetOrLoad(bg, c, key, boom); err == nil {
			t.Fatal("a panicking loader returned no error")
		}
		held(t, raw, key, key+":lock")
		if v, err := GetOrLoad(bg, c, key, func(context.Context) (string, error) { return "v", nil }); err != nil || v != "v" {
			t.Fatalf("the next load = %q, %v", v, err)
		}
	})
}

// A lease load whose value is not stored (it cannot be sealed: over
// MaxValueBytes) goes to its callers with the instant its loader started,
// never a zero one, which would let a caller that joined the flight later
// (after a write) take it without loading again.
func TestUnstoredLeaseLoadIsDated(t *testing.T) {
	t.Parallel()
	c, raw := redisClient(t, Options{MaxValueBytes: 1 << 10})
	before := time.Now()
	res, err := loadKey(bg, c, "k", time.Minute, func(context.Context) (string, error) {
		return strings.Repeat("x", 2<<10), nil
	}, false)
	if err != nil || len(res.v) != 2<<10 {
		t.Fatalf("load = %d bytes, %v", len(res.v), err)
	}
	if res.at.Before(before) || res.at.After(time.Now()) {
		t.Fatalf("the unstored value is dated %v, want its loader's start (after %v)", res.at, before)
	}
	if n, _ := raw.Exists(bg, "k").Result(); n != 0 {
		t.Fatal("the lease of a value that could not be sealed was left")
	}
}
