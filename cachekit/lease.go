package cachekit

// Leases: a GetOrLoad miss plants a placeholder in the key (l2.Acquire)
// before it loads, keeps it alive while the loader runs, and stores the
// loaded value only while the placeholder is still there (l2.Fill). Any
// write of the key in between, by anyone, replaces the placeholder and the
// store is dropped: a value loaded before a Set or Delete never overwrites
// it, in Redis or in any process's L1. A Client that finds another's lease
// waits for that load's result (Options.FleetSingleFlight), woken by the
// key's invalidation, so a fleet missing one key runs one load.

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/cachekit-io/cachekit-go/cachekit/internal/flight"
	"github.com/cachekit-io/cachekit-go/cachekit/internal/guard"
	"github.com/cachekit-io/cachekit-go/cachekit/internal/observe"
	"github.com/cachekit-io/cachekit-go/internal/ctxwait"
	"github.com/cachekit-io/cachekit-go/l2"
)

// defaultLeaseTTL is used when Options.LeaseTTL is zero.
const defaultLeaseTTL = 5 * time.Second

// leases reports whether GetOrLoad plants leases: with Redis, outside
// interop mode (interop keys are read by other SDKs, which know no
// placeholder; they take the family's {key}:lock instead).
func (c *Client) leases() bool { return c.l2 != nil && !c.interop }

// leaseLoad is a GetOrLoad miss with leases: it plants one, or finds the
// entry another Client stored meanwhile (and returns it), or waits for the
// Client whose lease is there, or takes over a lease its holder abandoned.
// Holding the lease it runs the loader and stores the result while the
// lease holds. A lease Redis will not plant (over maxmemory with
// noeviction, an ACL without EVAL) means loading without one.
func leaseLoad[T any](ctx context.Context, c *Client, key string, ttl time.Duration, load func(context.Context) (T, error)) (any, error) {
	full := c.fullKey(key)
	lease := l2.NewLeaseFor(c.leaseTTL)
	replace := ""                               // digest of an entry that failed to open, or an abandoned lease
	giveUp := time.Now().Add(c.loadTimeout / 2) // then load without waiting any longer
	waited := false
	for wait := flight.FirstPoll; ; wait = min(wait*2, flight.PollMax) {
		var wake chan struct{}
		if c.fleetWait {
			wake = c.leaseWaits.Add(key) // before the look: no wake is missed
		}
		t := c.ticket(key)
		at := time.Now()
		var state l2.LeaseState
		var entry []byte
		var left time.Duration
		// The lease is this call's alone (random): a resent Acquire that
		// finds it reports it planted, so one of unknown outcome is resent.
		err := c.redisResend(ctx, "lease", 0, func(ctx context.Context, _ bool) error {
			var err error
			state, entry, left, err = c.l2.Acquire(ctx, full, lease, c.leaseTTL, replace)
			return err
		})
		if wake != nil && (err != nil || state != l2.LeaseHeld) {
			c.leaseWaits.Remove(key, wake)
		}
		if err != nil {
			if errors.Is(err, ErrOutcomeUnknown) {
				// The lease may be planted (a reply lost, a ctx ended with
				// the script queued): give it back, after the Acquire.
				c.releaseLease(ctx, full, lease)
			}
			if l2.Declined(err) {
				c.warn("GetOrLoad could not plant a lease (Redis refused the script); loading without storing", key, err)
				return loadUnstored(ctx, c, load, ttl)
			}
			rerr := c.readErr(ctx, key, err)
			if out, _ := errClasses.Outcome(rerr); out == observe.Degraded {
				return loadUnstored(ctx, c, load, ttl) // FailOpen: Redis is failing
			}
			return nil, rerr
		}
		switch state {
		case l2.LeaseFoundEntry:
			v, err := openFound[T](ctx, c, key, entry, left, t)
			if err == nil {
				return leased{v: v, at: at}, nil
			}
			if c.negTTL > 0 && isNegativeHit(err) { // another load's cached "not found"
				return leased{v: absence{err}, at: at}, nil
			}
			if !loadable(err) || replace != "" {
				return nil, err
			}
			replace = l2.Digest(entry) // replace what cannot be opened
			continue
		case l2.LeaseHeld:
			// Its holder renews it every third of its LeaseTTL (its token
			// carries it; an older Client's, this Client's): one with less
			// than half left is abandoned (a holder that could neither
			// store nor release it). One caller takes it over (the others
			// then find the new lease and wait for it); its old holder, if
			// still alive, loses only its store.
			holder := c.leaseTTL // an older Client's lease carries none
			if d, ok := l2.LeaseTTLOf(entry); ok {
				holder = d
			}
			if left > 0 && left < holder/2 && string(entry) != replace {
				replace = string(entry)
				continue
			}
			if !c.fleetWait || !time.Now().Before(giveUp) {
				if wake != nil {
					c.leaseWaits.Remove(key, wake)
				}
				return loadUnstored(ctx, c, load, ttl)
			}
			if !waited {
				waited = true
				c.stats.LeaseWaits.Add(1)
				c.obs.Event(ctx, "cachekit.lock_wait", attribute.String("cachekit.lock", "lease"))
			}
			if err := c.leaseWaits.Await(ctx, key, wake, flight.Patience(wait, left, c.inv.Wakes())); err != nil {
				return nil, err
			}
			continue
		}
		break
	}
	return holdAndLoad(ctx, c, key, full, lease, ttl, load)
}

