package flight

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// The backoff of a caller that looks again and again at a key under
// another's lease.
const (
	// FirstPoll is the wait after the first look.
	FirstPoll = 5 * time.Millisecond
	// PollMax caps the wait between two looks when nothing can wake the
	// waiter; the backoff doubles up to it.
	PollMax = 50 * time.Millisecond
	// Recheck is the wait when the key's invalidation can wake the waiter:
	// a safety net for a message that never comes (a lease that expires is
	// reported when Redis expires it, which its active expiry does within
	// about 100 ms).
	Recheck = 250 * time.Millisecond
)

// Patience is how long a look waits for a wake: wait (the backoff) when
// nothing can wake the waiter, Recheck when the key's invalidation can
// (woken), never past left, the lease's remaining time (when positive).
func Patience(wait, left time.Duration, woken bool) time.Duration {
	if woken {
		wait = Recheck
	}
	if left > 0 {
		wait = min(wait, left+time.Millisecond)
	}
	return wait
}

// Waiters wakes callers waiting for a key to change (a GetOrLoad waiting
// on another Client's lease, woken by the key's invalidation). The zero
// Waiters is ready to use.
type Waiters struct {
	n  atomic.Int32 // waiters registered; Wake skips the lock at 0
	mu sync.Mutex
	m  map[string]map[chan struct{}]struct{}
}

// Add registers a waiter for key and returns the channel that Wake
// signals (at most one pending signal); Remove must follow.
func (w *Waiters) Add(key string) chan struct{} {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	if w.m == nil {
		w.m = make(map[string]map[chan struct{}]struct{})
	}
	set := w.m[key]
	if set == nil {
		set = make(map[chan struct{}]struct{})
		w.m[key] = set
	}
	set[ch] = struct{}{}
	w.n.Add(1) // under mu: a Wake that finds n > 0 finds the waiter too
	w.mu.Unlock()
	return ch
}

// Remove unregisters a waiter Add returned.
func (w *Waiters) Remove(key string, ch chan struct{}) {
	w.mu.Lock()
	if set := w.m[key]; set != nil {
		delete(set, ch)
		if len(set) == 0 {
			delete(w.m, key)
		}
	}
	w.mu.Unlock()
	w.n.Add(-1)
}

// Await waits until the waiter ch of key is woken, d has passed or ctx
// ends (then it returns ctx.Err()), and removes the waiter.
func (w *Waiters) Await(ctx context.Context, key string, ch chan struct{}, d time.Duration) error {
	defer w.Remove(key, ch)
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-ch:
	case <-timer.C:
	}
	return nil
}

// Wake wakes key's waiters; every waiter of every key when all is true.
func (w *Waiters) Wake(key string, all bool) {
	if w.n.Load() == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !all {
		notify(w.m[key])
		return
	}
	for _, set := range w.m {
		notify(set)
	}
}

// notify wakes each waiter of set that is not already woken.
func notify(set map[chan struct{}]struct{}) {
	for ch := range set {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
