package chunked

import (
	"context"
	"fmt"
	"runtime"

	"golang.org/x/sync/semaphore"
)

// Slots bounds how many large jobs (jobs of at least its large size in
// bytes) run at once, so large values cannot occupy every core while small
// work waits. A nil *Slots bounds nothing.
type Slots struct {
	sem   *semaphore.Weighted
	large int
	// Hook, when set (by tests, before use), runs each time a slot is
	// taken, holding it.
	Hook func()
}

// NewSlots returns Slots letting n jobs of at least large bytes run at
// once; n 0 means one fewer than GOMAXPROCS, at least 1, and n negative
// panics (a caller validates its setting first). It returns nil when
// unbounded is set.
func NewSlots(n, large int, unbounded bool) *Slots {
	if unbounded {
		return nil
	}
	if n < 0 {
		panic("chunked: NewSlots with a negative bound")
	}
	if n == 0 {
		n = max(1, runtime.GOMAXPROCS(0)-1)
	}
	return &Slots{sem: semaphore.NewWeighted(int64(n)), large: large}
}

// Enter takes a slot for a job of size bytes when the job is large and s
// bounds large work, waiting at most as long as ctx allows. ready, when not
// nil, runs first (a wait that is not CPU work, done outside a slot so it
// does not serialize), and its error is returned as it is. held says whether
// a slot was taken; Leave(held) gives it back.
func (s *Slots) Enter(ctx context.Context, size int, ready func(context.Context) error) (held bool, err error) {
	if s == nil || size < s.large {
		return false, nil
	}
	if ready != nil {
		if err := ready(ctx); err != nil {
			return false, err
		}
	}
	if err := s.sem.Acquire(ctx, 1); err != nil {
		return false, fmt.Errorf("cachekit: waiting to seal or open a large value: %w", err)
	}
	if s.Hook != nil {
		s.Hook()
	}
	return true, nil
}

// Leave gives back the slot Enter took, if it took one.
func (s *Slots) Leave(held bool) {
	if held {
		s.sem.Release(1)
	}
}
