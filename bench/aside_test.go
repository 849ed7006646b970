package bench

import (
	"context"
	"flag"
	"testing"
	"time"

	"github.com/go-redis/cache/v9"
	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/cachekit"
	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/internal/cacheaside"
	"github.com/cachekit-io/cachekit-go/internal/fixture"
)

var (
	asideHistories = flag.Int("aside.histories", 1000, "cache-aside histories per row of TestCacheAsideVerdicts")
	asidePace      = flag.Duration("aside.pace", 5*time.Millisecond, "interval between two operations of a goroutine in TestCacheAsideVerdicts")
)

// asideCachekit adapts a cachekit Client to cacheaside.Cache.
type asideCachekit struct{ c *cachekit.Client }

func (a asideCachekit) GetOrLoad(ctx context.Context, key string, load func(context.Context) (int, error)) (int, error) {
	return cachekit.GetOrLoad(ctx, a.c, key, load)
}
func (a asideCachekit) Set(ctx context.Context, key string, v int) error { return a.c.Set(ctx, key, v) }
func (a asideCachekit) Delete(ctx context.Context, key string) error     { return a.c.Delete(ctx, key) }

// asideGoRedisCache adapts go-redis/cache (its Once is its GetOrLoad).
type asideGoRedisCache struct{ c *cache.Cache }

func (a asideGoRedisCache) GetOrLoad(ctx context.Context, key string, load func(context.Context) (int, error)) (int, error) {
	var v int
	err := a.c.Once(&cache.Item{Ctx: ctx, Key: key, Value: &v, TTL: time.Minute, Do: func(it *cache.Item) (any, error) {
		return load(it.Context())
	}})
	return v, err
}
func (a asideGoRedisCache) Set(ctx context.Context, key string, v int) error {
	return a.c.Set(&cache.Item{Ctx: ctx, Key: key, Value: v, TTL: time.Minute})
}
func (a asideGoRedisCache) Delete(ctx context.Context, key string) error {
	err := a.c.Delete(ctx, key)
	if err == cache.ErrCacheMiss {
		return nil
	}
	return err
}

// TestCacheAsideVerdicts runs the porcupine cache-aside check of
// internal/cacheaside (3 clients, writers that update a source then Set,
// Delete or raw DEL, readers that GetOrLoad; -aside.histories histories
// per row) for cachekit and for go-redis/cache, and logs each row's
// verdict. It fails only when a cachekit row is not linearizable (within
// its delta); the peers' rows are what they are. Skipped under -short (CI
// runs the 100-history check in go test ./cachekit).
func TestCacheAsideVerdicts(t *testing.T) {
	if testing.Short() {
		t.Skip("the long cache-aside check runs without -short")
	}
	raw := rawRedis(t)
	foreign := func(ctx context.Context, key string) error { return raw.Del(ctx, key).Err() }
	ck := func(l1 bool) []cacheaside.Cache {
		var out []cacheaside.Cache
		for range 3 {
			o := cachekit.Options{RedisURL: redisURL(t), Encryption: &encryption.Config{MasterKey: fixture.MasterKey}, FleetSingleFlight: true}
			if l1 {
				o.L1MaxBytes, o.Invalidation = 1<<20, &cachekit.Invalidation{}
			}
			c, err := cachekit.New(o)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			out = append(out, asideCachekit{c})
		}
		return out
	}
	grc := func(local bool) []cacheaside.Cache {
		var out []cacheaside.Cache
		for range 3 {
			rdb := redis.NewClient(&redis.Options{Addr: raw.Options().Addr})
			t.Cleanup(func() { _ = rdb.Close() })
			o := &cache.Options{Redis: rdb}
			if local {
				o.LocalCache = cache.NewTinyLFU(1000, time.Minute)
			}
			out = append(out, asideGoRedisCache{cache.New(o)})
		}
		return out
	}
	rows := []struct {
		name    string
		clients []cacheaside.Cache
		delta   time.Duration
		ours    bool
	}{
		{"cachekit/noL1/strict", ck(false), 0, true},
		{"cachekit/L1+invalidation/strict", ck(true), 0, false},
		{"cachekit/L1+invalidation/delta=5ms", ck(true), 5 * time.Millisecond, false},
		{"cachekit/L1+invalidation/delta=20ms", ck(true), 20 * time.Millisecond, true},
		{"go-redis-cache/noLocal/strict", grc(false), 0, false},
		{"go-redis-cache/noLocal/delta=20ms", grc(false), 20 * time.Millisecond, false},
		{"go-redis-cache/TinyLFU/strict", grc(true), 0, false},
		{"go-redis-cache/TinyLFU/delta=20ms", grc(true), 20 * time.Millisecond, false},
	}
	for i, row := range rows {
		start := time.Now()
		res, err := cacheaside.Run(bg, cacheaside.Config{Clients: row.clients, Foreign: foreign, Delta: row.delta, Pace: *asidePace, Seed: uint64(i + 1)}, *asideHistories)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%-40s %5d histories %7d ops %6.1fs: %4d not linearizable, %d undecided, %d errors",
			row.name, res.Histories, res.Operations, time.Since(start).Seconds(), res.Failed, res.Unknown, res.Errors)
		if row.ours && (res.Failed != 0 || res.Unknown != 0 || res.Errors != 0) {
			t.Errorf("%s: not linearizable within its delta", row.name)
		}
	}
}
