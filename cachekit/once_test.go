package cachekit

// A write takes effect once and tells the truth (rule 25), through the
// public API: an unknown outcome is not resent, "stored" goes only to the
// caller whose bytes went in, every connection is fenced on every Redis the
// docs name, or the Client says it is not.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/internal/redistest"
	"github.com/cachekit-io/cachekit-go/internal/testwait"
)

// presetsAsShipped are the presets with Redis, retries as they ship
// (Production and Secure retry: MaxAttempts 3).
func presetsAsShipped(t *testing.T) map[string]Options {
	sec, err := Secure(strings.Repeat("42", 32))
	if err != nil {
		t.Fatal(err)
	}
	return map[string]Options{"Minimal": Minimal(), "Production": Production(), "Secure": sec}
}

// TestUnknownWriteIsNotResent: a Set whose reply is held past the attempt
// timeout has landed; another process reads the value and deletes the key
// before the writer's Set returns. The writer must not write it again
// (before, Production and Secure retried it after the fence: 12 of 12
// deleted keys came back), and its error, when it returns one, matches
// ErrOutcomeUnknown. 12 rounds per preset as shipped.
func TestUnknownWriteIsNotResent(t *testing.T) {
	for name, opts := range presetsAsShipped(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			proxy := redistest.StartProxy(t, srv.Addr())
			opts.RedisURL = proxy.URL()
			opts.Invalidation, opts.SWR = nil, nil
			if opts.Reliability != nil {
				r := *opts.Reliability
				r.DisableBreaker = true // a round's timeouts must not open it for the next
				opts.Reliability = &r
			}
			w := newClient(t, opts)
			ro := opts // another process: the same keys, no L1, straight to Redis
			ro.RedisURL, ro.L1MaxBytes, ro.Reliability = srv.URL(), 0, nil
			reader := newClient(t, ro)
			for round := range 12 {
				key := fmt.Sprintf("k%d", round)
				mustSet(t, w, "warm", "v") // a connection open and greeted
				proxy.DelayReplies(time.Second)
				done := make(chan error, 1)
				go func() {
					ctx, cancel := context.WithTimeout(bg, 2*time.Second)
					defer cancel()
					done <- w.Set(ctx, key, "landed")
				}()
				testwait.For(t, 2*time.Second, func() bool {
					_, err := Get[string](bg, reader, key)
					return err == nil
				}, "the Set to land")
				if err := reader.Delete(bg, key); err != nil {
					t.Fatal(err)
				}
				err := <-done
				proxy.DelayReplies(0)
				if err != nil && !errors.Is(err, ErrOutcomeUnknown) {
					t.Fatalf("round %d: the Set that landed = %v, want nil or ErrOutcomeUnknown", round, err)
				}
				testwait.For(t, 5*time.Second, func() bool { return proxy.Held() == 0 }, "the held replies to go")
				if v, err := Get[string](bg, reader, key); !errors.Is(err, ErrNotFound) {
					t.Fatalf("round %d: another process reads %q, %v after it deleted the key: the writer wrote it again", round, v, err)
				}
			}
		})
	}
}

// TestSetIfAbsentStoredOnce: of two callers that SetIfAbsent the same
// bytes (no encryption: both seal nothing), only the first is told
// "stored", keeps its TTL and holds an L1 copy (before, the second was
// told stored too, 40 of 40). 40 keys per preset.
func TestSetIfAbsentStoredOnce(t *testing.T) {
	eachPresetOnRedis(t, func(t *testing.T, opts Options) {
		a, b := newClient(t, opts), newClient(t, opts)
		for i := range 40 {
			key := fmt.Sprintf("nx%d", i)
			first, err := a.SetIfAbsent(bg, key, "same", time.Hour)
			if err != nil || !first {
				t.Fatalf("the first SetIfAbsent = %v, %v", first, err)
			}
			second, err := b.SetIfAbsent(bg, key, "same", time.Minute)
			if err != nil || second {
				t.Fatalf("key %d: the second SetIfAbsent of the same value = %v, %v; want not stored", i, second, err)
			}
			if left, err := b.TTL(bg, key); err != nil || left < 59*time.Minute {
				t.Fatalf("key %d: TTL %v, %v: the second caller's TTL was applied", i, left, err)
			}
		}
		if st := b.Stats(); st.L1Hits != 0 {
			t.Fatalf("the second caller has L1 hits %d", st.L1Hits)
		}
	})
}

// eachPresetOnRedis runs test in parallel for each preset as shipped, on
// a redis-server of its own (opts.RedisURL set).
func eachPresetOnRedis(t *testing.T, test func(t *testing.T, opts Options)) {
	for name, opts := range presetsAsShipped(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			opts.RedisURL = redistest.Start(t).URL()
			test(t, opts)
		})
	}
}

// TestPingedClientIsFenced: a go-redis client pinged before New (the usual
// start-up check), with and without MinIdleConns, handed over as
// Options.Redis: its connections are fenced too, so the audit's reordered
// write never lands last (before: 10 of 10 did).
func TestPingedClientIsFenced(t *testing.T) {
	for _, minIdle := range []int{0, 4} {
		t.Run(fmt.Sprintf("MinIdleConns=%d", minIdle), func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			proxy := redistest.StartProxy(t, srv.Addr())
			rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr(), MinIdleConns: minIdle, MaxRetries: -1, ContextTimeoutEnabled: true})
			t.Cleanup(func() { _ = rdb.Close() })
			if err := rdb.Ping(bg).Err(); err != nil {
				t.Fatal(err)
			}
			testwait.For(t, 2*time.Second, func() bool { return int(rdb.PoolStats().IdleConns) >= max(1, minIdle) }, "the pre-dialed connections")
			opts := Minimal()
			opts.Redis = rdb
			opts.DisableAutoPipeline = true
			c := newClient(t, opts)
			if st := c.Stats(); st.PreDialed != 0 {
				t.Fatalf("Stats.PreDialed = %d after New", st.PreDialed)
			}
			reorderRounds(t, c, proxy, 10, time.Second)
			if st := c.Stats(); st.Fences < 10 || st.Unfenced != 0 {
				t.Fatalf("Stats %+v: want a fence per round", st)
			}
		})
	}
}

