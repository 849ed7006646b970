package cachekit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// apiModes: L1 and Redis, Redis only, L1 only.
func apiModes(t *testing.T) map[string]*Client {
	t.Helper()
	_, rdb := withRedis(t)
	return map[string]*Client{
		"l1+redis": newClient(t, Options{Redis: rdb, L1MaxBytes: 1 << 20, Encryption: encConfig(""), KeyPrefix: "a:", DefaultTTL: 90 * time.Second}),
		"redis":    newClient(t, Options{Redis: rdb, Encryption: encConfig(""), KeyPrefix: "b:", DefaultTTL: 90 * time.Second}),
		"l1":       newClient(t, Options{L1MaxBytes: 1 << 20, Encryption: encConfig(""), DefaultTTL: 90 * time.Second}),
	}
}

// near reports whether d is within 2s below want (TTLs count down).
func near(d, want time.Duration) bool { return d <= want && d > want-2*time.Second }

// TestGetOrLoadDefaultAndOverrideTTL: GetOrLoad stores for DefaultTTL,
// GetOrLoadTTL for its ttl, and a loader's OverrideTTL wins over both.
// An explicit TTL wins over the preset default (PRE-2, PRE-48).
func TestGetOrLoadDefaultAndOverrideTTL(t *testing.T) {
	t.Parallel()
	for name, c := range apiModes(t) {
		t.Run(name, func(t *testing.T) {
			v, err := GetOrLoad(bg, c, "d", func(context.Context) (string, error) { return "dv", nil })
			if err != nil || v != "dv" {
				t.Fatalf("GetOrLoad = %q, %v", v, err)
			}
			if _, left, err := GetWithTTL[string](bg, c, "d"); err != nil || !near(left, 90*time.Second) {
				t.Fatalf("after GetOrLoad: TTL %v, %v; want about DefaultTTL (90s)", left, err)
			}
			_, err = GetOrLoadTTL(bg, c, "o", time.Hour, func(ctx context.Context) (string, error) {
				if err := OverrideTTL(ctx, 0); !errors.Is(err, ErrInvalidTTL) {
					t.Errorf("OverrideTTL(0) = %v, want ErrInvalidTTL", err)
				}
				return "ov", OverrideTTL(ctx, 30*time.Second)
			})
			if err != nil {
				t.Fatal(err)
			}
			if v, left, err := GetWithTTL[string](bg, c, "o"); err != nil || v != "ov" || !near(left, 30*time.Second) {
				t.Fatalf("after an OverrideTTL of 30s: %q, TTL %v, %v", v, left, err)
			}
			if err := OverrideTTL(bg, time.Second); err != nil {
				t.Fatalf("OverrideTTL outside a loader = %v, want nil (no effect)", err)
			}
		})
	}
}

// TestLoaderNotFound: a loader's ErrNotFound reaches the caller, nothing is
// cached, and the next call loads again.
func TestLoaderNotFound(t *testing.T) {
	t.Parallel()
	for name, c := range apiModes(t) {
		t.Run(name, func(t *testing.T) {
			var calls atomic.Int32
			load := func(context.Context) (int, error) {
				calls.Add(1)
				return 0, fmt.Errorf("no such user: %w", ErrNotFound)
			}
			for range 2 {
				if _, err := GetOrLoad(bg, c, "missing", load); !errors.Is(err, ErrNotFound) {
					t.Fatalf("GetOrLoad with a not-found loader = %v, want ErrNotFound", err)
				}
			}
			if ok, err := c.Exists(bg, "missing"); ok || err != nil {
				t.Fatalf("a not-found load cached something: %v, %v", ok, err)
			}
			if calls.Load() != 2 {
				t.Fatalf("loader ran %d times for two calls, want 2 (not-found is not cached)", calls.Load())
			}
		})
	}
}

