package cachekit

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/testenv"
	"github.com/cachekit-io/cachekit-go/internal/testwait"
)

// swrClient returns a Client whose GetOrLoad entries of ttl 2s are due for
// refresh once at most 1.6s (±10%) remain, i.e. after about 0.2-0.56s, and
// the clock it reads: SWR's decisions (and L1's expiry) follow clk, so a
// test makes an entry due with clk.Add(swrDue) instead of waiting for it.
// Redis's own TTLs still run on real time.
func swrClient(t *testing.T, extra func(*Options)) (*Client, *testenv.Clock) {
	_, rdb := withRedis(t)
	clk := testenv.NewClock(time.Now())
	o := Options{Redis: rdb, L1MaxBytes: 1 << 20, Encryption: encConfig(""), SWR: &SWR{Ratio: 0.8}, Clock: clk.Now}
	if extra != nil {
		extra(&o)
	}
	return newClient(t, o), clk
}

const (
	swrTTL = 2 * time.Second
	// swrDue is how far past the write an swrTTL entry is due for refresh
	// whatever its jitter, and still fresh in L1 (1.3 s of 2 s left).
	swrDue = 700 * time.Millisecond
)

func TestSWRServesStaleAndRefreshesInBackground(t *testing.T) {
	t.Parallel()
	c, clk := swrClient(t, nil)
	var version atomic.Int64
	release := make(chan struct{})
	var blocked atomic.Bool
	load := func(context.Context) (int64, error) {
		if blocked.Load() {
			<-release // the refresh waits here until the test lets it go
		}
		return version.Add(1), nil
	}
	if v, err := GetOrLoadTTL(bg, c, "k", swrTTL, load); err != nil || v != 1 {
		t.Fatalf("cold: %d, %v", v, err)
	}
	if v, _ := GetOrLoadTTL(bg, c, "k", swrTTL, load); v != 1 || c.swr.Stats().Started != 0 {
		t.Fatalf("fresh entry refreshed: %d, started %d", v, c.swr.Stats().Started)
	}
	clk.Add(swrDue)
	blocked.Store(true)
	// Due: returned at once (the loader is blocked) and a refresh starts.
	if v, err := GetOrLoadTTL(bg, c, "k", swrTTL, load); err != nil || v != 1 {
		t.Fatalf("stale read: %d, %v", v, err)
	}
	if c.swr.Stats().Started != 1 {
		t.Fatalf("no refresh started: %d", c.swr.Stats().Started)
	}
	// One refresh per key: more reads while it runs start nothing.
	for range 5 {
		if v, _ := GetOrLoadTTL(bg, c, "k", swrTTL, load); v != 1 {
			t.Fatalf("stale read during refresh: %d", v)
		}
	}
	if c.swr.Stats().Started != 1 {
		t.Fatalf("second refresh of one key: %d", c.swr.Stats().Started)
	}
	close(release)
	waitWithin(t, 5*time.Second, func() bool { v, _ := Get[int64](bg, c, "k"); return v == 2 })
	if ttl, err := c.TTL(bg, "k"); err != nil || ttl < time.Second {
		t.Fatalf("refresh did not rewrite L2 with the full TTL: %v, %v", ttl, err)
	}
}

func TestSWRSetDuringRefreshWins(t *testing.T) {
	t.Parallel()
	c, clk := swrClient(t, nil)
	release := make(chan struct{})
	var calls atomic.Int64
	load := func(context.Context) (string, error) {
		if calls.Add(1) > 1 {
			<-release
			return "refreshed", nil
		}
		return "loaded", nil
	}
	if _, err := GetOrLoadTTL(bg, c, "k", swrTTL, load); err != nil {
		t.Fatal(err)
	}
	clk.Add(swrDue)
	if v, _ := GetOrLoadTTL(bg, c, "k", swrTTL, load); v != "loaded" {
		t.Fatalf("stale read: %q", v)
	}
	waitWithin(t, 5*time.Second, func() bool { return calls.Load() == 2 })
	mustSet(t, c, "k", "user")
	close(release)
	waitWithin(t, 5*time.Second, func() bool { return c.swr.Refreshing() == 0 })
	c.swr.Wait()
	if v, err := Get[string](bg, c, "k"); err != nil || v != "user" {
		t.Fatalf("L1 after refresh: %q, %v (the Set must win)", v, err)
	}
	raw := newClient(t, Options{Redis: c.l2.Client(), Encryption: encConfig("")})
	if v, err := Get[string](bg, raw, "k"); err != nil || v != "user" {
		t.Fatalf("L2 after refresh: %q, %v (the Set must win)", v, err)
	}
}

