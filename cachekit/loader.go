package cachekit

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/cachekit-io/cachekit-go/cachekit/internal/flight"
	"github.com/cachekit-io/cachekit-go/cachekit/internal/guard"
	"github.com/cachekit-io/cachekit-go/cachekit/internal/observe"
	"github.com/cachekit-io/cachekit-go/internal/ctxwait"
	"github.com/cachekit-io/cachekit-go/l2"
	"github.com/cachekit-io/cachekit-go/protocol"
)

// GetOrLoad returns the T cached under key or, on a miss, runs load, stores
// its result for Options.DefaultTTL and returns it. It is GetOrLoadTTL with
// the Client's default TTL; everything said there holds here.
func GetOrLoad[T any](ctx context.Context, c *Client, key string, load func(context.Context) (T, error)) (T, error) {
	return GetOrLoadTTL(ctx, c, key, c.defaultTTL, load)
}

// GetOrLoadTTL returns the T cached under key or, on a miss, runs load,
// stores its result for ttl and returns it. The loader may choose another
// TTL for what it returns by calling OverrideTTL with its ctx, and may
// return ErrNotFound (or an error wrapping it): that error is returned to
// every waiting caller and, as with any loader error, nothing is cached,
// unless Options.NegativeTTL is set: then it is cached as a negative entry
// (for NegativeTTL, or the loader's OverrideTTL capped at MaxNegativeTTL),
// stored the way a loaded value is (below), and until a write of the key
// replaces it GetOrLoadTTL returns a *NegativeHitError (matching
// ErrNotFound: a negative hit, the cache's answer) without loading. A plain
// miss and FailOpen's *MissError load.
//
// Concurrent callers in this process share one load per key (single-flight).
// Each caller's ctx is honoured: a caller whose ctx ends gets ctx.Err() at
// once, while the load goes on for the others. The loader's ctx keeps the
// first caller's values but not its cancellation; it ends when
// Options.LoadTimeout (default 30 s) has passed, when Close is called, or
// when every caller waiting for it has given up (a key an MGetOrLoad batch
// is loading is waited for, and that load runs on for the batch); callers stop waiting for
// it then too (even if the loader ignores its ctx), and the next call for
// the key starts a new load rather than joining the abandoned one.
// Loader errors are returned to every waiting caller and never cached.
//
// With Redis (outside interop mode) a miss plants a lease in the key
// before loading, and the loaded value is stored only while the lease is
// still there, checked by Redis in the same script that stores it: a Set,
// Delete or any other write of the key while the loader runs (by this
// Client, another process, another SDK, redis-cli, expiry or eviction)
// wins, and the loaded value goes only to this call's callers (counted in
// Stats.LeasesLost). Other reads see a key under a lease as missing. The
// lease lives Options.LeaseTTL and is renewed until its store has
// answered; a loader error deletes it at once, and so does a ctx that ends
// while the lease is being planted. A miss that finds another Client's
// lease waits for that load's result with Options.FleetSingleFlight
// (Production and Secure), or else loads without storing. A lease with
// less than half of LeaseTTL left, which its holder (renewing every third
// of it) has abandoned, is taken over by one caller (compare-and-set on
// the lease), which loads and stores; the others then wait for it, and
// the old holder, if alive, loses only its store. A miss that finds an
// entry stored meanwhile returns it. Where Redis refuses to plant the
// lease (over maxmemory with noeviction, an ACL without EVAL) the miss
// loads and returns its value without storing it. Costs: one round trip
// more than a plain store on a miss (the lease), none on a hit.
//
// In interop mode the keys are shared with other SDKs, which know no
// lease: the loaded value is stored only where the key still holds
// nothing (SET NX), or over exactly the entry that could not be opened,
// and only if this Client began no write of the key (Set, Delete,
// SetIfAbsent, MSet) since the load began; a write of this Client's that
// begins while the store is on its way is sent after it. So a value
// written while the loader ran (this Client's or another's) stays, and so
// does this Client's Delete; another process's Delete made while it ran
// leaves the key empty, and the loaded value, perhaps read before the
// change that Delete announced, is stored (there is no lease to void).
//
// An entry that exists but cannot be opened (tampered, wrong key) is
// replaced by a fresh load; a Redis error is returned, except under
// FailOpen, where an unreachable Redis makes GetOrLoadTTL run the loader and
// return its value without storing it (no second read, lock or write to a
// failing Redis). A load that LoadTimeout ends before the caller's own
// deadline returns an error matching ErrTimeout.
func GetOrLoadTTL[T any](ctx context.Context, c *Client, key string, ttl time.Duration, load func(context.Context) (T, error)) (T, error) {
	key = c.local(key)
	ctx, oc := c.obs.Begin(ctx, observe.OpGetOrLoad, key, 1)
	v, r, err := getOrLoad(ctx, c, key, ttl, load)
	err, r.LoaderFailed = flight.Unmark(err)
	c.obs.End(ctx, oc, r, err)
	return v, err
}

