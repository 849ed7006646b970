package testwait

import (
	"testing"
	"time"
)

func TestUntil(t *testing.T) {
	t.Parallel()
	calls := 0
	if !Until(time.Second, func() bool { calls++; return calls == 3 }) || calls != 3 {
		t.Fatalf("Until stopped after %d calls, want true after 3", calls)
	}
	start := time.Now()
	calls = 0
	if Until(30*time.Millisecond, func() bool { calls++; return false }) {
		t.Fatal("Until reported a condition that never held")
	}
	if took := time.Since(start); took < 30*time.Millisecond {
		t.Fatalf("Until gave up after %v, before its 30ms limit", took)
	}
	if calls < 3 {
		t.Fatalf("cond checked %d times in 30ms, want several", calls)
	}
	if !Until(0, func() bool { return true }) {
		t.Fatal("a condition that holds at once, with no time left, was not reported")
	}
}
