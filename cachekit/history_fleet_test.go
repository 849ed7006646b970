package cachekit

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/testwait"
)

// sourceOfTruth is the database of a cache-aside application: writers
// update it under a per-key lock and then Delete or Set the cache key;
// readers GetOrLoad from it.
type sourceOfTruth struct {
	mu   sync.Mutex
	vals map[string]int
	lock map[string]*sync.Mutex
}

func (s *sourceOfTruth) read(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.vals[key]
}

func (s *sourceOfTruth) writer(key string) *sync.Mutex {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lock[key] == nil {
		s.lock[key] = new(sync.Mutex)
	}
	return s.lock[key]
}

func (s *sourceOfTruth) bump(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.vals[key]++
	return s.vals[key]
}

// A randomized cache-aside history: 3 Clients (the Production preset:
// L1, invalidation, SWR, leases, fleet single-flight) and 8 goroutines
// per round, writers that update the source and then Delete or Set the
// key, readers that GetOrLoad (with a 2 s TTL half the time, so SWR
// refreshes run), 12 rounds. After each round every Client agrees with the
// source on every key within the invalidation bound: no load or refresh
// ever caches a value older than a write.
func TestCacheAsideHistoryAcrossClients(t *testing.T) {
	t.Parallel()
	srv, _ := withRedis(t)
	clients := make([]*Client, 3)
	for i := range clients {
		o := Production()
		o.RedisURL = srv.URL()
		o.Encryption = encConfig("")
		clients[i] = newClient(t, o)
	}
	keys := []string{"a", "b", "c", "d", "e", "f"}
	src := &sourceOfTruth{vals: map[string]int{}, lock: map[string]*sync.Mutex{}}
	rounds, opsPer := 12, 60
	if testing.Short() {
		rounds = 4
	}
	disagreements := 0
	for round := range rounds {
		var wg sync.WaitGroup
		for g := range 8 {
			c := clients[g%len(clients)]
			rng := rand.New(rand.NewPCG(uint64(round), uint64(g)))
			wg.Go(func() {
				for range opsPer {
					key := keys[rng.IntN(len(keys))]
					switch op := rng.IntN(10); {
					case op < 2: // writer
						l := src.writer(key)
						l.Lock()
						v := src.bump(key)
						var err error
						if rng.IntN(2) == 0 {
							err = c.Delete(bg, key)
						} else {
							err = c.Set(bg, key, v)
						}
						l.Unlock()
						if err != nil {
							t.Errorf("write: %v", err)
						}
					default: // reader
						ttl := time.Minute
						if op%2 == 0 {
							ttl = 2 * time.Second
						}
						if _, err := GetOrLoadTTL(bg, c, key, ttl, func(context.Context) (int, error) {
							v := src.read(key)
							// The query's way back: a write may land meanwhile.
							time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
							return v, nil
						}); err != nil {
							t.Errorf("GetOrLoad: %v", err)
						}
					}
				}
			})
		}
		wg.Wait()
		for _, key := range keys {
			want := src.read(key)
			for i, c := range clients {
				agree := func() bool {
					v, err := Get[int](bg, c, key)
					return errors.Is(err, ErrNotFound) || (err == nil && v == want)
				}
				if !testwait.Until(invalidationBound, agree) {
					v, err := Get[int](bg, c, key)
					disagreements++
					t.Errorf("round %d: client %d reads %s = %d, %v; the source holds %d", round, i, key, v, err, want)
				}
			}
		}
	}
	var lost, waits uint64
	for _, c := range clients {
		lost += c.Stats().LeasesLost
		waits += c.Stats().LeaseWaits
	}
	t.Logf("%d rounds: %d disagreements; loads dropped for a newer write %d, waits on another Client's load %d",
		rounds, disagreements, lost, waits)
}
