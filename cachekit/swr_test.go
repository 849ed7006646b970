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
)

// swrClient returns a Client whose GetOrLoad entries of ttl 2s are due for
// refresh once at most 1.6s (±10%) remain, i.e. after about 0.2-0.56s.
func swrClient(t *testing.T, extra func(*Options)) *Client {
	srv, rdb := withRedis(t)
	_ = srv
	o := Options{Redis: rdb, L1MaxBytes: 1 << 20, Encryption: encConfig(""), SWR: &SWR{Ratio: 0.8}}
	if extra != nil {
		extra(&o)
	}
	return newClient(t, o)
}

const swrTTL = 2 * time.Second

func TestSWRServesStaleAndRefreshesInBackground(t *testing.T) {
	c := swrClient(t, nil)
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
	if v, _ := GetOrLoadTTL(bg, c, "k", swrTTL, load); v != 1 || c.swr.started.Load() != 0 {
		t.Fatalf("fresh entry refreshed: %d, started %d", v, c.swr.started.Load())
	}
	time.Sleep(700 * time.Millisecond)
	blocked.Store(true)
	// Due: returned at once (the loader is blocked) and a refresh starts.
	if v, err := GetOrLoadTTL(bg, c, "k", swrTTL, load); err != nil || v != 1 {
		t.Fatalf("stale read: %d, %v", v, err)
	}
	if c.swr.started.Load() != 1 {
		t.Fatalf("no refresh started: %d", c.swr.started.Load())
	}
	// One refresh per key: more reads while it runs start nothing.
	for range 5 {
		if v, _ := GetOrLoadTTL(bg, c, "k", swrTTL, load); v != 1 {
			t.Fatalf("stale read during refresh: %d", v)
		}
	}
	if c.swr.started.Load() != 1 {
		t.Fatalf("second refresh of one key: %d", c.swr.started.Load())
	}
	close(release)
	waitFor(t, func() bool { v, _ := Get[int64](bg, c, "k"); return v == 2 })
	if ttl, err := c.TTL(bg, "k"); err != nil || ttl < time.Second {
		t.Fatalf("refresh did not rewrite L2 with the full TTL: %v, %v", ttl, err)
	}
}

func TestSWRSetDuringRefreshWins(t *testing.T) {
	c := swrClient(t, nil)
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
	time.Sleep(700 * time.Millisecond)
	if v, _ := GetOrLoadTTL(bg, c, "k", swrTTL, load); v != "loaded" {
		t.Fatalf("stale read: %q", v)
	}
	waitFor(t, func() bool { return calls.Load() == 2 })
	if err := c.Set(bg, "k", "user"); err != nil {
		t.Fatal(err)
	}
	close(release)
	waitFor(t, func() bool { c.swr.mu.Lock(); defer c.swr.mu.Unlock(); return len(c.swr.refreshing) == 0 })
	c.swr.wg.Wait()
	if v, err := Get[string](bg, c, "k"); err != nil || v != "user" {
		t.Fatalf("L1 after refresh: %q, %v (the Set must win)", v, err)
	}
	raw := newClient(t, Options{Redis: c.l2.Client(), Encryption: encConfig("")})
	if v, err := Get[string](bg, raw, "k"); err != nil || v != "user" {
		t.Fatalf("L2 after refresh: %q, %v (the Set must win)", v, err)
	}
}

func TestSWRFailedRefreshKeepsStaleAndWarnsWithDigest(t *testing.T) {
	var logBuf bytes.Buffer
	var mu sync.Mutex
	c := swrClient(t, func(o *Options) {
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
	time.Sleep(700 * time.Millisecond)
	if v, err := GetOrLoadTTL(bg, c, key, swrTTL, load); err != nil || v != "secret-value" {
		t.Fatalf("stale read: %q, %v", v, err)
	}
	waitFor(t, func() bool { return c.swr.failed.Load() == 1 })
	if v, err := GetOrLoadTTL(bg, c, key, swrTTL, load); err != nil || v != "secret-value" {
		t.Fatalf("after a failed refresh: %q, %v", v, err)
	}
	// The refresh goroutine counts the failure, then logs it: wait for both.
	readLogs := func() string {
		mu.Lock()
		defer mu.Unlock()
		return logBuf.String()
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(readLogs(), "SWR refresh failed") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	logs := readLogs()
	if !strings.Contains(logs, "SWR refresh failed") || !strings.Contains(logs, c.keyDigest(key)) {
		t.Fatalf("no warning naming the key digest: %q", logs)
	}
	if strings.Contains(logs, key) || strings.Contains(logs, "secret-value") {
		t.Fatal("the warning leaks the key or the value")
	}
}

func TestSWRBoundsConcurrentRefreshes(t *testing.T) {
	c := swrClient(t, func(o *Options) { o.SWR.MaxRefreshes = 1 })
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
	time.Sleep(700 * time.Millisecond)
	refreshing.Store(true)
	for _, k := range []string{"a", "b"} {
		if _, err := GetOrLoadTTL(bg, c, k, swrTTL, load); err != nil {
			t.Fatal(err)
		}
	}
	if s, sk := c.swr.started.Load(), c.swr.skipped.Load(); s != 1 || sk != 1 {
		t.Fatalf("MaxRefreshes 1: started %d, skipped %d", s, sk)
	}
	close(release)
}

func TestSWROffWithoutOption(t *testing.T) {
	_, rdb := withRedis(t)
	c := newClient(t, Options{Redis: rdb, L1MaxBytes: 1 << 20})
	if c.swr != nil || c.inv != nil || c.rel != nil || c.met != nil {
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

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