func getOrLoad[T any](ctx context.Context, c *Client, key string, ttl time.Duration, load func(context.Context) (T, error)) (T, observe.Result, error) {
	var zero T
	if _, err := protocol.NormalizeTTL(ttl); err != nil {
		return zero, observe.Result{}, err
	}
	var v T
	var r observe.Result
	var err error
	if c.swr != nil {
		v, r, err = getSWR(ctx, c, key, ttl, load)
	} else {
		v, r, err = getInner[T](ctx, c, key)
	}
	if !c.needsLoad(err) {
		return v, r, err
	}
	// A read that FailOpen turned into a miss means Redis is failing: load
	// without looking again, locking or storing, so the caller waits for
	// one Redis operation at most, not four.
	var me *MissError
	degraded := errors.As(err, &me)
	waitStart := time.Now()
	var res any
	var led, isT bool
	var gone error // the load's "not found", cached (Options.NegativeTTL)
	for try := 1; ; try++ {
		joined := time.Now()
		res, led, err = c.flights.Do(ctx, c.bg, c.loadTimeout, key, func(lctx context.Context) (any, error) {
			return loadAndStore(lctx, c, key, ttl, load, degraded)
		})
		var at time.Time
		v, at, isT, gone = flightValue[T](res)
		// The value was current at at: right for a caller that was
		// already waiting then; a caller that joined the flight later, maybe
		// after a write returned, loads again (three times at most).
		if led || err != nil || try == 3 || at.IsZero() || !joined.After(at) {
			break
		}
	}
	if !led {
		c.obs.Event(ctx, "cachekit.lock_wait", attribute.String("cachekit.lock", "single_flight"),
			attribute.Int64("cachekit.wait_us", time.Since(waitStart).Microseconds()))
	}
	r = observe.Result{Out: observe.Loaded}
	if degraded {
		r.Out = observe.Degraded
	}
	if err != nil {
		return zero, observe.Result{}, c.loadErr(ctx, err)
	}
	if gone != nil { // the loader's "not found", or one found cached (a NegativeHitError)
		return zero, r, gone
	}
	if isT {
		return v, r, nil
	}
	// Another caller loaded the same key as a different type: read it back
	// as ours.
	return getInner[T](ctx, c, key)
}

// errLoadTimeout is what a caller gets when Options.LoadTimeout ended the
// load it waited for before its own deadline: the Client's timeout.
var errLoadTimeout error = loadTimeoutError{}

// loadTimeoutError is errLoadTimeout's type: it matches ErrTimeout and is
// a net.Error timeout, as ErrTimeout is.
type loadTimeoutError struct{}

func (loadTimeoutError) Error() string        { return "cachekit: the load ran past LoadTimeout" }
func (loadTimeoutError) Is(target error) bool { return target == ErrTimeout }
func (loadTimeoutError) Timeout() bool        { return true }
func (loadTimeoutError) Temporary() bool      { return true }

