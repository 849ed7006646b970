package testwait

import (
	"testing"
	"time"
)

// Backoff bounds of the polling: the first re-check comes soon (most
// conditions hold within a millisecond or two of being awaited) and the
// interval doubles up to maxPause, so a slow condition costs at most that
// much latency and a long wait does not spin.
const (
	firstPause = 500 * time.Microsecond
	maxPause   = 10 * time.Millisecond
)

// Until reports whether cond held within limit. It calls cond at once and
// then again after a short pause that doubles each time (from 0.5 ms up to
// 10 ms), until cond returns true or limit has passed. cond runs on the
// caller's goroutine.
func Until(limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for pause := firstPause; !cond(); pause = min(2*pause, maxPause) {
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		// The only sleep of the polling: nothing signals the state cond
		// reads, so it is checked again after a pause.
		time.Sleep(min(pause, left))
	}
	return true
}

// For waits like Until and fails tb (Fatalf, so from the test's goroutine
// only) when cond has not held within limit; what says what was awaited,
// for the failure message.
func For(tb testing.TB, limit time.Duration, cond func() bool, what string) {
	tb.Helper()
	if !Until(limit, cond) {
		tb.Fatalf("%s: not within %v", what, limit)
	}
}
