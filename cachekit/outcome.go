package cachekit

// What an outcome means to the caller and to the observer: a Redis failure
// a read or write may absorb (Reliability.FailOpen), the error classes
// metrics and logs name, entries that failed to open, the loader's own
// errors, and which outcomes of a read make GetOrLoad load (needsLoad) and
// which "not found" a load caches as a negative entry (cachesAbsence).

import (
	"context"
	"errors"
	"strings"

	"github.com/cachekit-io/cachekit-go/cachekit/internal/guard"
	"github.com/cachekit-io/cachekit-go/cachekit/internal/observe"
	"github.com/cachekit-io/cachekit-go/l2"
)

// redis runs fn, the Redis call op that sends n bytes, under the
// reliability stack (a write whose outcome is unknown is not resent), and
// counts a failure in Stats.L2Errors: not a miss, not a closed Client, not
// a failed announcement of a write (the write went through; see
// announceFailed). The cache operations' Redis calls go through here,
// except MGet's (a key of another type is no failure; it counts its own)
// and interop mode's lock (under the stack, nothing counted); the lease
// renewals and releases run in their own bounds, and Raw's scans and swaps
// unguarded, as tools.
func (c *Client) redis(ctx context.Context, op string, n int, fn func(context.Context) error) error {
	return c.counted(c.do(ctx, op, n, fn))
}

// redisResend is redis for a conditional write whose own landing destroys
// its condition (guard.DoResend): one whose outcome is unknown may be
// resent, and fn's resend says so. Without the stack it runs once.
func (c *Client) redisResend(ctx context.Context, op string, n int, fn func(ctx context.Context, resend bool) error) error {
	if c.rel == nil {
		return c.counted(guard.Bare(ctx, op, n, c.bareBound, func(ctx context.Context) error { return fn(ctx, false) }))
	}
	return c.counted(c.rel.DoResend(ctx, op, n, fn))
}

// counted counts err, a Redis call's, in Stats.L2Errors (and
// UnknownWrites) as redis documents, and returns it.
func (c *Client) counted(err error) error {
	if _, long := l2.IsLong(err); err != nil && !long && !errors.Is(err, l2.ErrNotFound) && !errors.Is(err, ErrClosed) {
		c.stats.L2Errors.Add(1)
		if errors.Is(err, ErrOutcomeUnknown) {
			c.stats.UnknownWrites.Add(1)
		}
	}
	return err
}

// do runs fn, the Redis call op that sends n bytes, under the reliability
// stack, or without it (Reliability nil) in one attempt bounded by
// AttemptTimeout's default and n's transfer allowance.
func (c *Client) do(ctx context.Context, op string, n int, fn func(context.Context) error) error {
	if c.rel == nil {
		return guard.Bare(ctx, op, n, c.bareBound, fn)
	}
	return c.rel.DoSized(ctx, op, n, fn)
}

// readErr turns a Redis read's error into the error the caller sees: a
// miss (ErrNotFound), a degraded miss under FailOpen, or the Redis error.
func (c *Client) readErr(ctx context.Context, key string, err error) error {
	if errors.Is(err, l2.ErrNotFound) {
		c.stats.L2Misses.Add(1)
		return ErrNotFound
	}
	if c.absorbed(ctx, "redis read failed; treated as a miss (fail-open)", key, err) {
		return &MissError{Err: err}
	}
	return err
}

// writeFailed turns a failed Redis write into what the caller sees: nil
// when FailOpen absorbs it (outcome degraded), else the Redis error.
func (c *Client) writeFailed(ctx context.Context, key string, err error) (observe.Result, error) {
	if c.absorbed(ctx, "redis write failed; absorbed (fail-open)", key, err) {
		return observe.Result{Tier: observe.L2, Out: observe.Degraded}, nil
	}
	return observe.Result{Tier: observe.L2}, err
}