// openFound opens and decodes the entry a lease script found under key
// (with its remaining TTL left), backfilling L1 through t as a Get does.
func openFound[T any](ctx context.Context, c *Client, key string, entry []byte, left time.Duration, t ticket) (T, error) {
	var v T
	s := getScratch()
	defer putScratch(s)
	payload, err := c.fromL2(ctx, s, key, entry, left, t)
	if err == nil {
		if derr := c.decode(payload, &v); derr != nil {
			err = &EntryError{Tier: TierL2, KeyDigest: c.keyDigest(key), Err: derr}
		}
	}
	return v, err
}

// holdAndLoad runs the loader while holding lease on full (renewing it
// every LeaseTTL/3 until its fill has answered), then lands the value (or
// the loader's "not found", when this Client caches negatives) while the
// lease holds. A loader error gives the key back at once.
func holdAndLoad[T any](ctx context.Context, c *Client, key, full, lease string, ttl time.Duration, load func(context.Context) (T, error)) (any, error) {
	r := c.keepLeases(ctx, []string{full}, []string{lease})
	started := time.Now()
	v, ttl, err := runLoader(ctx, c, load, ttl)
	var val any = v
	if err != nil {
		if !c.cachesAbsence(err) {
			r.stop()
			c.releaseLease(ctx, full, lease)
			return nil, err
		}
		val = absence{err}
	}
	out, at, err := c.land(ctx, key, val, ttl, fill{kind: fillLease, lease: lease, renewer: r}, true)
	switch err = c.loadStoreFailed(key, err); {
	case err != nil:
		return nil, err
	case out == landStored:
		return leased{v: val, at: at}, nil
	default: // not stored: current when the loader started
		return leased{v: val, at: started}, nil
	}
}

// leased is what a load with Redis returns through the flight: the value,
// and a time at which it was current: just before the script that read or
// stored it was sent, or, for a value not stored (its lease replaced by a
// write, or loaded without one), when its loader started (the source said
// so after that). The caller that started the flight takes v; a caller
// that joined it after at loads again: the key may have been written since.
type leased struct {
	v  any
	at time.Time
}

// flightValue reads a flight's result as a T (false: another caller loaded
// the key as another type), with the time it was last known current (zero
// for a value without one: loaded in L1-only or interop mode). A cached
// "not found" (absence) is no T: gone is the loader's error, for the
// callers.
func flightValue[T any](res any) (v T, at time.Time, ok bool, gone error) {
	if lr, isLeased := res.(leased); isLeased {
		res, at = lr.v, lr.at
	}
	if a, isAbsent := res.(absence); isAbsent {
		return v, at, false, a.err
	}
	v, ok = res.(T)
	return v, at, ok, nil
}

