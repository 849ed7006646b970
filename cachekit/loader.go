package cachekit

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/cachekit-io/cachekit-go/cachekit/internal/flight"
	"github.com/cachekit-io/cachekit-go/cachekit/internal/guard"
	"github.com/cachekit-io/cachekit-go/cachekit/internal/observe"
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
	var res loaded[T]
	var led, isT bool
	for try := 1; ; try++ {
		joined := time.Now()
		var val any // the flight's value: a loaded[T], or another caller's loaded[V]
		val, led, err = flight.Do(&c.flights, ctx, c.bg, c.loadTimeout, key, func(lctx context.Context) (loaded[T], error) {
			return loadKey(lctx, c, key, ttl, load, degraded)
		})
		res, isT = fromFlight[T](val)
		// The value was current at res.at: right for a caller that was
		// already waiting then; a caller that joined the flight later, maybe
		// after a write returned, loads again (three times at most).
		if led || err != nil || try == 3 || res.at.IsZero() || !joined.After(res.at) {
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
	switch {
	case err != nil:
		return zero, observe.Result{}, c.loadErr(ctx, err)
	case res.gone != nil: // the loader's "not found", or one found cached (a NegativeHitError)
		return zero, r, res.gone
	case isT:
		return res.v, r, nil
	}
	// Another caller loaded the same key as a different type: read it back
	// as ours.
	return getInner[T](ctx, c, key)
}

// loadKey is one GetOrLoad load of key, read top to bottom: claim the key
// (plant a lease, take interop mode's lock, or find what another load
// stored meanwhile: then that is the result), run the loader, land its
// result by the claim's fill (which gives the claim back when the loader
// failed; a loader's panic gives it back here), and hand the result to the
// flight.
func loadKey[T any](ctx context.Context, c *Client, key string, ttl time.Duration, load func(context.Context) (T, error), degraded bool) (loaded[T], error) {
	cl, err := claimKey[T](ctx, c, key, degraded)
	switch {
	case err != nil:
		return loaded[T]{}, err
	case cl.prior != nil:
		return *cl.prior, nil
	}
	defer func() {
		if r := recover(); r != nil {
			cl.fill.giveBack(ctx, c, key)
			panic(r) // the flight turns it into its error
		}
	}()
	res, ttl, err := loadStep(ctx, c, load, ttl)
	return landKey(ctx, c, key, res, ttl, cl.fill, err)
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

// fromFlight reads a flight's value as a loaded[T]; ok is false when
// another caller loaded the key as another type (its at and gone are
// still read). The flight's value is the load wing's one any: one flight
// serves the callers of one key, who may ask for different types.
func fromFlight[T any](val any) (res loaded[T], ok bool) { // val: the flight's value
	if res, ok = val.(loaded[T]); ok {
		return res, true
	}
	if o, isLoad := val.(interface{ outcome() (time.Time, error) }); isLoad {
		res.at, res.gone = o.outcome()
	}
	return res, false
}

// outcome is what a caller of another type reads of r (fromFlight).
func (r loaded[V]) outcome() (time.Time, error) { return r.at, r.gone }
