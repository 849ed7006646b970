package cachekit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/internal/testwait"
)

// trackedPair returns a Production-preset Client (with encryption) and a
// writer that is not it: a Minimal-preset Client with the same key (so
// invalidation off), plus a raw go-redis client, all on one fresh Redis.
func trackedPair(t *testing.T) (p, w *Client, raw *redis.Client, srvAddr string) {
	t.Helper()
	srv, raw := withRedis(t)
	po := Production()
	po.RedisURL, po.Encryption = srv.URL(), encConfig("")
	p = newClient(t, po)
	wo := Minimal()
	wo.RedisURL, wo.Encryption = srv.URL(), encConfig("")
	w = newClient(t, wo)
	if !p.InvalidationStats().Tracking {
		t.Fatal("tracking not up after New")
	}
	return p, w, raw, srv.Addr()
}

// fillL1 reads key through c until it reads want from L1 (a write made
// just before may still be on its way as an invalidation).
func fillL1(t *testing.T, c *Client, key, want string) {
	t.Helper()
	waitWithin(t, 2*time.Second, func() bool {
		before := c.Stats().L1Hits
		v, err := Get[string](bg, c, key)
		return err == nil && v == want && c.Stats().L1Hits > before
	})
}

// A write by anything but this Client (another Client with invalidation
// off, a raw DEL) reaches this Client's L1 within a second, every time.
func TestTrackingForeignWritersWithinOneSecond(t *testing.T) {
	t.Parallel()
	p, w, raw, _ := trackedPair(t)
	const tries = 40
	var lags []time.Duration
	for i := range tries {
		key := fmt.Sprintf("session:%d", i%4)
		old, next := fmt.Sprintf("v%d", i), fmt.Sprintf("v%d", i+1)
		mustSet(t, w, key, old)
		fillL1(t, p, key, old)
		start := time.Now()
		if i%5 == 4 {
			// A raw DEL (redis-cli, an operator).
			if err := raw.Del(bg, key).Err(); err != nil {
				t.Fatal(err)
			}
			waitWithin(t, time.Second, func() bool { _, err := Get[string](bg, p, key); return errors.Is(err, ErrNotFound) })
		} else {
			mustSet(t, w, key, next)
			waitWithin(t, time.Second, func() bool { v, _ := Get[string](bg, p, key); return v == next })
		}
		lags = append(lags, time.Since(start))
	}
	slices.Sort(lags)
	t.Logf("staleness after a foreign write over %d tries: p50 %v, p99 %v, max %v", tries, lags[tries/2], lags[tries*99/100], lags[tries-1])
}

// FLUSHDB and expiry reach L1 too.
func TestTrackingFlushAndExpiry(t *testing.T) {
	t.Parallel()
	p, w, raw, _ := trackedPair(t)
	mustSet(t, w, "a", "1")
	fillL1(t, p, "a", "1")
	if err := raw.FlushDB(bg).Err(); err != nil {
		t.Fatal(err)
	}
	waitWithin(t, time.Second, func() bool { _, err := Get[string](bg, p, "a"); return errors.Is(err, ErrNotFound) })
	waitWithin(t, time.Second, func() bool { return p.InvalidationStats().Flushes > 0 })
	// A key given no expiry by an outside writer is never backfilled (its
	// lifetime in Redis is unknown), so it cannot outlive a later change.
	if err := raw.Set(bg, "plain", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
}

// The tracking connection is lost (killed by an operator): L1 is cleared
// at once, a write made meanwhile is never hidden behind an old L1 entry,
// and tracking comes back by itself.
func TestTrackingLossClearsL1(t *testing.T) {
	t.Parallel()
	p, w, raw, _ := trackedPair(t)
	mustSet(t, w, "k", "old")
	fillL1(t, p, "k", "old")
	losses := p.InvalidationStats().Losses
	if err := raw.ClientKillByFilter(bg, "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	if err := w.Set(bg, "k", "new"); err != nil { // missed by the dead listener
		t.Fatal(err)
	}
	waitWithin(t, time.Second, func() bool { return p.InvalidationStats().Losses > losses })
	if v, err := Get[string](bg, p, "k"); err != nil || v != "new" {
		t.Fatalf("after the loss: %q, %v", v, err)
	}
	waitWithin(t, 2*time.Second, func() bool { return p.InvalidationStats().Tracking })
	fillL1(t, p, "k", "new")
}

// A hung Redis (SIGSTOP) is noticed within the tracking deadline: L1 is
// cleared and not written until tracking is back.
func TestTrackingHungRedisDetected(t *testing.T) {
	t.Parallel()
	srv, _ := withRedis(t)
	p := newClient(t, Options{RedisURL: srv.URL(), L1MaxBytes: 1 << 20, Encryption: encConfig(""), Invalidation: &Invalidation{}})
	mustSet(t, p, "k", "v")
	srv.Pause()
	start := time.Now()
	waitWithin(t, 3*time.Second, func() bool { return !p.InvalidationStats().Tracking })
	t.Logf("hung Redis noticed after %v", time.Since(start))
	if n := p.Stats().L1Bytes; n != 0 {
		t.Fatalf("L1 holds %d bytes while tracking is down", n)
	}
	srv.Resume()
	waitWithin(t, 3*time.Second, func() bool { return p.InvalidationStats().Tracking })
	if v, err := Get[string](bg, p, "k"); err != nil || v != "v" {
		t.Fatalf("after resume: %q, %v", v, err)
	}
}

// An entry is never served from L1 after Redis has let it expire, whichever
// path put it in L1. Invalidation is off: only the TTL bound protects.
func TestL1NeverOutlivesRedisTTL(t *testing.T) {
	t.Parallel()
	srv, raw := withRedis(t)
	c := newClient(t, Options{RedisURL: srv.URL(), L1MaxBytes: 1 << 20, Encryption: encConfig("")})
	w := newClient(t, Options{RedisURL: srv.URL(), Encryption: encConfig("")})
	paths := map[string]func(key string) error{
		"set": func(key string) error { return c.SetWithTTL(bg, key, "v", time.Second) },
		"get": func(key string) error {
			if err := w.SetWithTTL(bg, key, "v", time.Second); err != nil {
				return err
			}
			_, err := Get[string](bg, c, key)
			return err
		},
		"mget": func(key string) error {
			if err := w.SetWithTTL(bg, key, "v", time.Second); err != nil {
				return err
			}
			_, err := MGet[string](bg, c, []string{key})
			return err
		},
		"getorload": func(key string) error {
			_, err := getOrLoadOneSecond(c, key)
			return err
		},
	}
	for name, put := range paths {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // each waits about a second for Redis to expire its own key
			key := "ttl:" + name
			if err := put(key); err != nil {
				t.Fatal(err)
			}
			waitWithin(t, 3*time.Second, func() bool {
				inRedis := raw.Exists(bg, key).Val() == 1 // read Redis first
				_, err := Get[string](bg, c, key)
				if err == nil && !inRedis {
					t.Fatalf("%s: served from L1 after Redis expired the key", name)
				}
				return errors.Is(err, ErrNotFound)
			})
		})
	}
}