// TestSetIfAbsentAndIfPresent: NX and XX semantics in every mode, the
// value and L1 after each, and one winner among concurrent SetIfAbsents.
func TestSetIfAbsentAndIfPresent(t *testing.T) {
	t.Parallel()
	for name, c := range apiModes(t) {
		t.Run(name, func(t *testing.T) {
			if ok, err := c.SetIfPresent(bg, "k", "x", time.Minute); ok || err != nil {
				t.Fatalf("SetIfPresent of a missing key = %v, %v; want false", ok, err)
			}
			if _, err := Get[string](bg, c, "k"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("a refused SetIfPresent stored something: %v", err)
			}
			if ok, err := c.SetIfAbsent(bg, "k", "first", time.Minute); !ok || err != nil {
				t.Fatalf("SetIfAbsent of a missing key = %v, %v; want true", ok, err)
			}
			if ok, err := c.SetIfAbsent(bg, "k", "second", time.Minute); ok || err != nil {
				t.Fatalf("SetIfAbsent of a present key = %v, %v; want false", ok, err)
			}
			if v, err := Get[string](bg, c, "k"); err != nil || v != "first" {
				t.Fatalf("after a refused SetIfAbsent: %q, %v; want first", v, err)
			}
			if ok, err := c.SetIfPresent(bg, "k", "third", time.Minute); !ok || err != nil {
				t.Fatalf("SetIfPresent of a present key = %v, %v; want true", ok, err)
			}
			if v, err := Get[string](bg, c, "k"); err != nil || v != "third" {
				t.Fatalf("after SetIfPresent: %q, %v; want third", v, err)
			}
			if _, err := c.SetIfAbsent(bg, "k", "x", 0); !errors.Is(err, ErrInvalidTTL) {
				t.Fatalf("SetIfAbsent with ttl 0 = %v, want ErrInvalidTTL", err)
			}

			var wins atomic.Int32
			var wg sync.WaitGroup
			for i := range 16 {
				wg.Go(func() {
					ok, err := c.SetIfAbsent(bg, "race", i, time.Minute)
					if err != nil {
						t.Error(err)
					}
					if ok {
						wins.Add(1)
					}
				})
			}
			wg.Wait()
			if wins.Load() != 1 {
				t.Fatalf("%d concurrent SetIfAbsents stored, want exactly 1", wins.Load())
			}
		})
	}
}

// TestSetIfPresentDropsStaleL1: when Redis no longer holds a key that L1
// still does (another writer deleted it without invalidation), a refused
// SetIfPresent drops the L1 copy.
func TestSetIfPresentDropsStaleL1(t *testing.T) {
	t.Parallel()
	c, rdb := redisClient(t, Options{L1MaxBytes: 1 << 20})
	mustSet(t, c, "k", "v")
	if err := rdb.Del(bg, "k").Err(); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.SetIfPresent(bg, "k", "w", time.Minute); ok || err != nil {
		t.Fatalf("SetIfPresent = %v, %v; want false", ok, err)
	}
	if _, err := Get[string](bg, c, "k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("L1 still serves the key Redis does not hold: %v", err)
	}
}

// TestDeleteManyTouchAndLocal: Delete of several keys, Touch, DeleteLocal
// and FlushLocal.
func TestDeleteManyTouchAndLocal(t *testing.T) {
	t.Parallel()
	for name, c := range apiModes(t) {
		t.Run(name, func(t *testing.T) {
			if err := MSet(bg, c, map[string]int{"a": 1, "b": 2, "c": 3}); err != nil {
				t.Fatal(err)
			}
			if _, left, err := GetWithTTL[int](bg, c, "a"); err != nil || !near(left, 90*time.Second) {
				t.Fatalf("generic MSet: TTL %v, %v; want DefaultTTL", left, err)
			}
			if err := c.Delete(bg, "a", "b", "never-set"); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"a", "b"} {
				if _, err := Get[int](bg, c, k); !errors.Is(err, ErrNotFound) {
					t.Fatalf("%s after Delete: %v", k, err)
				}
			}
			if v, err := Get[int](bg, c, "c"); err != nil || v != 3 {
				t.Fatalf("c after deleting a and b: %d, %v", v, err)
			}

			if err := c.Touch(bg, "c", time.Hour); err != nil {
				t.Fatal(err)
			}
			if _, left, err := GetWithTTL[int](bg, c, "c"); err != nil || !near(left, time.Hour) {
				t.Fatalf("after Touch(1h): TTL %v, %v", left, err)
			}
			if err := c.Touch(bg, "a", time.Hour); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Touch of a deleted key = %v, want ErrNotFound", err)
			}
			if err := c.Touch(bg, "c", -time.Second); !errors.Is(err, ErrInvalidTTL) {
				t.Fatalf("Touch with a negative ttl = %v, want ErrInvalidTTL", err)
			}

			c.DeleteLocal("c")
			c.FlushLocal()
			v, err := Get[int](bg, c, "c")
			if c.l2 == nil {
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("L1-only: c after DeleteLocal = %d, %v; want ErrNotFound", v, err)
				}
				return
			}
			if err != nil || v != 3 {
				t.Fatalf("c after DeleteLocal (Redis still has it) = %d, %v", v, err)
			}
		})
	}
}