// loadUnstored runs the loader and returns its value (or its "not found",
// when this Client caches negatives) without storing it: under FailOpen
// with Redis failing, when Redis refuses a lease, or while another Client
// holds the key's lease and this one does not wait for it.
func loadUnstored[T any](ctx context.Context, c *Client, load func(context.Context) (T, error), ttl time.Duration) (any, error) {
	started := time.Now()
	v, _, err := runLoader(ctx, c, load, ttl)
	switch {
	case err != nil && c.cachesAbsence(err):
		return leased{v: absence{err}, at: started}, nil
	case err != nil:
		return nil, err
	}
	return leased{v: v, at: started}, nil
}

// renewer keeps a load's leases alive: every LeaseTTL/3 until stop (or
// Close), one lease by its script, several in one pipeline (one round
// trip, one per node on a cluster, however many keys a batch has). A
// renewal is bounded by the attempt timeout on its own, plus the transfer
// allowance of what a batch sends, outside the reliability stack's slots
// (it is no caller's work and must not crowd callers out); one that finds
// its lease gone changes nothing.
type renewer struct {
	cancel context.CancelFunc
	unlink func() bool
	done   chan struct{}
	once   sync.Once
}

// keepLeases starts a renewer of leases[i] on fulls[i].
func (c *Client) keepLeases(ctx context.Context, fulls, leases []string) *renewer {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &renewer{cancel: cancel, unlink: context.AfterFunc(c.bg, cancel), done: make(chan struct{})}
	bound := c.rel.AttemptTimeout()
	if len(fulls) > 1 {
		size := 0
		for i, full := range fulls {
			size += len(full) + len(leases[i]) + 128 // the script's body and framing
		}
		bound += guard.TransferTime(size)
	}
	go func() {
		defer close(r.done)
		ctxwait.Every(rctx, max(c.leaseTTL/3, time.Millisecond), func() bool {
			actx, cancel := context.WithTimeout(rctx, bound)
			defer cancel()
			if len(fulls) == 1 {
				_, _ = c.l2.Renew(actx, fulls[0], leases[0], c.leaseTTL)
			} else {
				_, _ = c.l2.RenewMany(actx, fulls, leases, c.leaseTTL)
			}
			return true
		})
	}()
	return r
}

// stop ends the renewer and waits for it; a nil renewer does nothing.
func (r *renewer) stop() {
	if r == nil {
		return
	}
	r.once.Do(func() {
		r.unlink()
		r.cancel()
		<-r.done
	})
}

// releaseLease gives the key back (deletes the lease if still there),
// within one attempt's bound whatever ctx says; the lease expires anyway.
// On the auto-pipelined stream it goes after the Acquire that planted the
// lease, and a fence keeps it after one whose connection failed.
func (c *Client) releaseLease(ctx context.Context, full, lease string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.rel.AttemptTimeout())
	defer cancel()
	_, _ = c.l2.Release(rctx, full, lease)
}