// absorbed reports whether FailOpen absorbs err, a failed L2 call of
// key's (degradable), and then counts it in ReliabilityStats.Degraded and
// warns msg. Reads (readErr, MGet) and writes (writeFailed) decide here.
func (c *Client) absorbed(ctx context.Context, msg, key string, err error) bool {
	if !c.degradable(ctx, err) {
		return false
	}
	c.stats.Degraded.Add(1)
	c.warn(msg, key, err)
	return true
}

// degradable reports whether a failed L2 call may be degraded under
// FailOpen: a backend failure (not the caller's own cancellation or
// deadline, even one that passed a timer tick before ctx.Err says so; not
// a closed client).
func (c *Client) degradable(ctx context.Context, err error) bool {
	if !c.rel.FailOpen() || ctx.Err() != nil || guard.CallerExpired(ctx) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var be *BackendError
	return errors.As(err, &be)
}

// openFailed counts an entry of tier that failed to open, in Stats, the
// decrypt-failure metric and an event on the operation's span.
func (c *Client) openFailed(ctx context.Context, tier Tier, err error) {
	t := observe.TierNamed(string(tier))
	c.stats.OpenFailures(t).Add(1)
	c.obs.OpenFailed(ctx, t, err)
	if h := c.openFailedHook; h != nil {
		h(tier, err)
	}
}

// announceFailed warns about the failed announcement of a write l2 made
// (op as l2 names it, of the Redis keys full): the write went through, and
// l2 counted the failure.
func (c *Client) announceFailed(op string, full []string, err error) {
	key := ""
	if len(full) == 1 {
		key = strings.TrimPrefix(full[0], c.prefix)
	}
	c.warn("invalidation not published after a write ("+op+")", key, err)
}

// isNegativeHit reports whether err is a NegativeHitError (nil costs
// nothing: errors.As would allocate its target).
func isNegativeHit(err error) bool {
	if err == nil {
		return false
	}
	var ne *NegativeHitError
	return errors.As(err, &ne)
}

// errClasses tells the observer, and the warnings, what the Client's own
// errors mean: the observer classes every other error itself.
var errClasses = observe.Errors{NotFound: ErrNotFound, Closed: ErrClosed, Degraded: isMissError, Unopened: isUnopenable,
	Negative:       isNegativeHit,
	OutcomeUnknown: ErrOutcomeUnknown,
	Invalid:        []error{ErrInvalidDestination, ErrInvalidTTL, ErrValueTooLarge, ErrNotBytes, errEmptyKey}}

// isMissError reports a read FailOpen turned into a miss (*MissError).
func isMissError(err error) bool {
	var me *MissError
	return errors.As(err, &me)
}

// isUnopenable reports a read that met an entry it could not open: a miss
// to the caller (an Unopenable *EntryError matches ErrNotFound), a failure
// of its class (auth_failed, format) to metrics and spans.
func isUnopenable(err error) bool {
	var ee *EntryError
	return errors.As(err, &ee) && ee.Unopenable
}

// isNotFound reports whether err matches ErrNotFound.
func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// loadable reports whether a Get error means "load a fresh value".
func loadable(err error) bool {
	var ee *EntryError
	return errors.Is(err, ErrNotFound) || errors.As(err, &ee)
}

// needsLoad reports whether a GetOrLoad read that returned err loads: a
// miss, FailOpen's *MissError or an entry that cannot be opened do; a
// NegativeHitError does not when this Client caches negatives (a Client
// that does not loads and replaces it).
func (c *Client) needsLoad(err error) bool {
	return err != nil && loadable(err) && !(c.negTTL > 0 && isNegativeHit(err))
}

// cachesAbsence reports whether the loader's error err is a "not found"
// this Client caches: negative caching on, err matching ErrNotFound, and
// not a guess (FailOpen's *MissError or an entry that could not be
// opened, met by a loader that reads a cache itself).
func (c *Client) cachesAbsence(err error) bool {
	return c.negTTL > 0 && errors.Is(err, ErrNotFound) && !isMissError(err) && !isUnopenable(err)
}
