package cachekit

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/internal/redistest"
	"github.com/cachekit-io/cachekit-go/internal/seam"
)

// An MGetOrLoad whose lease script finds the key stored meanwhile (another
// Client's Set between its read and its lease) returns that value to the
// callers that joined its flight only when they joined before Redis read
// it. Here the script's reply is held after Redis ran it; meanwhile this
// Client deletes the key (Delete returns) and then a second MGetOrLoad
// joins the flight. The joiner began after the Delete returned, so the
// value the script found is stale for it: it must load again. The nemesis
// run found this (TestNemesis/sigstop, history 48 of seed 5: a Delete
// returned at 14.887 ms, an MGetOrLoad of the same Client began at 14.889
// ms and returned the deleted value). It fails while the flight's "known
// current at" time of a found entry is taken after the script's reply
// (lease.go, acquireAt) instead of before it was sent.
func TestMGetOrLoadJoinerAfterDeleteLoadsAgain(t *testing.T) {
	t.Parallel()
	hb := redistest.NewHoldBefore("lease.acquire", "k").Named(seam.CommandName)
	ha := redistest.NewHold("lease.acquire", "k").Named(seam.CommandName)
	_, raw := withRedis(t)
	// The batch's lease scripts go in one go-redis pipeline: go-redis
	// hooks hold it, before it is sent (hb) and once Redis answered (ha).
	rdb := redis.NewClient(&redis.Options{Addr: raw.Options().Addr, MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	rdb.AddHook(hb)
	rdb.AddHook(ha)
	t.Cleanup(hb.Release)
	t.Cleanup(ha.Release)
	c := newClient(t, Options{Redis: rdb, Encryption: encConfig(""), FleetSingleFlight: true})
	other := newClient(t, Options{RedisURL: "redis://" + raw.Options().Addr, Encryption: encConfig("")})

	load := func(v string) func(context.Context, []string) (map[string]string, error) {
		return func(_ context.Context, keys []string) (map[string]string, error) {
			return map[string]string{"k": v}, nil
		}
	}
	led := async(func() error {
		_, err := MGetOrLoad(bg, c, []string{"k"}, load("leader's load"))
		return err
	})
	<-hb.Held() // the leader missed k and is about to plant its lease
	mustSet(t, other, "k", "old")
	hb.Release()
	<-ha.Held() // Redis ran the lease script: it found "old"
	if err := c.Delete(bg, "k"); err != nil {
		t.Fatal(err)
	}
	type result struct {
		m   map[string]string
		err error
	}
	joined := make(chan result, 1)
	go func() {
		m, err := MGetOrLoad(bg, c, []string{"k"}, load("joiner's load"))
		joined <- result{m, err}
	}()
	waitWithin(t, 5*time.Second, func() bool { return c.flights.Waiting("k") == 2 })
	ha.Release()
	if err := <-led; err != nil {
		t.Fatal(err)
	}
	r := <-joined
	if r.err != nil {
		t.Fatal(r.err)
	}
	if got := r.m["k"]; got != "joiner's load" {
		t.Fatalf("the MGetOrLoad called after Delete returned got %q, want its own load (the deleted value is stale)", got)
	}
}
