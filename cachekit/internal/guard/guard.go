package guard

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/ctxwait"
	"github.com/cachekit-io/cachekit-go/l2"
)

// ErrCircuitOpen is the cause inside an *l2.BackendError when the circuit
// breaker refused a Redis call without sending it.
var ErrCircuitOpen = errors.New("cachekit: circuit breaker open")

// ErrOverloaded is the cause inside an *l2.BackendError when a Redis call
// could not get one of the MaxInFlight slots within MaxWait.
var ErrOverloaded = errors.New("cachekit: too many redis operations in flight")

// Config is the reliability stack's settings; cachekit.Reliability
// documents each field. A zero field takes its default (WithDefaults). It
// has Reliability's fields, in its order, so cachekit converts one into the
// other (guard.Config(r)); a field added to one and not the other fails
// that conversion at compile time.
type Config struct {
	FailOpen              bool
	MaxAttempts           int
	RetryBaseDelay        time.Duration
	RetryMaxDelay         time.Duration
	OperationTimeout      time.Duration
	AttemptTimeout        time.Duration
	BreakerThreshold      int
	BreakerProbeInterval  time.Duration
	BreakerOpenFor        time.Duration
	BreakerHalfOpenProbes int
	DisableBreaker        bool
	MaxInFlight           int
	MaxWait               time.Duration
}

// Validate reports a negative count or duration, the only values no
// default replaces.
func (c Config) Validate() error {
	switch {
	case c.MaxAttempts < 0, c.BreakerThreshold < 0, c.BreakerHalfOpenProbes < 0, c.MaxInFlight < 0:
		return errors.New("counts must not be negative")
	case c.RetryBaseDelay < 0, c.RetryMaxDelay < 0, c.AttemptTimeout < 0, c.OperationTimeout < 0,
		c.BreakerOpenFor < 0, c.BreakerProbeInterval < 0, c.MaxWait < 0:
		return errors.New("durations must not be negative")
	}
	return nil
}

// The defaults of Config's fields (the spec leaves the numbers to each SDK).
const (
	DefaultMaxAttempts      = 3
	DefaultRetryBaseDelay   = 10 * time.Millisecond
	DefaultRetryMaxDelay    = 200 * time.Millisecond
	DefaultBreakerThreshold = 5
	DefaultBreakerOpenFor   = 5 * time.Second
	DefaultBreakerProbe     = 250 * time.Millisecond
	DefaultOperationTimeout = 400 * time.Millisecond
	DefaultAttemptTimeout   = 200 * time.Millisecond
	DefaultBreakerProbes    = 1
	DefaultMaxInFlight      = 256
	DefaultMaxWait          = 100 * time.Millisecond
)

// WithDefaults returns a copy of c with every zero field set to its
// default.
func (c Config) WithDefaults() Config {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defD := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.MaxAttempts, DefaultMaxAttempts)
	def(&c.BreakerThreshold, DefaultBreakerThreshold)
	def(&c.BreakerHalfOpenProbes, DefaultBreakerProbes)
	def(&c.MaxInFlight, DefaultMaxInFlight)
	defD(&c.RetryBaseDelay, DefaultRetryBaseDelay)
	defD(&c.RetryMaxDelay, DefaultRetryMaxDelay)
	defD(&c.BreakerOpenFor, DefaultBreakerOpenFor)
	defD(&c.BreakerProbeInterval, DefaultBreakerProbe)
	defD(&c.OperationTimeout, DefaultOperationTimeout)
	defD(&c.AttemptTimeout, DefaultAttemptTimeout)
	defD(&c.MaxWait, DefaultMaxWait)
	return c
}

// Hooks is what a Guard needs from its owner. Every field may be nil.
type Hooks struct {
	// Now is the breaker's clock; nil means time.Now.
	Now func() time.Time
	// Ping reaches Redis outside the stack: the prober sends it while the
	// breaker is open. Background ends the prober (the owner's Close).
	// Without both, an open breaker closes only through probes and
	// Answered.
	Ping       func(context.Context) error
	Background context.Context
	// Retry hears each retried attempt.
	Retry func(ctx context.Context)
	// Refuse hears each call the open breaker refused.
	Refuse func(ctx context.Context)
	// Transient hears every transient failure (a cluster re-reads its
	// slot map).
	Transient func()
	// Transition hears every breaker state change, in order, under the
	// breaker's lock: it must not call back into the Guard.
	Transition func(from, to State, openedAt time.Time)
}

// Guard runs Redis calls under the reliability stack. A nil *Guard runs
// each call once, bounded by DefaultAttemptTimeout and a write's transfer
// allowance (reliability off: the first error propagates).
type Guard struct {
	cfg     Config
	hooks   Hooks
	br      *breaker // nil when disabled
	slots   chan struct{}
	retries atomic.Uint64
	shed    atomic.Uint64
	refused atomic.Uint64

	mu      sync.Mutex // guards probing and stopped; wg.Add happens under it
	probing bool
	stopped bool
	wg      sync.WaitGroup
}