// reorderRounds runs the audit's reordered write rounds times: a Set whose
// request the proxy delays past its 150 ms deadline, then the next Set,
// which must return nil within within; once the delayed bytes have gone,
// Redis holds the next one.
func reorderRounds(t *testing.T, c *Client, proxy *redistest.Proxy, rounds int, within time.Duration) {
	t.Helper()
	for round := range rounds {
		mustSet(t, c, "k", "v0")
		proxy.DelayNext(600 * time.Millisecond)
		ctx, cancel := context.WithTimeout(bg, 150*time.Millisecond)
		err := c.Set(ctx, "k", "old")
		cancel()
		if !errors.Is(err, ErrOutcomeUnknown) {
			t.Fatalf("round %d: the delayed Set = %v, want ErrOutcomeUnknown", round, err)
		}
		ctx, cancel = context.WithTimeout(bg, within)
		err = c.Set(ctx, "k", "new")
		cancel()
		if err != nil {
			t.Fatalf("round %d: the next Set within %v: %v (Stats %+v)", round, within, err, c.Stats())
		}
		testwait.For(t, 5*time.Second, func() bool { return proxy.Held() == 0 }, "the delayed requests to go")
		c.DeleteLocal("k")
		if v, err := Get[string](bg, c, "k"); v != "new" {
			t.Fatalf("round %d: Redis holds %q, %v: the delayed write landed last", round, v, err)
		}
	}
}

// TestFenceOnRedis60Replies: a Client whose Redis answers CLIENT INFO and
// CLIENT LIST ID as Redis 6.0.16 does (a proxy gives the replies) fences
// through CLIENT ID and the whole CLIENT LIST: 10 reordered writes, 0
// older values, the next write served within 1 s each time (before, one
// timeout wedged the Client: every later call waited at the gate).
func TestFenceOnRedis60Replies(t *testing.T) {
	srv := redistest.Start(t)
	proxy := redistest.StartProxy(t, srv.Addr())
	proxy.Answer("-ERR Unknown subcommand or wrong number of arguments for 'info'. Try CLIENT HELP", "client", "info")
	proxy.Answer("-ERR syntax error", "client", "list", "id")
	opts := Minimal()
	opts.RedisURL = proxy.URL()
	c := newClient(t, opts)
	reorderRounds(t, c, proxy, 10, time.Second)
	if st := c.Stats(); st.Fences < 10 || st.Unfenced != 0 {
		t.Fatalf("Stats %+v: want a fence per round", st)
	}
}

// TestFenceRefusedWarnsOnce: against an ACL without +client|kill the
// Client serves the next write within 1 s, counts the connection
// Unfenced (refused), and warns once however many connections fail.
func TestFenceRefusedWarnsOnce(t *testing.T) {
	srv := redistest.Start(t)
	if _, err := redistest.Do(srv.Addr(), "ACL", "SETUSER", "nokill", "on", ">pw", "~*", "&*", "+@all", "-client|kill"); err != nil {
		t.Fatal(err)
	}
	proxy := redistest.StartProxy(t, srv.Addr())
	var logs capture
	opts := Minimal()
	opts.RedisURL = "redis://nokill:pw@" + proxy.Addr() + "/0"
	opts.Logger = logs.logger()
	c := newClient(t, opts)
	for round := range 3 {
		mustSet(t, c, "k", "v0")
		proxy.DelayNext(600 * time.Millisecond)
		ctx, cancel := context.WithTimeout(bg, 150*time.Millisecond)
		_ = c.Set(ctx, "k", "old")
		cancel()
		ctx, cancel = context.WithTimeout(bg, time.Second)
		err := c.Set(ctx, "k", "new")
		cancel()
		if err != nil {
			t.Fatalf("round %d: the next Set within 1 s: %v", round, err)
		}
		testwait.For(t, 5*time.Second, func() bool { return proxy.Held() == 0 }, "the delayed requests to go")
	}
	st := c.Stats()
	if st.Unfenced < 1 || st.UnfencedRefused != st.Unfenced || st.Fences != 0 {
		t.Fatalf("Stats %+v: want the failed connections counted unfenced (refused)", st)
	}
	if n := strings.Count(logs.String(), "could not be fenced"); n != 1 {
		t.Fatalf("%d warnings of an unfenced connection, want 1:\n%s", n, logs.String())
	}
}

// TestConcurrentSetIfAbsentOneWinner: many callers of SetIfAbsent on one
// key at once, sealed or not: exactly one is told stored.
func TestConcurrentSetIfAbsentOneWinner(t *testing.T) {
	eachPresetOnRedis(t, func(t *testing.T, opts Options) {
		clients := []*Client{newClient(t, opts), newClient(t, opts), newClient(t, opts)}
		for round := range 20 {
			key := fmt.Sprintf("race%d", round)
			var wg sync.WaitGroup
			var mu sync.Mutex
			stored := 0
			for i := range 12 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ok, err := clients[i%3].SetIfAbsent(bg, key, "same", time.Minute)
					if err != nil {
						t.Error(err)
					}
					if ok {
						mu.Lock()
						stored++
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if stored != 1 {
				t.Fatalf("round %d: %d callers told stored, want 1", round, stored)
			}
		}
	})
}
