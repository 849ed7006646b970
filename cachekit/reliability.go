package cachekit

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/internal/ctxwait"
	"github.com/cachekit-io/cachekit-go/l2"
)

// ErrCircuitOpen is the cause inside a *BackendError when the circuit
// breaker refused a Redis call without sending it.
var ErrCircuitOpen = errors.New("cachekit: circuit breaker open")

// ErrOverloaded is the cause inside a *BackendError when a Redis call could
// not get one of the MaxInFlight slots within MaxWait.
var ErrOverloaded = errors.New("cachekit: too many redis operations in flight")

// Reliability configures the protection the Client puts around Redis calls,
// and only around them: encoding, decryption and decoding are never
// retried, counted by the breaker or degraded. A zero field takes its
// default; Options.Reliability == nil turns the whole stack off.
type Reliability struct {
	// FailOpen degrades Redis failures instead of returning them: a failed
	// Get, GetBytes, AppendValue or GetOrLoad read is a *MissError (it
	// matches both ErrNotFound and *BackendError, and GetOrLoad loads); MGet
	// returns the values it did read (L1's; on a cluster, also those of the
	// nodes that answered) and a *MissError for the rest, and MGetOrLoad
	// loads the rest; a failed write
	// (Set, MSet, a load's store) is absorbed with a rate-limited warning
	// (the value is then in neither tier). Delete, Exists and TTL still
	// return their error. Default: false (fail closed: the *BackendError is returned);
	// the production preset sets true.
	FailOpen bool

	// MaxAttempts is how many times one operation is sent when it fails
	// with a transient error (connection refused or reset, timeout, pool
	// exhausted, LOADING/TRYAGAIN/...). 1 turns retries off. Default: 3.
	MaxAttempts int

	// RetryBaseDelay is the backoff before the first retry; it doubles on
	// each further retry, with jitter (a random wait in [d/2, d]).
	// Default: 10ms.
	RetryBaseDelay time.Duration

	// RetryMaxDelay caps the backoff between retries. Default: 200ms.
	RetryMaxDelay time.Duration

	// OperationTimeout bounds one whole operation: the wait for an
	// in-flight slot, every attempt and the backoff between attempts. The
	// caller's ctx can shorten it, never lengthen it. A retry is not
	// started when the backoff would end past it. Default: 400ms.
	OperationTimeout time.Duration

	// AttemptTimeout bounds each attempt (dial, send, reply), within what is
	// left of OperationTimeout: every Redis call carries a ctx deadline, so
	// a call returns within it even when Redis hangs. A write of n bytes
	// (Set, MSet) gets n at 16 MiB/s on top of both (4 s for 64 MiB). Reads
	// get no allowance: a value must arrive within AttemptTimeout, so raise
	// it (and OperationTimeout) for large values read over slow links
	// (64 MiB needs about half a second on a 1 Gbit/s link). The go-redis
	// client New opens from Options.RedisURL uses it as its dial and
	// pool-wait timeout, and with the allowance for MaxValueBytes as its
	// read and write timeouts (a backstop: the ctx deadline ends a call
	// sooner). With Options.Reliability nil, each call is one attempt
	// bounded by this default and a write's allowance; to read values of
	// several MiB on a slow link or a loaded machine, set Reliability with
	// a larger AttemptTimeout and OperationTimeout (MaxAttempts 1 and
	// DisableBreaker keep it a single attempt). A call the Client's bounds
	// ended returns a *BackendError wrapping ErrTimeout. Default: 200ms.
	AttemptTimeout time.Duration

	// BreakerThreshold is the number of consecutive transient failures that
	// opens the circuit breaker. Default: 5.
	BreakerThreshold int

	// BreakerProbeInterval is how often an open breaker PINGs Redis in the
	// background (each PING bounded by AttemptTimeout). The first answer
	// closes the breaker; so do a successful Client.Ping and tracking
	// reconnecting (Options.Invalidation). Default: 250ms.
	BreakerProbeInterval time.Duration

	// BreakerOpenFor is how long an open breaker refuses every call (with
	// ErrCircuitOpen, in well under a millisecond) before it also lets
	// callers' calls through as probes, should the background PING not
	// have closed it by then. Default: 5s.
	BreakerOpenFor time.Duration

	// BreakerHalfOpenProbes is how many probe calls a half-open breaker
	// lets through at once; the first success closes it, a failure reopens
	// it. Default: 1.
	BreakerHalfOpenProbes int

	// DisableBreaker turns the circuit breaker off (retries, backpressure
	// and degradation stay). Default: false.
	DisableBreaker bool

	// MaxInFlight bounds the Redis operations this Client runs at once.
	// Default: 256.
	MaxInFlight int

	// MaxWait bounds how long an operation waits for a free slot before it
	// fails with ErrOverloaded (never longer than ctx or OperationTimeout
	// allow). Default: 100ms.
	MaxWait time.Duration
}

