package cachekit

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/internal/redistest"
)

// markerBack waits until Redis holds c's marker again, at most within.
func markerBack(t *testing.T, c *Client, raw *redis.Client, within time.Duration, after string) {
	t.Helper()
	key := c.fullKey(NameMarker("t1"))
	start := time.Now()
	waitWithin(t, 5*time.Second, func() bool {
		v, _ := raw.Get(bg, key).Result()
		return v == c.names.Fingerprint()
	})
	if took := time.Since(start); took > within {
		t.Fatalf("the marker came back %v after %s, want within %v", took, after, within)
	}
}

// The name-key marker has no TTL and used to be written only by New: an
// eviction, a DEL or FLUSHDB removed it for good, and a Client with
// another name key could then start and serve what the first deleted. A
// Client keeps it: written again within a second of its loss, at once
// where tracking reports the loss (FLUSHDB as a flush of every key), on a
// timer otherwise.
func TestNameMarkerKeptAfterLoss(t *testing.T) {
	t.Parallel()
	for _, tracking := range []bool{true, false} {
		t.Run(fmt.Sprintf("tracking=%v", tracking), func(t *testing.T) {
			t.Parallel()
			opts := namedOpts(testNameKey)
			if tracking {
				opts.Invalidation = &Invalidation{}
			}
			c, raw := redisClient(t, opts)
			if tracking {
				waitWithin(t, 5*time.Second, func() bool { return c.InvalidationStats().Tracking })
			}
			key := c.fullKey(NameMarker("t1"))
			if err := raw.Del(bg, key).Err(); err != nil {
				t.Fatal(err)
			}
			markerBack(t, c, raw, 1500*time.Millisecond, "a DEL")
			if err := raw.FlushDB(bg).Err(); err != nil {
				t.Fatal(err)
			}
			markerBack(t, c, raw, 1500*time.Millisecond, "FLUSHDB")
		})
	}
	// Evicted under allkeys-lru while other keys fill Redis.
	t.Run("eviction", func(t *testing.T) {
		t.Parallel()
		opts := namedOpts(testNameKey)
		opts.Invalidation = &Invalidation{}
		c, raw := redisClient(t, opts)
		waitWithin(t, 5*time.Second, func() bool { return c.InvalidationStats().Tracking })
		key := c.fullKey(NameMarker("t1"))
		used, _ := raw.MemoryUsage(bg, key).Result()
		info, _ := raw.Info(bg, "memory").Result()
		var inUse int64
		for _, line := range bytes.Split([]byte(info), []byte("\r\n")) {
			if v, ok := bytes.CutPrefix(line, []byte("used_memory:")); ok {
				fmt.Sscan(string(v), &inUse)
			}
		}
		raw.ConfigSet(bg, "maxmemory-policy", "allkeys-lru")
		raw.ConfigSet(bg, "maxmemory", fmt.Sprint(inUse+1<<20))
		filler := bytes.Repeat([]byte("x"), 4096)
		for i := 0; ; i++ {
			if n, _ := raw.Exists(bg, key).Result(); n == 0 {
				break // evicted
			}
			if i > 100000 {
				t.Fatalf("the marker (%d bytes) was never evicted", used)
			}
			raw.Set(bg, fmt.Sprintf("fill:%d", i), filler, 0)
		}
		markerBack(t, c, raw, 1500*time.Millisecond, "its eviction")
	})
}

// TestNameMarkerBackAfterRestart: Redis restarted empty (down 300 ms, then
// 3 s) with tracking on: a restart sends no invalidation, yet the marker
// is back, and a Client with another name key refused, within 2 s of the
// server's return, 3 rounds of each (before, 6 of 6 never came back:
// keepMarker skipped its timer while tracking was on).
func TestNameMarkerBackAfterRestart(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	raw := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
	t.Cleanup(func() { _ = raw.Close() })
	opts := namedOpts(testNameKey)
	opts.RedisURL = srv.URL()
	opts.Invalidation = &Invalidation{}
	c := newClient(t, opts)
	waitWithin(t, 5*time.Second, func() bool { return c.InvalidationStats().Tracking })
	for round, down := range []time.Duration{300 * time.Millisecond, 3 * time.Second, 300 * time.Millisecond,
		3 * time.Second, 300 * time.Millisecond, 3 * time.Second} {
		srv.Kill()
		time.Sleep(down) // the outage itself: nothing to wait for
		srv.Restart()
		markerBack(t, c, raw, 2*time.Second, fmt.Sprintf("a restart (round %d, down %v)", round, down))
		other := namedOpts(bytes.Repeat([]byte{0x77}, 32))
		other.RedisURL = srv.URL()
		o, err := New(other)
		var mismatch *NameKeyMismatchError
		if !errors.As(err, &mismatch) {
			if o != nil {
				_ = o.Close()
			}
			t.Fatalf("round %d: a Client with another name key after the restart: %v, want *NameKeyMismatchError", round, err)
		}
	}
}

// One marker per tenant: two tenants with their own name keys under one
// prefix never meet (their names differ anyway), so neither is refused.
func TestNameMarkerPerTenant(t *testing.T) {
	t.Parallel()
	_, raw := withRedis(t)
	a := namedOpts(testNameKey)
	a.Redis = raw
	b := namedOpts(bytes.Repeat([]byte{0x77}, 32))
	b.Encryption.Tenant = "t2"
	b.Redis = raw
	newClient(t, a)
	newClient(t, b)
	if NameMarker("t1") == NameMarker("t2") || bytes.Contains([]byte(NameMarker("t1")), []byte("t1")) {
		t.Fatal("markers must differ per tenant and not name it")
	}
}

// A Client with another name key that starts while the marker is missing
// is caught: either its New finds the first Client's marker back
// (*NameKeyMismatchError), or the first Client, writing its marker again,
// finds the newcomer's and reports it (Stats.NameKeyMismatches).
func TestNameMarkerMixedFleetReported(t *testing.T) {
	t.Parallel()
	_, raw := withRedis(t)
	first := namedOpts(testNameKey)
	first.Redis = raw
	a := newClient(t, first)
	if err := raw.Del(bg, a.fullKey(NameMarker("t1"))).Err(); err != nil {
		t.Fatal(err)
	}
	other := namedOpts(bytes.Repeat([]byte{0x77}, 32))
	other.Redis = raw
	c, err := New(other)
	var mismatch *NameKeyMismatchError
	if errors.As(err, &mismatch) {
		return // refused: the marker was back first
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitWithin(t, 1500*time.Millisecond, func() bool { return a.Stats().NameKeyMismatches > 0 })
}

// A prefix with an unclosed '{' would never close its hash tag under a
// name key: opaque names contain no '}'. New refuses it.
func TestNameKeyRefusesUnclosedBrace(t *testing.T) {
	t.Parallel()
	opts := namedOpts(testNameKey)
	opts.KeyPrefix = "app{tenant:"
	if _, err := New(opts); !errors.Is(err, ErrConfig) {
		t.Fatalf("New with prefix %q and a name key = %v, want ErrConfig", opts.KeyPrefix, err)
	}
	opts.KeyPrefix = "{app}:"
	c, err := New(opts)
	if err != nil {
		t.Fatalf("a closed tag in the prefix: %v", err)
	}
	c.Close()
}
