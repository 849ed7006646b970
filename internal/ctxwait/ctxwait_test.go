package ctxwait

import (
	"context"
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
