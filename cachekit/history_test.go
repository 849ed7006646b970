package cachekit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A randomized history check over a real Redis: goroutines on one or more
// Clients run mixed operations on a few shared keys. Every value read must
// be one some write produced, and once the writers stop, every Client must
// read every key as Redis holds it: at once for a single Client (the L1
// version guard), within the invalidation bound across Clients.

type history struct {
	written sync.Map // value -> true, recorded before the write is sent
	seq     atomic.Uint64
}

func (h *history) next(tag string) string {
	v := fmt.Sprintf("%s-%d", tag, h.seq.Add(1))
	h.written.Store(v, true)
	return v
}

func (h *history) check(t *testing.T, op, v string, err error) {
	if err != nil && !errors.Is(err, ErrNotFound) {
		t.Errorf("%s: %v", op, err)
		return
	}
	if err == nil {
		if _, ok := h.written.Load(v); !ok {
			t.Errorf("%s returned %q, which no write produced", op, v)
		}
	}
}

// run drives ops random operations on keys through c.
func (h *history) run(t *testing.T, c *Client, keys []string, ops int, r *rand.Rand) {
	for range ops {
		k := keys[r.IntN(len(keys))]
		k2 := keys[r.IntN(len(keys))]
		switch n := r.IntN(100); {
		case n < 30:
			v, err := Get[string](bg, c, k)
			h.check(t, "Get", v, err)
		case n < 50:
			if err := c.Set(bg, k, h.next("set")); err != nil {
				t.Errorf("Set: %v", err)
			}
		case n < 60:
			if err := c.Delete(bg, k); err != nil {
				t.Errorf("Delete: %v", err)
			}
		case n < 75:
			v, err := GetOrLoadTTL(bg, c, k, time.Minute, func(context.Context) (string, error) { return h.next("load"), nil })
			h.check(t, "GetOrLoad", v, err)
		case n < 85:
			if err := c.MSetWithTTL(bg, map[string]any{k: h.next("mset"), k2: h.next("mset")}, time.Minute); err != nil {
				t.Errorf("MSet: %v", err)
			}
		default:
			m, err := MGet[string](bg, c, []string{k, k2})
			if err != nil {
				t.Errorf("MGet: %v", err)
			}
			for _, v := range m {
				h.check(t, "MGet", v, nil)
			}
		}
	}
}

// divergent returns the keys c reads differently from truth (a Client
// without L1 on the same Redis).
func divergent(c, truth *Client, keys []string) []string {
	var out []string
	for _, k := range keys {
		want, werr := Get[string](bg, truth, k)
		got, gerr := Get[string](bg, c, k)
		if got != want || errors.Is(werr, ErrNotFound) != errors.Is(gerr, ErrNotFound) {
			out = append(out, k)
		}
	}
	return out
}

func historyKeys(round, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("h%d:k%d", round, i)
	}
	return keys
}

// 20 rounds of 8 goroutines on each of 2 Clients (encrypted, tracking on)
// writing shared keys: 0 divergent keys after quiescence.
func TestHistoryTwoClients(t *testing.T) {
	t.Parallel()
	srv, _ := withRedis(t)
	opts := Options{RedisURL: srv.URL(), L1MaxBytes: 1 << 20, Encryption: encConfig(""), Invalidation: &Invalidation{}}
	clients := []*Client{newClient(t, opts), newClient(t, opts)}
	truth := newClient(t, Options{RedisURL: srv.URL(), Encryption: encConfig("")})
	h := &history{}
	rounds, ops := 20, 30
	if testing.Short() {
		rounds = 3
	}
	diverged := 0
	for round := range rounds {
		keys := historyKeys(round, 6)
		var wg sync.WaitGroup
		for ci, c := range clients {
			for g := range 8 {
				wg.Go(func() { h.run(t, c, keys, ops, rand.New(rand.NewPCG(uint64(round), uint64(ci*8+g)))) })
			}
		}
		wg.Wait()
		for _, c := range clients {
			// Invalidations may still be in flight: agreement is due
			// within the bound, and a stale L1 entry would last the TTL.
			within(time.Second, func() bool { return len(divergent(c, truth, keys)) == 0 })
			if d := divergent(c, truth, keys); len(d) > 0 {
				diverged += len(d)
				t.Errorf("round %d: %d keys diverge from Redis after 1s of quiescence: %v", round, len(d), d)
			}
		}
	}
	t.Logf("%d rounds × 2 clients × 8 goroutines × %d ops: %d divergent keys", rounds, ops, diverged)
}

// 32 goroutines of mixed operations on one Client, with invalidation off
// (only the L1 version guard keeps it coherent) and on: every key agrees
// with Redis as soon as the goroutines stop.
func TestHistoryOneClient32Goroutines(t *testing.T) {
	t.Parallel()
	for _, inv := range []bool{false, true} {
		t.Run(fmt.Sprintf("invalidation=%v", inv), func(t *testing.T) {
			srv, _ := withRedis(t)
			opts := Options{RedisURL: srv.URL(), L1MaxBytes: 1 << 20, Encryption: encConfig("")}
			if inv {
				opts.Invalidation = &Invalidation{}
			}
			c := newClient(t, opts)
			truth := newClient(t, Options{RedisURL: srv.URL(), Encryption: encConfig("")})
			h := &history{}
			keys := historyKeys(0, 12)
			var wg sync.WaitGroup
			for g := range 32 {
				wg.Go(func() { h.run(t, c, keys, 60, rand.New(rand.NewPCG(7, uint64(g)))) })
			}
			wg.Wait()
			if !inv {
				if d := divergent(c, truth, keys); len(d) > 0 {
					t.Fatalf("%d keys diverge from Redis right after quiescence: %v", len(d), d)
				}
				return
			}
			waitWithin(t, time.Second, func() bool { return len(divergent(c, truth, keys)) == 0 })
		})
	}
}
