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

// leases reports whether GetOrLoad plants leases: with Redis, outside
// interop mode (interop keys are read by other SDKs, which know no
// placeholder; they take the family's {key}:lock instead).
func (c *Client) leases() bool { return c.l2 != nil && !c.interop }

// claim is what a load holds on its key before its loader runs: the fill
// its result may be stored by (under the lease it planted, interop mode's
// compare and lock, L1 alone, or not at all), which also says what to give
// back when nothing is stored; or prior, the result of a load that stored
// the key meanwhile (or its cached "not found"), which is this load's
// result: nothing is loaded.
type claim[V any] struct {
	fill  fill
	prior *loaded[V]
}

// claimKey claims key for a GetOrLoad load by the Client's mode: degraded
// (FailOpen found Redis failing), nothing to claim, the result is not
// stored; with leases, leaseClaim; else (L1 only, interop mode) lockClaim.
func claimKey[T any](ctx context.Context, c *Client, key string, degraded bool) (claim[T], error) {
	switch {
	case degraded:
		return claim[T]{fill: fill{kind: fillNone}}, nil
	case c.leases():
		return leaseClaim[T](ctx, c, key)
	}
	return lockClaim[T](ctx, c, key)
}

// leaseClaim plants a lease on key (its fill stores the result while the
// lease holds; its renewer keeps it alive until then), or finds the entry
// another Client stored meanwhile, or waits for the Client whose lease is
// there, or takes over a lease its holder abandoned. A lease Redis will not
// plant (over maxmemory with noeviction, an ACL without EVAL), FailOpen
// with Redis failing, and another's lease this Client does not wait for
// (any longer) mean loading without storing (fillNone).
func leaseClaim[T any](ctx context.Context, c *Client, key string) (claim[T], error) {
	unstored := claim[T]{fill: fill{kind: fillNone}}
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
				c.warn("a load could not plant a lease (Redis refused the script); loading without storing", key, err)
				return unstored, nil
			}
			rerr := c.readErr(ctx, key, err)
			if out, _ := errClasses.Outcome(rerr); out == observe.Degraded {
				return unstored, nil // FailOpen: Redis is failing
			}
			return claim[T]{}, rerr
		}
		switch state {
		case l2.LeaseAcquired:
			r := c.keepLeases(ctx, []string{full}, []string{lease})
			return claim[T]{fill: fill{kind: fillLease, lease: lease, renewer: r}}, nil
		case l2.LeaseFoundEntry:
			v, err := openFound[T](ctx, c, key, entry, left, t)
			if err == nil || c.negTTL > 0 && isNegativeHit(err) { // a value, or another load's cached "not found"
				res, err := result(c, v, err, at)
				return claim[T]{prior: &res}, err
			}
			if !loadable(err) || replace != "" {
				return claim[T]{}, err
			}
			replace = l2.Digest(entry) // replace what cannot be opened
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
				return unstored, nil
			}
			if !waited {
				waited = true
				c.stats.LeaseWaits.Add(1)
				c.obs.Event(ctx, "cachekit.lock_wait", attribute.String("cachekit.lock", "lease"))
			}
			if err := c.leaseWaits.Await(ctx, key, wake, flight.Patience(wait, left, c.inv.Wakes())); err != nil {
				return claim[T]{}, err
			}
		}
	}
}

// lockClaim claims key without a lease: in L1-only mode (L1 is the store)
// and in interop mode, whose keys are shared with other SDKs, which know
// no placeholder: there the fill stores only where the key still holds
// nothing (SET NX), or over exactly the entry that could not be opened,
// and only while no write of this Client's began since the claim
// (keyorder.go); with Options.FleetSingleFlight it takes the family's
// {key}:lock first (released once landed), or waits for its holder's
// value. A caller that missed just before the previous flight stored its
// value starts a new flight: it looks again before loading, and a value
// found is the result.
func lockClaim[T any](ctx context.Context, c *Client, key string) (claim[T], error) {
	var seq uint64
	if c.order != nil {
		seq = c.order.seq(key)
	}
	replace, found, err := lookAgain[T](ctx, c, key)
	if found.prior != nil || err != nil {
		return found, err
	}
	f := fill{kind: fillPlain}
	if c.l2 != nil {
		f = fill{kind: fillAbsent, seq: seq}
		if c.fleetWait {
			var held claim[T]
			unlock, ok := c.lockOrWait(ctx, key, func() bool {
				v, _, err := getInner[T](ctx, c, key)
				if err == nil {
					res, _ := result(c, v, nil, time.Time{})
					held.prior = &res
				}
				return err == nil
			})
			if ok {
				return held, nil
			}
			f.unlock = sync.OnceFunc(unlock) // once landed, or given back
			// The lock may have been free because its holder had just
			// stored: look once more before loading.
			if replace, found, _ = lookAgain[T](ctx, c, key); found.prior != nil {
				unlock()
				return found, nil
			}
		}
		f.replace = replace
	}
	return claim[T]{fill: f}, nil
}

// lookAgain reads key as a T before a load: found when it is there (a
// value, or a cached "not found" this Client does not load over); err when
// the read failed for a reason a load does not mend; else, for an entry in
// Redis that cannot be opened, replace is the digest of its bytes (the
// load replaces exactly those).
func lookAgain[T any](ctx context.Context, c *Client, key string) (replace string, found claim[T], err error) {
	v, _, err := getInner[T](ctx, c, key)
	switch {
	case err == nil || isNegativeHit(err) && !c.needsLoad(err):
		res, err := result(c, v, err, time.Time{})
		return "", claim[T]{prior: &res}, err
	case !c.needsLoad(err):
		return "", claim[T]{}, err
	}
	var ee *EntryError
	if c.l2 != nil && errors.As(err, &ee) && ee.Tier == TierL2 {
		var raw []byte
		if rerr := c.readL2(ctx, c.fullKey(key), false, &raw, nil); rerr == nil {
			replace = l2.Digest(raw)
		}
	}
	return replace, claim[T]{}, nil
}

