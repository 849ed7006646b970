package ctxwait

import (
	"context"
	"sync"
	"time"
)

// Sleep waits d or until ctx ends; it reports whether d elapsed.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Every calls fn every d until ctx ends or fn returns false (the first
// call comes d after Every is called).
func Every(ctx context.Context, d time.Duration, fn func() bool) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !fn() {
			return
		}
	}
}

// Repeater calls a function periodically in its own goroutine until it is
// stopped (Go, Stop).
type Repeater struct {
	end    context.CancelFunc
	unlink func() bool
	done   chan struct{}
	once   sync.Once
}

// Go starts a Repeater that calls fn every d (the first call d after Go)
// with a ctx that keeps ctx's values but not its cancellation, and ends
// when the Repeater is stopped or bg ends.
func Go(ctx, bg context.Context, d time.Duration, fn func(context.Context)) *Repeater {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &Repeater{end: cancel, unlink: context.AfterFunc(bg, cancel), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		Every(rctx, d, func() bool { fn(rctx); return true })
	}()
	return r
}

// Stop ends r and waits for its goroutine (a call of fn in progress
// returns first); a nil r and a second Stop do nothing.
func (r *Repeater) Stop() {
	if r == nil {
		return
	}
	r.once.Do(func() {
		r.unlink()
		r.end()
		<-r.done
	})
}