// leaseLoadBatch is loadBatch with leases: one pipeline plants a lease on
// each key, or finds its entry, or another's lease (a second one plants
// leases over the entries found that could not be opened, to replace
// them); the loader runs once for every key without an entry, and one
// pipeline stores each value whose lease still holds.
func leaseLoadBatch[T any](ctx context.Context, c *Client, keys []string, loader func(context.Context, []string) (map[string]T, error)) (map[string]any, error) {
	fulls := make([]string, len(keys))
	leases := make([]string, len(keys))
	replace := make([]string, len(keys))
	pending := make([]int, len(keys))
	for i, k := range keys {
		fulls[i], leases[i], pending[i] = c.fullKey(k), l2.NewLeaseFor(c.leaseTTL), i
	}
	res := make(map[string]any, len(keys))
	var load []string
	var mine []int // indexes of keys whose lease this call holds
	for pass := 0; len(pending) > 0; pass++ {
		tickets := make([]ticket, len(pending))
		for j, i := range pending {
			tickets[j] = c.ticket(keys[i])
		}
		// Before the scripts are sent: an entry one of them finds was
		// current when Redis ran it, at this time or later (taken after the
		// reply, a Delete that returned meanwhile would go unseen by a caller
		// joining the flight after it).
		acquireAt := time.Now()
		states, entries, lefts, errs := c.acquireMany(ctx, pick(fulls, pending), pick(leases, pending), pick(replace, pending))
		var again []int
		for j, i := range pending {
			k := keys[i]
			if errs[j] != nil && errors.Is(errs[j], ErrOutcomeUnknown) {
				c.releaseLease(ctx, fulls[i], leases[i]) // planted perhaps, its reply lost
			}
			if errs[j] == nil && states[j] == l2.LeaseFoundEntry {
				v, err := openFound[T](ctx, c, k, entries[j], lefts[j], tickets[j])
				if err == nil {
					res[k] = leased{v: v, at: acquireAt}
					continue
				}
				if c.negTTL > 0 && isNegativeHit(err) { // cached "not found"
					res[k] = leased{v: absence{err}, at: acquireAt}
					continue
				}
				if pass == 0 && loadable(err) { // replace what cannot be opened
					replace[i] = l2.Digest(entries[j])
					again = append(again, i)
					continue
				}
			}
			load = append(load, k)
			if errs[j] == nil && states[j] == l2.LeaseAcquired {
				mine = append(mine, i)
			}
		}
		pending = again
	}
	if len(load) == 0 {
		return res, nil
	}
	r := c.keepLeases(ctx, pick(fulls, mine), pick(leases, mine))
	started := time.Now()
	vals, ttl, err := runLoader(ctx, c, func(ctx context.Context) (map[string]T, error) { return loader(ctx, load) }, c.defaultTTL)
	if err != nil {
		r.stop()
		for _, i := range mine {
			c.releaseLease(ctx, fulls[i], leases[i])
		}
		return nil, err
	}
	for _, k := range load {
		if v, ok := vals[k]; ok {
			res[k] = leased{v: v, at: started} // until its store succeeds, below
		} else if c.negTTL > 0 { // left out by the loader: not found, cached
			res[k] = leased{v: absence{ErrNotFound}, at: started}
		}
	}
	var items []batchItem
	for _, i := range mine {
		if lr, ok := res[keys[i]].(leased); ok {
			items = append(items, batchItem{key: keys[i], v: lr.v, lease: leases[i]})
		} else { // left out by the loader: nothing to cache, give the key back
			c.releaseLease(ctx, fulls[i], leases[i])
		}
	}
	out, ats, err := c.landBatch(ctx, items, ttl, fillLease)
	r.stop() // the fills answered
	if err != nil {
		return nil, err
	}
	for j, it := range items {
		if out[j] == landStored {
			res[it.key] = leased{v: it.v, at: ats[j]}
		}
	}
	return res, nil
}

// acquireMany plants leases on fulls in one pipeline under the reliability
// stack (l2.AcquireMany); a refusal before any attempt is every key's
// error.
func (c *Client) acquireMany(ctx context.Context, fulls, leases, replace []string) (states []l2.LeaseState, entries [][]byte, lefts []time.Duration, errs []error) {
	if err := c.redis(ctx, "lease", 0, func(ctx context.Context) error {
		states, entries, lefts, errs = c.l2.AcquireMany(ctx, fulls, leases, c.leaseTTL, replace)
		return errors.Join(errs...)
	}); err != nil && errs == nil {
		errs = slices.Repeat([]error{err}, len(fulls))
		states, entries, lefts = make([]l2.LeaseState, len(fulls)), make([][]byte, len(fulls)), make([]time.Duration, len(fulls))
	}
	return states, entries, lefts, errs
}

// pick returns s[i] for each i in idx.
func pick[E any](s []E, idx []int) []E {
	out := make([]E, len(idx))
	for j, i := range idx {
		out[j] = s[i]
	}
	return out
}