// lockOrWait takes interop mode's {key}:lock (SET NX PX LeaseTTL with a
// fresh token, under the reliability stack: a retry finds its own token),
// the family's convention for keys other SDKs read, or, when another
// holds it, waits for its holder's value by polling probe (5 ms doubling
// to 100 ms) until probe finds it (found: probe keeps it), ctx ends, or
// the lock would have expired. When the lock is taken, unlock releases it (within one
// attempt, whatever ctx says; the lock expires anyway); otherwise, and
// when it could not be taken (warned: the load goes on without it), it is
// a no-op.
func (c *Client) lockOrWait(ctx context.Context, key string, probe func() bool) (unlock func(), found bool) {
	lockKey, token, noop := c.fullKey(key)+":lock", l2.NewToken(), func() {}
	var ok bool
	err := c.do(ctx, "lock", 0, func(ctx context.Context) (err error) {
		ok, err = c.l2.TryLock(ctx, lockKey, token, c.leaseTTL)
		return err
	})
	if err != nil {
		c.warn("a load could not take the {key}:lock; loading without it", key, err)
		return noop, false
	}
	if ok {
		return func() {
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.rel.AttemptTimeout())
			defer cancel()
			_ = c.do(uctx, "unlock", 0, func(ctx context.Context) error {
				_, err := c.l2.Unlock(ctx, lockKey, token)
				return err
			})
		}, false
	}
	c.obs.Event(ctx, "cachekit.lock_wait", attribute.String("cachekit.lock", "redis"))
	deadline := c.now().Add(c.leaseTTL)
	for wait := 5 * time.Millisecond; c.now().Before(deadline); wait = min(wait*2, 100*time.Millisecond) {
		if !ctxwait.Sleep(ctx, wait) {
			return noop, false
		}
		if probe() {
			return noop, true
		}
	}
	return noop, false
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

// claimBatch claims keys for a batch load by the Client's mode: with
// leases, one pipeline plants a lease on each key, or finds its entry, or
// another's lease (a second one plants leases over the entries found that
// could not be opened, to replace them); without, every key is loaded and
// stored where its key holds nothing (interop mode), or in L1.
func claimBatch[T any](ctx context.Context, c *Client, keys []string) batchClaim[T] {
	cl := batchClaim[T]{prior: make(map[string]loaded[T], len(keys)), kind: fillPlain}
	switch {
	case c.leases():
		cl.kind = fillLease
	case c.l2 != nil:
		cl.kind = fillAbsent // interop mode: never over a write made while the loader ran
		fallthrough
	default:
		cl.load = keys
		return cl
	}
	fulls := make([]string, len(keys))
	leases := make([]string, len(keys))
	replace := make([]string, len(keys))
	pending := make([]int, len(keys))
	for i, k := range keys {
		fulls[i], leases[i], pending[i] = c.fullKey(k), l2.NewLeaseFor(c.leaseTTL), i
	}
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
				if err == nil || c.negTTL > 0 && isNegativeHit(err) { // a value, or a cached "not found"
					if res, err := result(c, v, err, acquireAt); err == nil {
						cl.prior[k] = res
						continue
					}
				}
				if pass == 0 && loadable(err) { // replace what cannot be opened
					replace[i] = l2.Digest(entries[j])
					again = append(again, i)
					continue
				}
			}
			cl.load = append(cl.load, k)
			if errs[j] == nil && states[j] == l2.LeaseAcquired {
				mine = append(mine, i)
			}
		}
		pending = again
	}
	if len(mine) > 0 {
		cl.leases = make(map[string]string, len(mine))
		for _, i := range mine {
			cl.leases[keys[i]] = leases[i]
		}
		cl.renewer = c.keepLeases(ctx, pick(fulls, mine), pick(leases, mine))
	}
	return cl
}

// keepLeases renews leases[i] on fulls[i] every LeaseTTL/3 until the
// Repeater it returns is stopped (or Close): one lease by its script,
// several in one pipeline (one round trip, one per node on a cluster,
// however many keys a batch has). A renewal is bounded by the attempt
// timeout on its own, plus the transfer allowance of what a batch sends,
// outside the reliability stack's slots (it is no caller's work and must
// not crowd callers out); one that finds its lease gone changes nothing.
func (c *Client) keepLeases(ctx context.Context, fulls, leases []string) *ctxwait.Repeater {
	bound := c.rel.AttemptTimeout()
	if len(fulls) > 1 {
		size := 0
		for i, full := range fulls {
			size += len(full) + len(leases[i]) + 128 // the script's body and framing
		}
		bound += guard.TransferTime(size)
	}
	return ctxwait.Go(ctx, c.bg, max(c.leaseTTL/3, time.Millisecond), func(rctx context.Context) {
		actx, cancel := context.WithTimeout(rctx, bound)
		defer cancel()
		if len(fulls) == 1 {
			_, _ = c.l2.Renew(actx, fulls[0], leases[0], c.leaseTTL)
		} else {
			_, _ = c.l2.RenewMany(actx, fulls, leases, c.leaseTTL)
		}
	})
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
