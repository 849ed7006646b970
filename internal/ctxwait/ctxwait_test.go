package ctxwait

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

func TestSleep(t *testing.T) {
	if !Sleep(context.Background(), time.Millisecond) {
		t.Fatal("Sleep with a live ctx reported it was cut short")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if Sleep(ctx, time.Hour) || time.Since(start) > time.Second {
		t.Fatal("Sleep did not end with its ctx")
	}
}

// TestEvery calls fn each tick until it returns false, and not after ctx
// ends.
func TestEvery(t *testing.T) {
	calls := 0
	Every(context.Background(), time.Millisecond, func() bool { calls++; return calls < 3 })
	if calls != 3 {
		t.Fatalf("%d calls, want 3 (the third returned false)", calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	Every(ctx, time.Millisecond, func() bool { t.Fatal("called after ctx ended"); return true })
}

// TestRepeater ticks until Stop, never after Stop returned; Stop waits for
// a call in progress; a nil Repeater and a second Stop do nothing; the end
// of bg stops it too.
func TestRepeater(t *testing.T) {
	var calls atomic.Int64
	inCall := make(chan struct{}, 1)
	release := make(chan struct{})
	r := Go(context.Background(), context.Background(), time.Millisecond, func(context.Context) {
		if calls.Add(1) == 3 {
			inCall <- struct{}{}
			<-release
		}
	})
	<-inCall
	stopped := make(chan struct{})
	go func() { r.Stop(); close(stopped) }()
	select {
	case <-stopped:
		t.Fatal("Stop returned while a call was in progress")
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	<-stopped
	n := calls.Load()
	time.Sleep(10 * time.Millisecond)
	if calls.Load() != n {
		t.Fatal("called after Stop returned")
	}
	r.Stop()
	(*Repeater)(nil).Stop()

	bg, cancel := context.WithCancel(context.Background())
	r = Go(context.Background(), bg, time.Millisecond, func(context.Context) {})
	cancel()
	select {
	case <-r.done: // bg's end stopped it, with no Stop
	case <-time.After(5 * time.Second):
		t.Fatal("the end of bg did not stop the Repeater")
	}
}
