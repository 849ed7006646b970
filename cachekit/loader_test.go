package cachekit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestGetOrLoadRunsLoaderOnceFor100Callers(t *testing.T) {
	t.Parallel()
	c, _ := redisClient(t, Options{L1MaxBytes: 1 << 20, Encryption: encConfig("")})
	var calls atomic.Int32
	release := make(chan struct{})
	loader := func(ctx context.Context) (profile, error) {
		calls.Add(1)
		<-release
		return sampleProfile(), nil
	}
	var wg sync.WaitGroup
	results := make(chan error, 100)
	for range 100 {
		wg.Go(func() {
			p, err := GetOrLoadTTL(bg, c, "user:42", time.Minute, loader)
			if err == nil && p.Name != sampleProfile().Name {
				err = errors.New("wrong value")
			}
			results <- err
		})
	}
	// Let the load end once every caller has joined its flight.
	waitWithin(t, 5*time.Second, func() bool { return c.flights.Waiting("user:42") == 100 })
	close(release)
	wg.Wait()
	close(results)
	for err := range results {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("loader ran %d times, want 1", n)
	}
	// Stored: a later call is a hit without the loader.
	if _, err := GetOrLoadTTL(bg, c, "user:42", time.Minute, func(context.Context) (profile, error) {
		return profile{}, errors.New("loader must not run on a hit")
	}); err != nil {
		t.Fatal(err)
	}
}

func TestGetOrLoadCancelledWaiterDoesNotCancelLoad(t *testing.T) {
	t.Parallel()
	c := newClient(t, Options{L1MaxBytes: 1 << 20})
	release := make(chan struct{})
	var loaderCtxErr atomic.Value
	loader := func(ctx context.Context) (string, error) {
		<-release
		if ctx.Err() != nil {
			loaderCtxErr.Store(ctx.Err())
		}
		return "loaded", nil
	}
	ctx, cancel := context.WithCancel(bg)
	done := make(chan error, 1)
	go func() {
		_, err := GetOrLoadTTL(ctx, c, "k", time.Minute, loader)
		done <- err
	}()
	other := make(chan string, 1)
	waitWithin(t, 5*time.Second, func() bool { return c.flights.Waiting("k") == 1 }) // the load runs
	go func() {
		v, _ := GetOrLoadTTL(bg, c, "k", time.Minute, loader)
		other <- v
	}()
	waitWithin(t, 5*time.Second, func() bool { return c.flights.Waiting("k") == 2 }) // other joined it
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter got %v", err)
	}
	close(release)
	if v := <-other; v != "loaded" {
		t.Fatalf("other waiter got %q", v)
	}
	if e := loaderCtxErr.Load(); e != nil {
		t.Fatalf("loader's context was cancelled: %v", e)
	}
}

func TestGetOrLoadErrorsAreNotCached(t *testing.T) {
	t.Parallel()
	c := newClient(t, Options{L1MaxBytes: 1 << 20})
	boom := errors.New("backend of record down")
	if _, err := GetOrLoadTTL(bg, c, "k", time.Minute, func(context.Context) (int, error) { return 0, boom }); !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
	v, err := GetOrLoadTTL(bg, c, "k", time.Minute, func(context.Context) (int, error) { return 7, nil })
	if err != nil || v != 7 {
		t.Fatalf("after a failed load: %d %v", v, err)
	}
	if st := c.Stats(); st.Loads != 2 || st.LoadErrors != 1 {
		t.Fatalf("stats %+v", st)
	}
	if _, err := GetOrLoadTTL(bg, c, "k", 0, func(context.Context) (int, error) { return 1, nil }); !errors.Is(err, ErrInvalidTTL) {
		t.Fatalf("zero ttl: %v", err)
	}
}

func TestGetOrLoadReplacesTamperedEntry(t *testing.T) {
	t.Parallel()
	c, rdb := redisClient(t, Options{Encryption: encConfig("")})
	if err := rdb.Set(bg, "k", []byte("not a sealed entry at all, just junk"), time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	v, err := GetOrLoadTTL(bg, c, "k", time.Minute, func(context.Context) (string, error) { return "fresh", nil })
	if err != nil || v != "fresh" {
		t.Fatalf("%q %v", v, err)
	}
	if v, err := Get[string](bg, c, "k"); err != nil || v != "fresh" {
		t.Fatalf("after reload: %q %v", v, err)
	}
}
