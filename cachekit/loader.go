package cachekit

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/cachekit-io/cachekit-go/internal/flight"
	"github.com/cachekit-io/cachekit-go/internal/observe"
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
// every waiting caller and nothing is cached, as with any loader error.
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
// lease lives Options.LeaseTTL and is renewed while the loader runs; a
// loader error deletes it at once. A miss that finds another Client's
// lease waits for that load's result with Options.FleetSingleFlight
// (Production and Secure), or else loads without storing; so does a miss
// that finds a lease with less than half of LeaseTTL left, which its
// holder (renewing every third of it) has abandoned. A miss that
// finds an entry stored meanwhile returns it. Costs: one round trip more
// than a plain store on a miss (the lease), none on a hit.
//
// An entry that exists but cannot be opened (tampered, wrong key) is
// replaced by a fresh load; a Redis error is returned, except under
// FailOpen, where an unreachable Redis makes GetOrLoadTTL run the loader and
// return its value without storing it (no second read, lock or write to a
// failing Redis).
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
	if err == nil || !loadable(err) {
		return v, r, err
	}
	// A read that FailOpen turned into a miss means Redis is failing: load
	// without looking again, locking or storing, so the caller waits for
	// one Redis operation at most, not four.
	var me *MissError
	degraded := errors.As(err, &me)
	waitStart := time.Now()
	var res any
	var led bool
	for try := 1; ; try++ {
		joined := time.Now()
		res, led, err = c.flights.Do(ctx, c.bg, c.loadTimeout, key, func(lctx context.Context) (any, error) {
			return loadAndStore(lctx, c, key, ttl, load, degraded)
		})
		lr, ok := res.(leased)
		if !ok {
			break
		}
		res = lr.v
		// The value was current at lr.at: right for a caller that was
		// already waiting then; a caller that joined the flight later, maybe
		// after a write returned, loads again (three times at most).
		if led || err != nil || try == 3 || !joined.After(lr.at) {
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
		if c.closed.Load() && errors.Is(err, context.Canceled) {
			return zero, observe.Result{}, ErrClosed
		}
		return zero, observe.Result{}, err
	}
	if v, ok := res.(T); ok {
		return v, r, nil
	}
	// Another caller loaded the same key as a different type: read it back
	// as ours.
	return getInner[T](ctx, c, key)
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
	// before loading.
	if v, _, err := getInner[T](ctx, c, key); err == nil {
		return v, nil
	} else if !loadable(err) {
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
		if v, _, err := getInner[T](ctx, c, key); err == nil {
			return v, nil
		}
	}
	v, ttl, err := runLoader(ctx, c, load, ttl)
	if err != nil {
		return nil, err
	}
	if c.swr != nil {
		c.swr.Record(key, c.now(), ttl, ttl)
	}
	if _, err := c.setWithTTL(ctx, key, v, ttl); err != nil {
		if errors.Is(err, ErrClosed) {
			return nil, err
		}
		c.warn("GetOrLoad could not store the loaded value", key, err)
	}
	return v, nil
}

// OverrideTTL, called from a GetOrLoad, GetOrLoadTTL or MGetOrLoad loader
// with the ctx the loader was given, makes the value the loader returns be
// cached for ttl instead of the TTL the call was given (as rueidisaside's
// OverrideCacheTTL does): a loader that learns how long its answer stays
// true, from an HTTP Cache-Control header say, sets it here. The last call
// wins. It returns ErrInvalidTTL for a ttl the protocol refuses (zero,
// negative, over 30 days), and has no effect on a ctx that is not a
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
// with the TTL to store it for: ttl, or the loader's override.
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
	v, ttl, err = flight.Load(ctx, load, ttl)
	if err != nil {
		c.stats.LoadErrors.Add(1)
	}
	return v, ttl, err
}

// lockOrWait takes interop mode's {key}:lock (SET NX PX LeaseTTL), the
// family's convention for keys other SDKs read, or waits for its holder's
// value by polling the cache (via probe) until the lock would have
// expired; found reports that the value arrived (l2.Store.LockOrWait).
// When the lock is taken, unlock releases it; otherwise it is a no-op.
func (c *Client) lockOrWait(ctx context.Context, key string, probe func() (any, bool)) (unlock func(), v any, found bool) {
	unlock, found, err := c.l2.LockOrWait(ctx, c.fullKey(key)+":lock", c.leaseTTL, c.rel.AttemptTimeout(), c.now, c.rel.Do,
		func() { c.obs.Event(ctx, "cachekit.lock_wait", attribute.String("cachekit.lock", "redis")) },
		func() (ok bool) { v, ok = probe(); return ok })
	if err != nil {
		c.warn("GetOrLoad lock unavailable; loading without it", key, err)
	}
	return unlock, v, found
}

// normalizeTTL applies the protocol's TTL rules.
func normalizeTTL(ttl time.Duration) (time.Duration, error) { return protocol.NormalizeTTL(ttl) }