// loadErr is what a caller of a load gets for err: ErrClosed when Close
// cancelled it; errLoadTimeout (matching ErrTimeout, not
// context.DeadlineExceeded) when LoadTimeout, not the caller's deadline,
// ended it; else err.
func (c *Client) loadErr(ctx context.Context, err error) error {
	switch {
	case c.closed.Load() && errors.Is(err, context.Canceled):
		return ErrClosed
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil && !guard.CallerExpired(ctx):
		return errLoadTimeout
	}
	return err
}

// loadable reports whether a Get error means "load a fresh value".
func loadable(err error) bool {
	var ee *EntryError
	return errors.Is(err, ErrNotFound) || errors.As(err, &ee)
}

func loadAndStore[T any](ctx context.Context, c *Client, key string, ttl time.Duration, load func(context.Context) (T, error), degraded bool) (any, error) {
	if degraded {
		return loadUnstored(ctx, c, load, ttl)
	}
	if c.leases() {
		return leaseLoad(ctx, c, key, ttl, load)
	}
	// L1 only, or interop mode. A caller that missed just before the
	// previous flight stored its value starts a new flight: look again
	// before loading. In interop mode a write of this Client's from here
	// on makes the store give way (keyorder.go).
	var seq uint64
	if c.order != nil {
		seq = c.order.seq(key)
	}
	replace, v, err := lookAgain[T](ctx, c, key)
	switch {
	case err == nil:
		return v, nil
	case isNegativeHit(err) && !c.needsLoad(err):
		return absence{err}, nil
	case !c.needsLoad(err):
		return nil, err
	}
	if c.fleetWait && c.l2 != nil {
		unlock, v, found := c.lockOrWait(ctx, key, func() (any, bool) {
			v, _, err := getInner[T](ctx, c, key)
			return v, err == nil
		})
		if found {
			return v, nil
		}
		defer unlock()
		// The lock may have been free because its holder had just
		// stored: look once more before loading.
		if replace, v, err = lookAgain[T](ctx, c, key); err == nil {
			return v, nil
		}
	}
	v, ttl, err = runLoader(ctx, c, load, ttl)
	var val any = v
	if err != nil {
		if !c.cachesAbsence(err) { // interop mode never caches one
			return nil, err
		}
		val = absence{err}
	}
	f := fill{kind: fillPlain}
	if c.l2 != nil {
		// Interop mode: no lease in a shared key, but never over a write
		// made while the loader ran (SET NX), or over anything but the
		// entry that could not be opened.
		f = fill{kind: fillAbsent, replace: replace, seq: seq}
	}
	if _, _, err := c.land(ctx, key, val, ttl, f, true); c.loadStoreFailed(key, err) != nil {
		return nil, err
	}
	return val, nil
}

// lookAgain reads key as a T before a load; for an entry in Redis that
// cannot be opened, replace is the digest of its bytes (the load replaces
// exactly those).
func lookAgain[T any](ctx context.Context, c *Client, key string) (replace string, v T, err error) {
	v, _, err = getInner[T](ctx, c, key)
	var ee *EntryError
	if c.l2 != nil && errors.As(err, &ee) && ee.Tier == TierL2 {
		var raw []byte
		if rerr := c.readL2(ctx, c.fullKey(key), false, &raw, nil); rerr == nil {
			replace = l2.Digest(raw)
		}
	}
	return replace, v, err
}