// Reliability defaults (the spec leaves the numbers to each SDK).
const (
	defaultMaxAttempts      = 3
	defaultRetryBaseDelay   = 10 * time.Millisecond
	defaultRetryMaxDelay    = 200 * time.Millisecond
	defaultBreakerThreshold = 5
	defaultBreakerOpenFor   = 5 * time.Second
	defaultBreakerProbe     = 250 * time.Millisecond
	defaultOperationTimeout = 400 * time.Millisecond
	defaultAttemptTimeout   = 200 * time.Millisecond
	defaultBreakerProbes    = 1
	defaultMaxInFlight      = 256
	defaultMaxWait          = 100 * time.Millisecond
)

func (r *Reliability) validate() error {
	switch {
	case r.MaxAttempts < 0, r.BreakerThreshold < 0, r.BreakerHalfOpenProbes < 0, r.MaxInFlight < 0:
		return configErr("Reliability counts must not be negative")
	case r.RetryBaseDelay < 0, r.RetryMaxDelay < 0, r.AttemptTimeout < 0, r.OperationTimeout < 0,
		r.BreakerOpenFor < 0, r.BreakerProbeInterval < 0, r.MaxWait < 0:
		return configErr("Reliability durations must not be negative")
	}
	return nil
}

// withDefaults returns a copy of r with every zero field set to its default.
func (r Reliability) withDefaults() Reliability {
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
	def(&r.MaxAttempts, defaultMaxAttempts)
	def(&r.BreakerThreshold, defaultBreakerThreshold)
	def(&r.BreakerHalfOpenProbes, defaultBreakerProbes)
	def(&r.MaxInFlight, defaultMaxInFlight)
	defD(&r.RetryBaseDelay, defaultRetryBaseDelay)
	defD(&r.RetryMaxDelay, defaultRetryMaxDelay)
	defD(&r.BreakerOpenFor, defaultBreakerOpenFor)
	defD(&r.BreakerProbeInterval, defaultBreakerProbe)
	defD(&r.OperationTimeout, defaultOperationTimeout)
	defD(&r.AttemptTimeout, defaultAttemptTimeout)
	defD(&r.MaxWait, defaultMaxWait)
	return r
}

// guard runs L2 calls under the reliability stack. A nil *guard runs each
// once, bounded by the default AttemptTimeout and a write's transfer
// allowance (reliability off: the first error propagates).
type guard struct {
	cfg     Reliability
	br      *breaker // nil when disabled
	slots   chan struct{}
	retries atomic.Uint64
	shed    atomic.Uint64
	refused atomic.Uint64
	onRetry func(op string) // metrics hook, may be nil
	// onRefuse is told of each call the open breaker refused (a span
	// event); may be nil.
	onRefuse func(ctx context.Context)
	// onTransient hears every transient failure (a cluster re-reads its
	// slot map); may be nil.
	onTransient func()

	// ping reaches Redis outside the stack; the prober uses it while the
	// breaker is open. bg ends the prober (Client.Close).
	ping func(context.Context) error
	bg   context.Context

	mu      sync.Mutex // guards probing and stopped; wg.Add happens under it
	probing bool
	stopped bool
	wg      sync.WaitGroup
}