// getOrLoadOneSecond loads "v" under key for one second.
func getOrLoadOneSecond(c *Client, key string) (string, error) {
	return GetOrLoadTTL(bg, c, key, time.Second, func(context.Context) (string, error) { return "v", nil })
}

// waitWithin polls cond (see testwait) until it holds, failing after limit.
func waitWithin(t *testing.T, limit time.Duration, cond func() bool) {
	t.Helper()
	testwait.For(t, limit, cond, "condition")
}

// within polls cond until it holds or limit passes, and reports whether it
// held.
func within(limit time.Duration, cond func() bool) bool { return testwait.Until(limit, cond) }

// The L1 hit ratio of a 95 % read / 5 % write workload on 100 keys, with
// invalidation off (a Client's own writes stay in its L1, as they did with
// the pub/sub channel) and with tracking (each own write comes back as an
// invalidation and costs the next read a Redis round trip).
func TestTrackingHitRatio95Read5Write(t *testing.T) {
	t.Parallel()
	srv, _ := withRedis(t)
	for _, inv := range []bool{false, true} {
		opts := Options{RedisURL: srv.URL(), L1MaxBytes: 8 << 20, Encryption: encConfig("")}
		if inv {
			opts.Invalidation = &Invalidation{}
		}
		c := newClient(t, opts)
		for k := range 100 {
			mustSet(t, c, fmt.Sprintf("ratio:%v:%d", inv, k), -1)
		}
		base := c.Stats()
		r := rand.New(rand.NewPCG(1, 2))
		const ops = 20000
		for i := range ops {
			key := fmt.Sprintf("ratio:%v:%d", inv, r.IntN(100))
			if r.IntN(100) < 5 {
				mustSet(t, c, key, i)
				continue
			}
			if _, err := Get[int](bg, c, key); err != nil && !errors.Is(err, ErrNotFound) {
				t.Fatal(err)
			}
		}
		st := c.Stats()
		hits, misses := st.L1Hits-base.L1Hits, st.L1Misses-base.L1Misses
		ratio := float64(hits) / float64(hits+misses)
		t.Logf("invalidation=%v: L1 hit ratio %.3f (%d hits, %d misses)", inv, ratio, hits, misses)
		if ratio < 0.9 {
			t.Errorf("hit ratio %.3f below 0.9", ratio)
		}
	}
}

// KeyPrefix shards invalidation: each Client tracks BCAST PREFIX
// <KeyPrefix>, so Redis sends a Client the writes under its own prefix and
// no others. Clients with disjoint prefixes ("shard-a:", "shard-b:") hear
// none of each other's writes (not even as messages they then drop); a
// Client whose prefix is a prefix of both ("shard-") hears them all.
func TestTrackingPrefixShards(t *testing.T) {
	t.Parallel()
	srv, raw := withRedis(t)
	shard := func(prefix string) *Client {
		o := Production()
		o.RedisURL, o.KeyPrefix = srv.URL(), prefix
		c := newClient(t, o)
		waitWithin(t, 2*time.Second, func() bool { return c.InvalidationStats().Tracking })
		return c
	}
	a, b, both := shard("shard-a:"), shard("shard-b:"), shard("shard-")
	const writes = 50
	for i := range writes {
		if err := raw.Set(bg, fmt.Sprintf("shard-a:%d", i), "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Redis sends each connection its messages in order: once b has the
	// write under its own prefix, any message of the writes before it has
	// arrived too.
	if err := raw.Set(bg, "shard-b:fence", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	waitWithin(t, 2*time.Second, func() bool {
		return b.InvalidationStats().Applied >= 1 && a.InvalidationStats().Applied >= writes &&
			both.InvalidationStats().Applied >= writes+1
	})
	if st := b.InvalidationStats(); st.Received != 1 || st.Applied != 1 {
		t.Errorf("shard-b: received %d messages, applied %d keys; want 1 and 1 (its own key only)", st.Received, st.Applied)
	}
	if st := a.InvalidationStats(); st.Applied != writes {
		t.Errorf("shard-a: applied %d keys, want %d", st.Applied, writes)
	}
}