// TestDeleteLocalLeavesRedis: DeleteLocal and FlushLocal touch only this
// process's L1: the next read is a Redis hit.
func TestDeleteLocalLeavesRedis(t *testing.T) {
	t.Parallel()
	c, _ := redisClient(t, Options{L1MaxBytes: 1 << 20})
	if err := MSetWithTTL(bg, c, map[string]string{"x": "1", "y": "2"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	before := c.Stats()
	c.DeleteLocal("x")
	for _, k := range []string{"x", "y"} {
		if _, err := Get[string](bg, c, k); err != nil {
			t.Fatal(err)
		}
	}
	if after := c.Stats(); after.L2Hits-before.L2Hits != 1 || after.L1Hits-before.L1Hits != 1 {
		t.Fatalf("after DeleteLocal(x): %d Redis hits and %d L1 hits, want x from Redis and y from L1",
			after.L2Hits-before.L2Hits, after.L1Hits-before.L1Hits)
	}
	before = c.Stats()
	c.FlushLocal()
	for _, k := range []string{"x", "y"} {
		if _, err := Get[string](bg, c, k); err != nil {
			t.Fatal(err)
		}
	}
	if after := c.Stats(); after.L2Hits-before.L2Hits != 2 {
		t.Fatalf("reads after FlushLocal: %d Redis hits, want 2", after.L2Hits-before.L2Hits)
	}
}

// TestTypedComplete: the typed view reaches every generic operation.
func TestTypedComplete(t *testing.T) {
	t.Parallel()
	_, rdb := withRedis(t)
	users := NewTyped[string](newClient(t, Options{Redis: rdb, L1MaxBytes: 1 << 20}))
	if ok, err := users.SetIfAbsent(bg, "u", "ada", time.Minute); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ok, err := users.SetIfPresent(bg, "u", "grace", time.Minute); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if err := users.MSet(bg, map[string]string{"v": "x"}); err != nil {
		t.Fatal(err)
	}
	if err := users.MSetWithTTL(bg, map[string]string{"w": "y"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if ok, err := users.Exists(bg, "u"); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if err := users.Touch(bg, "u", 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if d, err := users.TTL(bg, "u"); err != nil || !near(d, 2*time.Minute) {
		t.Fatal(d, err)
	}
	if v, d, err := users.GetWithTTL(bg, "u"); err != nil || v != "grace" || !near(d, 2*time.Minute) {
		t.Fatal(v, d, err)
	}
	if v, err := users.GetOrLoadTTL(bg, "z", time.Minute, func(context.Context) (string, error) { return "z", nil }); err != nil || v != "z" {
		t.Fatal(v, err)
	}
	if err := users.Delete(bg, "u", "v", "w", "z"); err != nil {
		t.Fatal(err)
	}
	if m, err := users.MGet(bg, []string{"u", "v", "w", "z"}); err != nil || len(m) != 0 {
		t.Fatal(m, err)
	}
}
