package flight

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestWaitersAwait: Await returns when its key is woken (and only then,
// not for another key's wake), at its timeout, or with ctx's error; every
// waiter is removed after.
func TestWaitersAwait(t *testing.T) {
	var w Waiters
	ch := w.Add("k")
	other := w.Add("o")
	w.Wake("o", false)
	done := make(chan error, 1)
	go func() { done <- w.Await(bg, "k", ch, time.Minute) }()
	select {
	case <-done:
		t.Fatal("woken by another key's Wake")
	case <-time.After(20 * time.Millisecond):
	}
	w.Wake("k", false)
	if err := <-done; err != nil {
		t.Fatalf("Await after Wake: %v", err)
	}
	if err := w.Await(bg, "o", other, time.Minute); err != nil { // its wake is pending
		t.Fatal(err)
	}
	if err := w.Await(bg, "t", w.Add("t"), 10*time.Millisecond); err != nil {
		t.Fatalf("timed out Await: %v", err)
	}
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if err := w.Await(ctx, "c", w.Add("c"), time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Await: %v", err)
	}
	all := w.Add("x")
	w.Wake("", true)
	if err := w.Await(bg, "x", all, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := w.n.Load(); n != 0 || len(w.m) != 0 {
		t.Fatalf("%d waiters, %d keys left registered", n, len(w.m))
	}
}

func TestPatience(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		wait, left time.Duration
		woken      bool
		want       time.Duration
	}{
		{FirstPoll, 0, false, FirstPoll},
		{PollMax, 0, true, Recheck},
		{PollMax, 10 * ms, true, 11 * ms},
		{20 * ms, 100 * ms, false, 20 * ms},
		{20 * ms, -1, true, Recheck},
	} {
		if got := Patience(c.wait, c.left, c.woken); got != c.want {
			t.Errorf("Patience(%v, %v, %v) = %v, want %v", c.wait, c.left, c.woken, got, c.want)
		}
	}
}