// New returns a Guard for cfg (defaults applied) and h.
func New(cfg Config, h Hooks) *Guard {
	cfg = cfg.WithDefaults()
	if h.Now == nil {
		h.Now = time.Now
	}
	g := &Guard{cfg: cfg, hooks: h, slots: make(chan struct{}, cfg.MaxInFlight)}
	if !cfg.DisableBreaker {
		g.br = &breaker{threshold: cfg.BreakerThreshold, openFor: cfg.BreakerOpenFor,
			probes: cfg.BreakerHalfOpenProbes, now: h.Now, onChange: h.Transition}
	}
	return g
}

// FailOpen reports whether Redis failures may be degraded (Config.FailOpen);
// false for a nil Guard.
func (g *Guard) FailOpen() bool { return g != nil && g.cfg.FailOpen }

// Retries reports whether the Guard retries failed calls.
func (g *Guard) Retries() bool { return g != nil && g.cfg.MaxAttempts > 1 }

// AttemptTimeout is the bound of one attempt: Config.AttemptTimeout, or
// DefaultAttemptTimeout for a nil Guard.
func (g *Guard) AttemptTimeout() time.Duration {
	if g == nil {
		return DefaultAttemptTimeout
	}
	return g.cfg.AttemptTimeout
}

// Do runs fn, a Redis call named op, with backpressure, the breaker and
// retries, all within OperationTimeout (or ctx's deadline, if sooner).
// fn's error is returned as is (after the last attempt), except that a
// timeout says whose deadline ended it (see Settle); refusals are
// *l2.BackendError values with ErrCircuitOpen or ErrOverloaded inside.
func (g *Guard) Do(ctx context.Context, op string, fn func(context.Context) error) error {
	return g.DoSized(ctx, op, 0, fn)
}

// DoSized is Do for an operation that sends n bytes: its budget and each
// attempt's grow by TransferTime(n), so a large write is not cut off by
// deadlines sized for small values. The caller's deadline still applies.
//
// A write whose outcome is unknown (its error matches
// l2.ErrOutcomeUnknown) is not resent: its first attempt may have landed,
// and a second one could land again after another process's write. Only
// what provably was not sent (a refused dial, a write held at a fence) is
// retried.
func (g *Guard) DoSized(ctx context.Context, op string, n int, fn func(context.Context) error) error {
	if g == nil {
		return Bare(ctx, op, n, 0, fn)
	}
	return g.run(ctx, op, n, false, func(ctx context.Context, _ bool) error { return fn(ctx) })
}

// DoResend is DoSized for a conditional write whose own landing destroys
// its condition (a lease's fill replaces the lease, a compare-and-set the
// compared bytes, a SET NX the absence): one whose outcome is unknown may
// be resent, since the resend cannot land over its first attempt or over
// a later write. fn's resend is true on an attempt that follows one whose
// outcome is unknown: the write then tells "my first attempt stored it"
// from "stored by nobody" (its own unique bytes found in the key) or
// answers l2.ErrOutcomeUnknown. Whatever a later attempt saw, the error
// of a call any of whose attempts may have reached Redis matches
// l2.ErrOutcomeUnknown.
func (g *Guard) DoResend(ctx context.Context, op string, n int, fn func(ctx context.Context, resend bool) error) error {
	if g == nil {
		return Bare(ctx, op, n, 0, func(ctx context.Context) error { return fn(ctx, false) })
	}
	return g.run(ctx, op, n, true, fn)
}

// run is DoSized and DoResend: resendable says whether an attempt whose
// outcome is unknown may be followed by another.
func (g *Guard) run(ctx context.Context, op string, n int, resendable bool, fn func(context.Context, bool) error) error {
	extra := TransferTime(n)
	deadline := time.Now().Add(g.cfg.OperationTimeout + extra)
	callerDL, hasCallerDL := ctx.Deadline()
	if hasCallerDL && callerDL.Before(deadline) {
		deadline = callerDL
	}
	// The caller gave up (or its deadline, which the socket deadline
	// mirrors, passed): the outcome says nothing about Redis.
	gaveUp := func() bool {
		return ctx.Err() != nil || hasCallerDL && !time.Now().Before(callerDL)
	}
	if g.br != nil && g.br.refusing() {
		return g.refuse(ctx, op)
	}
	if err := g.acquire(ctx, op, deadline); err != nil {
		return err
	}
	defer func() { <-g.slots }()
	delay := g.cfg.RetryBaseDelay
	unknown := false // an attempt so far may have reached Redis unanswered
	settle := func(err error) error {
		err = Settle(ctx, op, err)
		if err != nil && unknown && !errors.Is(err, l2.ErrOutcomeUnknown) {
			err = l2.OutcomeUnknown(op, err)
		}
		return err
	}
	for attempt := 1; ; attempt++ {
		probe := false
		if g.br != nil {
			var ok bool
			if ok, probe = g.br.allow(); !ok {
				return settle(g.refuse(ctx, op)) // after a lost attempt, still unknown
			}
		}
		resend := unknown
		err := g.attempt(ctx, func(ctx context.Context) error { return fn(ctx, resend) }, deadline, extra)
		lost := errors.Is(err, l2.ErrOutcomeUnknown)
		unknown = unknown || lost
		transient := err != nil && l2.IsTransient(err)
		if transient && g.hooks.Transient != nil {
			g.hooks.Transient()
		}
		if g.br != nil {
			o := outcomeSuccess
			switch {
			case gaveUp():
				o = outcomeNeutral
			case transient && !l2.Migrating(err):
				o = outcomeFailure
			}
			if g.br.record(probe, o) {
				g.startProber()
			}
		}
		if !transient || attempt >= g.cfg.MaxAttempts || gaveUp() || lost && !resendable {
			return settle(err)
		}
		wait := delay/2 + rand.N(delay/2+1)
		if time.Until(deadline) <= wait || !ctxwait.Sleep(ctx, wait) {
			return settle(err)
		}
		delay = min(delay*2, g.cfg.RetryMaxDelay)
		g.retries.Add(1)
		if g.hooks.Retry != nil {
			g.hooks.Retry(ctx)
		}
	}
}

