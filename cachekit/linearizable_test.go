package cachekit

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/cachekit-io/cachekit-go/internal/cacheaside"
)

// asideClient adapts a Client to cacheaside.Cache.
type asideClient struct{ c *Client }

func (a asideClient) GetOrLoad(ctx context.Context, key string, load func(context.Context) (int, error)) (int, error) {
	return GetOrLoad(ctx, a.c, key, load)
}
func (a asideClient) Set(ctx context.Context, key string, v int) error { return a.c.Set(ctx, key, v) }

// asideBatch reads with MGetOrLoad of the one key instead, so its loads
// share flights with the GetOrLoads of the other clients' goroutines in
// this process. A key the source lacks is left out of the loader's map,
// and read as ErrNotFound.
type asideBatch struct{ asideClient }

func (a asideBatch) GetOrLoad(ctx context.Context, key string, load func(context.Context) (int, error)) (int, error) {
	m, err := MGetOrLoad(ctx, a.c, []string{key}, func(ctx context.Context, keys []string) (map[string]int, error) {
		v, err := load(ctx)
		if errors.Is(err, ErrNotFound) {
			return map[string]int{}, nil // not found: left out
		}
		return map[string]int{key: v}, err
	})
	if v, ok := m[key]; ok || err != nil {
		return v, err
	}
	return 0, ErrNotFound
}
func (a asideClient) Delete(ctx context.Context, key string) error { return a.c.Delete(ctx, key) }

// linearizabilityDelta is the staleness bound the check allows an L1 kept
// by invalidation: the time for a write's invalidation to reach another
// Client (docs/production.md: p99 13 ms on loopback; bench/ finds 5 ms
// enough over 1,000 histories; this allows for -race on a loaded machine).
const linearizabilityDelta = 50 * time.Millisecond

// Under -short (no redis-server) the strict check runs against miniredis:
// the same scripts, one process, 100 histories.
func TestLinearizableCacheAsideShort(t *testing.T) {
	t.Parallel()
	if !testing.Short() {
		t.Skip("without -short, TestLinearizableCacheAside runs on real redis-servers")
	}
	mr := miniredis.RunT(t)
	var clients []cacheaside.Cache
	for range 3 {
		clients = append(clients, asideClient{newClient(t, Options{RedisURL: "redis://" + mr.Addr(), Encryption: encConfig(""), FleetSingleFlight: true})})
	}
	res, err := cacheaside.Run(bg, cacheaside.Config{Clients: clients, Foreign: func(_ context.Context, key string) error {
		mr.Del(key)
		return nil
	}, Seed: 2}, 100)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d histories, %d operations: %d not linearizable, %d undecided, %d errors", res.Histories, res.Operations, res.Failed, res.Unknown, res.Errors)
	if res.Failed != 0 || res.Unknown != 0 || res.Errors != 0 {
		t.Fatal("the history check failed")
	}
}

// Porcupine checks 100 short cache-aside histories of 3 Clients each
// (writers that update a source then Set, Delete, or DEL with a raw
// command; readers that GetOrLoad): strictly linearizable without L1, and
// linearizable within the invalidation bound with L1 and invalidation
// (Production's coherence), also when Redis refuses tracking (the
// fallback: cachekit writers are bounded by their announcements' delivery,
// the raw DEL by FallbackL1Lifetime, both set within δ). The "negative"
// modes add absent keys (the source starts without them, a third of the
// writers remove them) and cache the loaders' "not found"
// (NegativeTTL): a read that returns ErrNotFound reads "absent", which no
// read may see past an insert. bench/ runs the same check over 1,000.
func TestLinearizableCacheAside(t *testing.T) {
	// Not parallel with the package's other tests: δ is a timing bound,
	// checked away from their load (its modes still run side by side). In
	// the parallel phase under -race on 2 cores, 1 of 100 histories once
	// saw an invalidation later than 50 ms.
	modes := map[string]struct {
		opts   Options
		delta  time.Duration
		batch  bool // one Client's two goroutines read with MGetOrLoad
		refuse bool // Redis refuses CLIENT TRACKING
	}{
		"noL1/strict/negative": {Options{Encryption: encConfig(""), FleetSingleFlight: true, NegativeTTL: time.Minute}, 0, true, false},
		"l1+invalidation/delta/negative": {Options{L1MaxBytes: 1 << 20, Encryption: encConfig(""), Invalidation: &Invalidation{},
			FleetSingleFlight: true, NegativeTTL: time.Minute}, linearizabilityDelta, false, false},
		"noL1/strict/batch":     {Options{Encryption: encConfig(""), FleetSingleFlight: true}, 0, true, false},
		"noL1/strict":           {Options{Encryption: encConfig(""), FleetSingleFlight: true}, 0, false, false},
		"l1+invalidation/delta": {Options{L1MaxBytes: 1 << 20, Encryption: encConfig(""), Invalidation: &Invalidation{}, FleetSingleFlight: true}, linearizabilityDelta, false, false},
		"l1+fallback/delta": {Options{L1MaxBytes: 1 << 20, Encryption: encConfig(""), FleetSingleFlight: true, Logger: slog.New(slog.DiscardHandler),
			Invalidation: &Invalidation{FallbackL1Lifetime: linearizabilityDelta / 2}}, linearizabilityDelta, false, true},
	}
	for name, m := range modes {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv, raw := withRedis(t)
			if m.refuse {
				refuseTracking(t, srv.Addr(), false)
			}
			var clients []cacheaside.Cache
			var negativeHits func() uint64
			for i := range 3 {
				o := m.opts
				o.Redis = raw
				c := asideClient{newClient(t, o)}
				if prev := negativeHits; prev != nil {
					negativeHits = func() uint64 { return prev() + c.c.Stats().NegativeHits }
				} else {
					negativeHits = func() uint64 { return c.c.Stats().NegativeHits }
				}
				if m.batch && i == 0 {
					clients = append(clients, c, asideBatch{c}) // the same Client, both ways
					continue
				}
				clients = append(clients, c)
			}
			cfg := cacheaside.Config{
				Clients: clients,
				Foreign: func(ctx context.Context, key string) error { return raw.Del(ctx, key).Err() },
				Delta:   m.delta,
				Seed:    1,
			}
			if m.opts.NegativeTTL > 0 {
				cfg.NotFound = ErrNotFound
			}
			if m.delta > 0 {
				// Histories of about 100 ms, twice the bound they test;
				// strict modes run back to back, for the most overlap.
				cfg.Pace = 10 * time.Millisecond
			}
			start := time.Now()
			res, err := cacheaside.Run(bg, cfg, 100)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d histories, %d operations in %v: %d not linearizable, %d undecided, %d errors; %d negative hits",
				res.Histories, res.Operations, time.Since(start).Round(time.Millisecond), res.Failed, res.Unknown, res.Errors, negativeHits())
			if res.Failed != 0 || res.Unknown != 0 || res.Errors != 0 {
				t.Fatal("the history check failed")
			}
			if m.opts.NegativeTTL > 0 && negativeHits() == 0 {
				t.Fatal("no read was a negative hit: absence went untested")
			}
		})
	}
}
