package guard

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// State is the state of the circuit breaker in front of Redis.
type State int

// The breaker's states. Closed lets every call through; Open refuses calls
// without touching Redis until Redis is seen answering again (the
// background PING, or the owner's Answered) or BreakerOpenFor has passed;
// HalfOpen lets a few probe calls through, and their outcome closes or
// reopens it.
const (
	Closed State = iota
	Open
	HalfOpen
)

// String returns "closed", "open" or "half-open".
func (s State) String() string {
	switch s {
	case Open:
		return "open"
	case HalfOpen:
		return "half-open"
	default:
		return "closed"
	}
}

// breaker is a consecutive-failure circuit breaker. Only transient backend
// failures count against it; a reachable Redis that answers with an error
// counts as a success.
type breaker struct {
	threshold int
	openFor   time.Duration
	probes    int
	now       func() time.Time
	// onChange hears every transition, in order, under mu: it must not
	// call back into the breaker. nil: nobody listens.
	onChange func(from, to State, openedAt time.Time)

	mu       sync.Mutex
	state    State
	failures int       // consecutive failures while closed
	openedAt time.Time // when the breaker last opened
	inProbe  int       // probe calls in flight while half-open
	opened   uint64    // times the breaker opened
}

// allow reports whether a call may go to Redis, and whether it is a
// half-open probe whose outcome decides the breaker's next state.
func (b *breaker) allow() (ok, probe bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case Closed:
		return true, false
	case Open:
		if b.now().Sub(b.openedAt) < b.openFor {
			return false, false
		}
		b.set(HalfOpen)
		b.inProbe = 0
	}
	if b.inProbe >= b.probes {
		return false, false
	}
	b.inProbe++
	return true, true
}

// outcome of one call as the breaker sees it.
type outcome int

const (
	outcomeSuccess outcome = iota
	outcomeFailure
	outcomeNeutral // the caller gave up (its ctx ended): says nothing about Redis
)

// record reports the outcome of a call that allow let through. It reports
// whether this call opened the breaker.
func (b *breaker) record(probe bool, o outcome) (tripped bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if probe {
		if b.state != HalfOpen {
			return false // another probe or the health check already decided
		}
		b.inProbe--
		switch o {
		case outcomeSuccess:
			b.close()
		case outcomeFailure:
			b.trip()
			return true
		}
		return false
	}
	switch o {
	case outcomeSuccess:
		if b.state == Closed {
			b.failures = 0
		}
	case outcomeFailure:
		if b.state != Closed {
			return false
		}
		b.failures++
		if b.failures >= b.threshold {
			b.trip()
			return true
		}
	}
	return false
}

// refusing reports, without changing anything, whether allow would refuse
// every call now (open, its wait not over): such calls fail before they
// wait for an in-flight slot.
func (b *breaker) refusing() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state == Open && b.now().Sub(b.openedAt) < b.openFor
}

// answered is evidence that Redis answers (a PING succeeded, tracking
// reconnected): an open or half-open breaker closes at once.
func (b *breaker) answered() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state != Closed {
		b.close()
	}
}

// isClosed reports whether the breaker lets every call through.
func (b *breaker) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state == Closed
}

// trip opens the breaker. The caller holds mu.
func (b *breaker) trip() {
	b.openedAt = b.now()
	b.set(Open)
	b.failures = 0
	b.inProbe = 0
	b.opened++
}

// close closes the breaker. The caller holds mu.
func (b *breaker) close() {
	b.set(Closed)
	b.failures = 0
	b.inProbe = 0
}

// set changes the state and reports the transition. The caller holds mu.
func (b *breaker) set(to State) {
	from := b.state
	b.state = to
	if from != to && b.onChange != nil {
		b.onChange(from, to, b.openedAt)
	}
}

// snapshot returns the state (an open breaker whose wait is over reads as
// half-open) and how many times it opened.
func (b *breaker) snapshot() (State, uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.state
	if st == Open && b.now().Sub(b.openedAt) >= b.openFor {
		st = HalfOpen
	}
	return st, b.opened
}

// LogTransitions returns a Hooks.Transition that logs each breaker state
// change to log once (never rate-limited: each one matters), with how long
// the breaker was open when it closes by now's clock, and passes the new
// state to count (nil: not counted).
func LogTransitions(log *slog.Logger, now func() time.Time, count func(ctx context.Context, to int)) func(from, to State, openedAt time.Time) {
	return func(from, to State, openedAt time.Time) {
		ctx := context.Background()
		switch to {
		case Open:
			log.LogAttrs(ctx, slog.LevelWarn, "cachekit: circuit breaker opened: redis calls fail at once until redis answers again",
				slog.String("from", from.String()))
		case HalfOpen:
			log.LogAttrs(ctx, slog.LevelInfo, "cachekit: circuit breaker half-open: probing redis with callers' calls")
		case Closed:
			log.LogAttrs(ctx, slog.LevelInfo, "cachekit: circuit breaker closed: redis answers again",
				slog.Duration("open_for", now().Sub(openedAt)))
		}
		if count != nil {
			count(ctx, int(to))
		}
	}
}