func TestSWRFailedRefreshKeepsStaleAndWarnsWithDigest(t *testing.T) {
	t.Parallel()
	var logBuf bytes.Buffer
	var mu sync.Mutex
	c, clk := swrClient(t, func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(lockedWriter{&mu, &logBuf}, nil))
	})
	var calls atomic.Int64
	load := func(context.Context) (string, error) {
		if calls.Add(1) > 1 {
			return "", errors.New("origin down")
		}
		return "secret-value", nil
	}
	const key = "user:secret-key"
	if _, err := GetOrLoadTTL(bg, c, key, swrTTL, load); err != nil {
		t.Fatal(err)
	}
	clk.Add(swrDue)
	if v, err := GetOrLoadTTL(bg, c, key, swrTTL, load); err != nil || v != "secret-value" {
		t.Fatalf("stale read: %q, %v", v, err)
	}
	waitWithin(t, 5*time.Second, func() bool { return c.swr.Stats().Failed == 1 })
	if v, err := GetOrLoadTTL(bg, c, key, swrTTL, load); err != nil || v != "secret-value" {
		t.Fatalf("after a failed refresh: %q, %v", v, err)
	}
	// The refresh goroutine counts the failure, then logs it: wait for both.
	readLogs := func() string {
		mu.Lock()
		defer mu.Unlock()
		return logBuf.String()
	}
	testwait.Until(5*time.Second, func() bool { return strings.Contains(readLogs(), "SWR refresh failed") })
	logs := readLogs()
	if !strings.Contains(logs, "SWR refresh failed") || !strings.Contains(logs, c.keyDigest(key)) {
		t.Fatalf("no warning naming the key digest: %q", logs)
	}
	if strings.Contains(logs, key) || strings.Contains(logs, "secret-value") {
		t.Fatal("the warning leaks the key or the value")
	}
}

func TestSWRBoundsConcurrentRefreshes(t *testing.T) {
	t.Parallel()
	c, clk := swrClient(t, func(o *Options) { o.SWR.MaxRefreshes = 1 })
	release := make(chan struct{})
	var refreshing atomic.Bool
	load := func(context.Context) (int, error) {
		if refreshing.Load() {
			<-release
		}
		return 1, nil
	}
	for _, k := range []string{"a", "b"} {
		if _, err := GetOrLoadTTL(bg, c, k, swrTTL, load); err != nil {
			t.Fatal(err)
		}
	}
	clk.Add(swrDue)
	refreshing.Store(true)
	for _, k := range []string{"a", "b"} {
		if _, err := GetOrLoadTTL(bg, c, k, swrTTL, load); err != nil {
			t.Fatal(err)
		}
	}
	if s, sk := c.swr.Stats().Started, c.swr.Stats().Skipped; s != 1 || sk != 1 {
		t.Fatalf("MaxRefreshes 1: started %d, skipped %d", s, sk)
	}
	close(release)
}

func TestSWROffWithoutOption(t *testing.T) {
	t.Parallel()
	c, _ := redisClient(t, Options{L1MaxBytes: 1 << 20})
	if c.swr != nil || c.inv != nil || c.rel != nil || c.obs != nil {
		t.Fatal("SWR, invalidation, reliability or metrics on without their option")
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}