// OverrideTTL, called from a GetOrLoad, GetOrLoadTTL or MGetOrLoad loader
// with the ctx the loader was given, makes the value the loader returns be
// cached for ttl instead of the TTL the call was given (as rueidisaside's
// OverrideCacheTTL does): a loader that learns how long its answer stays
// true, from an HTTP Cache-Control header say, sets it here. The last call
// wins. A GetOrLoad or GetOrLoadTTL loader that then returns ErrNotFound
// sets the TTL of its negative entry instead (Options.NegativeTTL must be
// on; a ttl over MaxNegativeTTL is cut to it); an MGetOrLoad loader's
// override is its values', its left-out keys' negative entries keep
// NegativeTTL. It returns ErrInvalidTTL for a ttl the protocol refuses
// (zero, negative, over 30 days), and has no effect on a ctx that is not a
// loader's.
func OverrideTTL(ctx context.Context, ttl time.Duration) error {
	if _, err := normalizeTTL(ttl); err != nil {
		return err
	}
	flight.OverrideTTL(ctx, ttl)
	return nil
}

// runLoader runs load (flight.Load: OverrideTTL can reach its ctx, its
// error is marked as the loader's) in the loader's span, counted in
// Stats.Loads and, when it fails, Stats.LoadErrors, and returns its value
// with the TTL to store it for: ttl, or the loader's override; for a "not
// found" this Client caches, the negative TTL (negativeTTL).
func runLoader[T any](ctx context.Context, c *Client, load func(context.Context) (T, error), ttl time.Duration) (v T, _ time.Duration, err error) {
	c.stats.Loads.Add(1)
	ctx, done := c.obs.StartLoad(ctx, isNotFound)
	defer func() {
		if r := recover(); r != nil {
			done(flight.Panicked(r))
			panic(r) // the caller recovers it as before
		}
		done(err)
	}()
	v, override, err := flight.Load(ctx, load, 0) // 0: no override
	switch {
	case err != nil && c.cachesAbsence(err):
		ttl = c.negativeTTL(override)
	case override != 0:
		ttl = override
	}
	if err != nil {
		c.stats.LoadErrors.Add(1)
	}
	return v, ttl, err
}

// lockOrWait takes interop mode's {key}:lock (SET NX PX LeaseTTL with a
// fresh token, under the reliability stack: a retry finds its own token),
// the family's convention for keys other SDKs read, or, when another
// holds it, waits for its holder's value by polling probe (5 ms doubling
// to 100 ms) until probe finds it (found), ctx ends, or the lock would
// have expired. When the lock is taken, unlock releases it (within one
// attempt, whatever ctx says; the lock expires anyway); otherwise, and
// when it could not be taken (warned: the load goes on without it), it is
// a no-op.
func (c *Client) lockOrWait(ctx context.Context, key string, probe func() (any, bool)) (unlock func(), v any, found bool) {
	lockKey, token, noop := c.fullKey(key)+":lock", l2.NewToken(), func() {}
	var ok bool
	err := c.do(ctx, "lock", 0, func(ctx context.Context) (err error) {
		ok, err = c.l2.TryLock(ctx, lockKey, token, c.leaseTTL)
		return err
	})
	if err != nil {
		c.warn("GetOrLoad lock unavailable; loading without it", key, err)
		return noop, nil, false
	}
	if ok {
		return func() {
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.rel.AttemptTimeout())
			defer cancel()
			_ = c.do(uctx, "unlock", 0, func(ctx context.Context) error {
				_, err := c.l2.Unlock(ctx, lockKey, token)
				return err
			})
		}, nil, false
	}
	c.obs.Event(ctx, "cachekit.lock_wait", attribute.String("cachekit.lock", "redis"))
	deadline := c.now().Add(c.leaseTTL)
	for wait := 5 * time.Millisecond; c.now().Before(deadline); wait = min(wait*2, 100*time.Millisecond) {
		if !ctxwait.Sleep(ctx, wait) {
			return noop, nil, false
		}
		if v, found = probe(); found {
			return noop, v, true
		}
	}
	return noop, nil, false
}

// normalizeTTL applies the protocol's TTL rules.
func normalizeTTL(ttl time.Duration) (time.Duration, error) { return protocol.NormalizeTTL(ttl) }
