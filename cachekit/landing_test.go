package cachekit

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// MGetOrLoad replaces an entry it cannot open: it plants a lease over
// exactly those bytes and stores the loaded value, so the next call is a
// hit. It reloaded on every call and stored nothing.
func TestMGetOrLoadReplacesUnopenableEntry(t *testing.T) {
	t.Parallel()
	c, raw := redisClient(t, Options{Encryption: encConfig(""), L1MaxBytes: 1 << 20})
	for _, k := range []string{"bad", "good"} {
		mustSet(t, c, k, "old-"+k)
	}
	if err := raw.Set(bg, c.fullKey("bad"), "tampered bytes, not an entry", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	c.FlushLocal()
	var loads atomic.Int32
	loader := func(_ context.Context, keys []string) (map[string]string, error) {
		loads.Add(1)
		out := map[string]string{}
		for _, k := range keys {
			out[k] = "loaded-" + k
		}
		return out, nil
	}
	for i := range 2 {
		got, err := MGetOrLoad(bg, c, []string{"bad", "good"}, loader)
		if err != nil || got["bad"] != "loaded-bad" || got["good"] != "old-good" {
			t.Fatalf("call %d: %v, %v", i+1, got, err)
		}
	}
	if n := loads.Load(); n != 1 {
		t.Fatalf("%d loads over two calls, want 1: the unopenable entry was not replaced", n)
	}
	c.FlushLocal()
	if v, err := Get[string](bg, c, "bad"); err != nil || v != "loaded-bad" {
		t.Fatalf("Redis holds %q, %v", v, err)
	}
}

// LoadTimeout ending a load reaches a caller without a deadline as the
// Client's own timeout (ErrTimeout), not as a bare
// context.DeadlineExceeded, which says the caller's deadline passed.
func TestLoadTimeoutIsErrTimeout(t *testing.T) {
	t.Parallel()
	c := newClient(t, Options{L1MaxBytes: 1 << 20, LoadTimeout: 50 * time.Millisecond})
	_, err := GetOrLoad(bg, c, "k", func(ctx context.Context) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	})
	if !errors.Is(err, ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("GetOrLoad past LoadTimeout = %v, want ErrTimeout (and not context.DeadlineExceeded)", err)
	}
}