func newGuard(r *Reliability, now func() time.Time) *guard {
	if r == nil {
		return nil
	}
	cfg := r.withDefaults()
	g := &guard{cfg: cfg, slots: make(chan struct{}, cfg.MaxInFlight)}
	if !cfg.DisableBreaker {
		g.br = newBreaker(&cfg, now)
	}
	return g
}

// do runs fn, an L2 call named op, with backpressure, the breaker and
// retries, all within OperationTimeout (or ctx's deadline, if sooner).
// fn's error is returned as is (after the last attempt), except that a
// timeout says whose deadline ended it (see settle: context.Canceled or
// context.DeadlineExceeded for the caller's ctx, ErrTimeout for the
// Client's bounds); refusals are *BackendError values with ErrCircuitOpen
// or ErrOverloaded inside. A nil *guard runs fn once, bounded by the
// default AttemptTimeout (see bare).
func (g *guard) do(ctx context.Context, op string, fn func(context.Context) error) error {
	return g.doSized(ctx, op, 0, fn)
}

// transferRate is the slowest transfer to Redis a write is budgeted for:
// an operation that sends n bytes gets transferTime(n) on top of
// OperationTimeout and of each attempt's AttemptTimeout.
const transferRate = 16 << 20 // bytes per second

// transferTime is n bytes at transferRate: 4 s for 64 MiB, microseconds for a
// small value.
func transferTime(n int) time.Duration {
	return time.Duration(int64(n) * int64(time.Second) / transferRate)
}

// refuse counts a call the open breaker refused.
func (g *guard) refuse(ctx context.Context) {
	g.refused.Add(1)
	if g.onRefuse != nil {
		g.onRefuse(ctx)
	}
}

// doSized is do for an operation that sends n bytes: its budget and each
// attempt's grow by transferTime(n), so a large Set is not cut off by
// deadlines sized for small values. The caller's deadline still applies.
func (g *guard) doSized(ctx context.Context, op string, n int, fn func(context.Context) error) error {
	if g == nil {
		return bare(ctx, op, n, fn)
	}
	extra := transferTime(n)
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
		g.refuse(ctx)
		return &BackendError{Op: op, Err: ErrCircuitOpen}
	}
	if err := g.acquire(ctx, op, deadline); err != nil {
		return err
	}
	defer func() { <-g.slots }()
	delay := g.cfg.RetryBaseDelay
	for attempt := 1; ; attempt++ {
		probe := false
		if g.br != nil {
			var ok bool
			if ok, probe = g.br.allow(); !ok {
				g.refuse(ctx)
				return &BackendError{Op: op, Err: ErrCircuitOpen}
			}
		}
		err := g.attempt(ctx, fn, deadline, extra)
		transient := err != nil && l2.IsTransient(err)
		if transient && g.onTransient != nil {
			g.onTransient()
		}
		if g.br != nil {
			o := outcomeSuccess
			switch {
			case gaveUp():
				o = outcomeNeutral
			case transient:
				o = outcomeFailure
			}
			if g.br.record(probe, o) {
				g.startProber()
			}
		}
		if !transient || attempt >= g.cfg.MaxAttempts || gaveUp() {
			return settle(ctx, op, err)
		}
		wait := delay/2 + rand.N(delay/2+1)
		if time.Until(deadline) <= wait || !ctxwait.Sleep(ctx, wait) {
			return settle(ctx, op, err)
		}
		delay = min(delay*2, g.cfg.RetryMaxDelay)
		g.retries.Add(1)
		if g.onRetry != nil {
			g.onRetry(op)
		}
	}
}

// attempt runs fn once, bounded by AttemptTimeout (plus extra, the
// transfer time of what it sends) and the operation's deadline.
func (g *guard) attempt(ctx context.Context, fn func(context.Context) error, deadline time.Time, extra time.Duration) error {
	if d := time.Now().Add(g.cfg.AttemptTimeout + extra); d.Before(deadline) {
		deadline = d
	}
	actx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	return fn(actx)
}

