package flight

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var bg = context.Background()

// TestDoSharesOneRun: callers that ask while a run is in progress join it
// (one run, one leader, every caller gets its result); the next caller
// after it ends starts a new run.
func TestDoSharesOneRun(t *testing.T) {
	var g Group
	var runs, leaders atomic.Int32
	release := make(chan struct{})
	fn := func(context.Context) (any, error) { runs.Add(1); <-release; return "v", nil }
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			v, led, err := Do(&g, bg, bg, time.Minute, "k", fn)
			if led {
				leaders.Add(1)
			}
			if v != "v" || err != nil {
				t.Errorf("Do = %v, %v", v, err)
			}
		})
	}
	for g.Waiting("k") < 8 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	if runs.Load() != 1 || leaders.Load() != 1 {
		t.Fatalf("%d runs, %d leaders; want 1 and 1", runs.Load(), leaders.Load())
	}
	if _, led, _ := Do(&g, bg, bg, time.Minute, "k", func(context.Context) (any, error) { return nil, nil }); !led {
		t.Fatal("the call after the run ended joined it")
	}
}

// TestDoCallerLeaves: a caller whose ctx ends returns its error at once
// while the run goes on for the others; when the last caller leaves, the
// run's ctx ends and the next caller starts afresh.
func TestDoCallerLeaves(t *testing.T) {
	var g Group
	runCtx := make(chan context.Context, 1)
	fn := func(ctx context.Context) (any, error) { runCtx <- ctx; <-ctx.Done(); return nil, ctx.Err() }
	ctx1, cancel1 := context.WithCancel(bg)
	ctx2, cancel2 := context.WithCancel(bg)
	errs := make(chan error, 2)
	go func() { _, _, err := Do(&g, ctx1, bg, time.Minute, "k", fn); errs <- err }()
	rc := <-runCtx
	go func() { _, _, err := Do(&g, ctx2, bg, time.Minute, "k", fn); errs <- err }()
	for g.Waiting("k") < 2 {
		time.Sleep(time.Millisecond)
	}
	cancel1()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Fatalf("first caller: %v", err)
	}
	if rc.Err() != nil {
		t.Fatal("the run ended while a caller still waited")
	}
	cancel2()
	<-errs
	select {
	case <-rc.Done(): // every caller left: the run is cancelled
	case <-time.After(5 * time.Second):
		t.Fatal("the run goes on with no caller left")
	}
	if g.Waiting("k") != 0 {
		t.Fatal("an abandoned run is still joinable")
	}
}

// TestDoTimeoutAndPanic: a run past its timeout ends its callers' wait
// with DeadlineExceeded even if it ignores its ctx; a panic becomes the
// error Panic makes of it.
func TestDoTimeoutAndPanic(t *testing.T) {
	g := Group{Panic: func(r any) error { return errors.New("panicked") }}
	stuck := make(chan struct{})
	defer close(stuck)
	_, _, err := Do(&g, bg, bg, 20*time.Millisecond, "k", func(context.Context) (any, error) { <-stuck; return nil, nil })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("timed-out run: %v", err)
	}
	if _, _, err := Do(&g, bg, bg, time.Minute, "p", func(context.Context) (any, error) { panic("boom") }); err == nil || err.Error() != "panicked" {
		t.Fatalf("panicking run: %v", err)
	}
}

// TestClaim: a batch leads only the keys no run is loading, waits for the
// others' runs, and resolves a key its load did not return with Missing.
func TestClaim(t *testing.T) {
	missing := errors.New("missing")
	g := Group{Missing: missing}
	release := make(chan struct{})
	go Do(&g, bg, bg, time.Minute, "a", func(context.Context) (any, error) { <-release; return "a1", nil })
	for g.Waiting("a") < 1 {
		time.Sleep(time.Millisecond)
	}
	lead, flights, run := g.Claim(bg, bg, time.Minute, []string{"a", "b", "c"})
	if len(lead) != 2 || lead[0] != "b" || lead[1] != "c" {
		t.Fatalf("lead %v; want [b c]", lead)
	}
	go Run(run, func(context.Context) (map[string]string, error) { return map[string]string{"b": "b1"}, nil })
	close(release)
	for i, want := range []any{"a1", "b1", nil} {
		v, _, err := g.Wait(bg, []string{"a", "b", "c"}[i], flights[i], false)
		if v != want || (i == 2) != errors.Is(err, missing) {
			t.Fatalf("key %d: %v, %v", i, v, err)
		}
	}
}
