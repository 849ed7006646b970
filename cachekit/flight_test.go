package cachekit

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"
)

// TestCloseCancelsBlockedLoader: a loader blocked on its ctx is cancelled
// by Close, its caller gets an error, and a second after Close no goroutine
// is left (none of the module's, and the process count is back to what it
// was before New).
func TestCloseCancelsBlockedLoader(t *testing.T) {
	// Not parallel: counts the process's goroutines.
	before := runtime.NumGoroutine()
	c, err := New(Options{L1MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	loaderErr := make(chan error, 1)
	callerErr := make(chan error, 1)
	go func() {
		_, err := GetOrLoadTTL(bg, c, "k", time.Minute, func(ctx context.Context) (string, error) {
			close(started)
			<-ctx.Done()
			loaderErr <- ctx.Err()
			return "", ctx.Err()
		})
		callerErr <- err
	}()
	<-started
	noGoroutinesAfterClose(t, c)
	if err := <-loaderErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("loader ctx ended with %v, want context.Canceled", err)
	}
	if err := <-callerErr; err == nil {
		t.Fatal("GetOrLoad returned nil after Close cancelled its loader")
	}
	var n int
	if !within(time.Second, func() bool { n = runtime.NumGoroutine(); return n <= before }) {
		t.Fatalf("%d goroutines a second after Close, %d before New", n, before)
	}
}

// TestAbandonedLoadDoesNotWedgeKey: when every caller of a stuck load gives
// up, the load's ctx is cancelled and the next GetOrLoad of the key runs
// its own loader instead of joining the stuck one, even when the stuck
// loader ignores its ctx.
func TestAbandonedLoadDoesNotWedgeKey(t *testing.T) {
	t.Parallel()
	c := newClient(t, Options{L1MaxBytes: 1 << 20})
	unstick := make(chan struct{})
	defer close(unstick)
	loaderCtx := make(chan context.Context, 1)
	ctx, cancel := context.WithTimeout(bg, 50*time.Millisecond)
	defer cancel()
	_, err := GetOrLoadTTL(ctx, c, "k", time.Minute, func(lctx context.Context) (string, error) {
		loaderCtx <- lctx
		<-unstick // ignores its ctx
		return "stale", nil
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("caller that gave up got %v, want context.DeadlineExceeded", err)
	}
	select {
	case <-(<-loaderCtx).Done():
	case <-time.After(time.Second):
		t.Fatal("abandoned loader's ctx was not cancelled")
	}
	ctx2, cancel2 := context.WithTimeout(bg, time.Second)
	defer cancel2()
	v, err := GetOrLoadTTL(ctx2, c, "k", time.Minute, func(context.Context) (string, error) { return "fresh", nil })
	if err != nil || v != "fresh" {
		t.Fatalf("next GetOrLoad = %q, %v; want its own load", v, err)
	}
}

// TestLoaderIgnoringCtxDoesNotHoldCallers: once LoadTimeout has passed,
// callers without a deadline of their own stop waiting for a loader that
// ignores its ctx, and the key loads afresh.
func TestLoaderIgnoringCtxDoesNotHoldCallers(t *testing.T) {
	t.Parallel()
	c := newClient(t, Options{L1MaxBytes: 1 << 20, LoadTimeout: 50 * time.Millisecond})
	unstick := make(chan struct{})
	defer close(unstick)
	errc := make(chan error, 1)
	go func() {
		_, err := GetOrLoadTTL(bg, c, "k", time.Minute, func(context.Context) (string, error) {
			<-unstick
			return "late", nil
		})
		errc <- err
	}()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrTimeout) {
			t.Fatalf("GetOrLoad = %v, want ErrTimeout (the Client's LoadTimeout) at LoadTimeout", err)
		}
	case <-time.After(time.Second):
		t.Fatal("GetOrLoad still waiting a second after LoadTimeout (50ms) for a loader that ignores its ctx")
	}
	v, err := GetOrLoadTTL(bg, c, "k", time.Minute, func(context.Context) (string, error) { return "fresh", nil })
	if err != nil || v != "fresh" {
		t.Fatalf("next GetOrLoad = %q, %v; want its own load", v, err)
	}
}

// TestLoadGoesOnForRemainingWaiters: one caller giving up does not cancel a
// load another caller still waits for.
func TestLoadGoesOnForRemainingWaiters(t *testing.T) {
	t.Parallel()
	c := newClient(t, Options{L1MaxBytes: 1 << 20})
	release := make(chan struct{})
	started := make(chan struct{})
	load := func(ctx context.Context) (string, error) {
		close(started)
		select {
		case <-release:
			return "v", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	patient := make(chan error, 1)
	go func() {
		v, err := GetOrLoadTTL(bg, c, "k", time.Minute, load)
		if err == nil && v != "v" {
			err = errors.New("wrong value " + v)
		}
		patient <- err
	}()
	<-started
	ctx, cancel := context.WithCancel(bg)
	done := make(chan error, 1)
	go func() {
		_, err := GetOrLoadTTL(ctx, c, "k", time.Minute, load)
		done <- err
	}()
	// The impatient caller joins the flight, then gives up.
	waitWithin(t, time.Second, func() bool { return c.flights.Waiting("k") == 2 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("impatient caller: %v", err)
	}
	close(release)
	if err := <-patient; err != nil {
		t.Fatalf("patient caller: %v", err)
	}
}

// TestLoadTimeoutBoundsLoader: the loader's ctx carries Options.LoadTimeout.
func TestLoadTimeoutBoundsLoader(t *testing.T) {
	t.Parallel()
	c := newClient(t, Options{L1MaxBytes: 1 << 20, LoadTimeout: 50 * time.Millisecond})
	deadline := make(chan bool, 1)
	_, err := GetOrLoadTTL(bg, c, "k", time.Minute, func(ctx context.Context) (string, error) {
		_, ok := ctx.Deadline()
		deadline <- ok
		<-ctx.Done()
		return "", ctx.Err()
	})
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("GetOrLoad = %v, want ErrTimeout: LoadTimeout, not the caller, ended the load", err)
	}
	if !<-deadline {
		t.Fatal("loader ctx had no deadline")
	}
	if _, err := New(Options{L1MaxBytes: 1, LoadTimeout: -1}); !errors.Is(err, ErrConfig) {
		t.Fatalf("negative LoadTimeout: %v, want ErrConfig", err)
	}
}