// acquire takes an in-flight slot, waiting at most MaxWait and never past
// the operation's deadline.
func (g *guard) acquire(ctx context.Context, op string, deadline time.Time) error {
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
		return &BackendError{Op: op, Err: ctx.Err()}
	case <-t.C:
		if err := ctx.Err(); err != nil {
			return &BackendError{Op: op, Err: err} // the caller's deadline, not overload
		}
		g.shed.Add(1)
		return &BackendError{Op: op, Err: ErrOverloaded}
	}
}

// startProber starts the background PING that closes an open breaker as
// soon as Redis answers, unless one runs already or the Client is closing.
func (g *guard) startProber() {
	if g.ping == nil {
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
func (g *guard) probe() {
	defer g.wg.Done()
	t := time.NewTicker(g.cfg.BreakerProbeInterval)
	defer t.Stop()
	for {
		select {
		case <-g.bg.Done():
			return
		case <-t.C:
		}
		if !g.br.isClosed() {
			ctx, cancel := context.WithTimeout(g.bg, g.cfg.AttemptTimeout)
			err := g.ping(ctx)
			cancel()
			if g.bg.Err() != nil {
				return // closing: a cut-off PING says nothing
			}
			if redisAnswered(err) {
				g.br.answered()
			}
		}
		// Stop once closed; the check and the flag change together, so a
		// trip after this point starts a new prober.
		g.mu.Lock()
		if g.br.isClosed() {
			g.probing = false
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
	}
}

// redisAnswered reports whether err (from a PING) shows Redis answering:
// no error, or an error reply from the server itself (LOADING, NOAUTH...).
// A timeout, a refused or closed connection, a TLS or dial failure do not.
func redisAnswered(err error) bool {
	var re redis.Error
	return err == nil || errors.As(err, &re)
}

// stop ends the prober and waits for it. bg must be cancelled first.
func (g *guard) stop() {
	if g == nil {
		return
	}
	g.mu.Lock()
	g.stopped = true
	g.mu.Unlock()
	g.wg.Wait()
}

// MissError is what a read returns when FailOpen turned a Redis failure
// into a miss: errors.Is(err, ErrNotFound) holds (so GetOrLoad loads and
// callers that treat "not found" as "compute it" keep working), and
// errors.As(err, **BackendError) reaches the Redis failure for callers that
// want to know.
type MissError struct {
	// Err is the Redis failure (a *BackendError).
	Err error
}

// Error implements error.
func (e *MissError) Error() string {
	return "cachekit: redis unavailable, read degraded to a miss: " + e.Err.Error()
}

// Unwrap returns the Redis failure.
func (e *MissError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrNotFound) hold.
func (e *MissError) Is(target error) bool { return target == ErrNotFound }

// ReliabilityStats is a snapshot of the reliability stack's counters.
type ReliabilityStats struct {
	// Breaker is the breaker's state now (BreakerClosed when disabled).
	Breaker BreakerState
	// BreakerOpened counts transitions to open.
	BreakerOpened uint64
	// Retries counts retried attempts; Refused counts calls the open
	// breaker refused; Shed counts calls refused by backpressure.
	Retries, Refused, Shed uint64
	// Degraded counts Redis failures absorbed by FailOpen (reads turned
	// into misses, writes absorbed).
	Degraded uint64
}

// ReliabilityStats returns the reliability stack's counters; the zero
// value when Options.Reliability was nil.
func (c *Client) ReliabilityStats() ReliabilityStats {
	if c.rel == nil {
		return ReliabilityStats{}
	}
	st := ReliabilityStats{
		Retries:  c.rel.retries.Load(),
		Refused:  c.rel.refused.Load(),
		Shed:     c.rel.shed.Load(),
		Degraded: c.stats.degraded.Load(),
	}
	if c.rel.br != nil {
		st.Breaker, st.BreakerOpened = c.rel.br.snapshot()
	}
	return st
}