// refuse counts a call the open breaker refused and returns its error.
func (g *Guard) refuse(ctx context.Context, op string) error {
	g.refused.Add(1)
	if g.hooks.Refuse != nil {
		g.hooks.Refuse(ctx)
	}
	return &l2.BackendError{Op: op, Err: ErrCircuitOpen}
}

// attempt runs fn once, bounded by AttemptTimeout (plus extra, the
// transfer time of what it sends) and the operation's deadline.
func (g *Guard) attempt(ctx context.Context, fn func(context.Context) error, deadline time.Time, extra time.Duration) error {
	if d := time.Now().Add(g.cfg.AttemptTimeout + extra); d.Before(deadline) {
		deadline = d
	}
	actx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	return fn(actx)
}

// acquire takes an in-flight slot, waiting at most MaxWait and never past
// the operation's deadline.
func (g *Guard) acquire(ctx context.Context, op string, deadline time.Time) error {
	select {
	case g.slots <- struct{}{}:
		return nil
	default:
	}
	t := time.NewTimer(min(g.cfg.MaxWait, time.Until(deadline)))
	defer t.Stop()
	select {
	case g.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return &l2.BackendError{Op: op, Err: ctx.Err()}
	case <-t.C:
		if err := ctx.Err(); err != nil {
			return &l2.BackendError{Op: op, Err: err} // the caller's deadline, not overload
		}
		g.shed.Add(1)
		return &l2.BackendError{Op: op, Err: ErrOverloaded}
	}
}

// Answered is evidence that Redis answers (a PING succeeded, tracking
// reconnected): an open or half-open breaker closes at once.
func (g *Guard) Answered() {
	if g != nil && g.br != nil {
		g.br.answered()
	}
}

// startProber starts the background PING that closes an open breaker as
// soon as Redis answers, unless one runs already or the Guard is stopped.
func (g *Guard) startProber() {
	if g.hooks.Ping == nil || g.hooks.Background == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.probing || g.stopped {
		return
	}
	g.probing = true
	g.wg.Add(1)
	go g.probe()
}

// probe PINGs Redis every BreakerProbeInterval while the breaker is not
// closed; the first answer closes it.
func (g *Guard) probe() {
	defer g.wg.Done()
	bg := g.hooks.Background
	ctxwait.Every(bg, g.cfg.BreakerProbeInterval, func() bool {
		if !g.br.isClosed() {
			ctx, cancel := context.WithTimeout(bg, g.cfg.AttemptTimeout)
			err := g.hooks.Ping(ctx)
			cancel()
			if bg.Err() != nil {
				return false // closing: a cut-off PING says nothing
			}
			if l2.Answered(err) {
				g.br.answered()
			}
		}
		// Stop once closed; the check and the flag change together, so a
		// trip after this point starts a new prober.
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.br.isClosed() {
			g.probing = false
			return false
		}
		return true
	})
}

// Stop ends the prober and waits for it. Hooks.Background must be
// cancelled first. A nil Guard's Stop does nothing.
func (g *Guard) Stop() {
	if g == nil {
		return
	}
	g.mu.Lock()
	g.stopped = true
	g.mu.Unlock()
	g.wg.Wait()
}

// Stats is a snapshot of a Guard's counters.
type Stats struct {
	// Breaker is the breaker's state now (Closed when disabled).
	Breaker State
	// Opened counts transitions to open.
	Opened uint64
	// Retries counts retried attempts; Refused counts calls the open
	// breaker refused; Shed counts calls refused by backpressure.
	Retries, Refused, Shed uint64
}

// Stats returns the Guard's counters; the zero value for a nil Guard.
func (g *Guard) Stats() Stats {
	if g == nil {
		return Stats{}
	}
	st := Stats{Retries: g.retries.Load(), Refused: g.refused.Load(), Shed: g.shed.Load()}
	if g.br != nil {
		st.Breaker, st.Opened = g.br.snapshot()
	}
	return st
}
