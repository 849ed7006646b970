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
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/cachekit-io/cachekit-go/internal/flight"
	"github.com/cachekit-io/cachekit-go/internal/observe"
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
// Client whose lease is there. Holding the lease it runs the loader and
// stores the result while the lease holds.
func leaseLoad[T any](ctx context.Context, c *Client, key string, ttl time.Duration, load func(context.Context) (T, error)) (any, error) {
	full := c.fullKey(key)
	lease := l2.NewLease()
	replace := ""                               // digest of an entry that failed to open
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
		err := c.redis(ctx, "lease", 0, func(ctx context.Context) error {
			var err error
			state, entry, left, err = c.l2.Acquire(ctx, full, lease, c.leaseTTL, replace)
			return err
		})
		if wake != nil && (err != nil || state != l2.LeaseHeld) {
			c.leaseWaits.Remove(key, wake)
		}
		if err != nil {
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
			if !loadable(err) || replace != "" {
				return nil, err
			}
			replace = l2.Digest(entry) // replace what cannot be opened
			continue
		case l2.LeaseHeld:
			// Its holder renews it every third of LeaseTTL: one with less
			// than half left is abandoned (a holder that could neither store
			// nor release it), not waited out.
			abandoned := left > 0 && left < c.leaseTTL/2
			if !c.fleetWait || abandoned || !time.Now().Before(giveUp) {
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
// every LeaseTTL/3), then stores the value while the lease holds: L2 by
// l2.Fill, then L1 as a Set does. A loader error gives the key back at once.
func holdAndLoad[T any](ctx context.Context, c *Client, key, full, lease string, ttl time.Duration, load func(context.Context) (T, error)) (any, error) {
	stop := c.keepLeases(ctx, []string{full}, []string{lease})
	started := time.Now()
	v, ttl, err := runLoader(ctx, c, load, ttl)
	stop()
	if err == nil {
		ttl, err = normalizeTTL(ttl)
	}
	var stored []byte
	if err == nil {
		stored, err = c.sealValue(ctx, key, v)
	}
	if err != nil {
		c.releaseLease(ctx, full, lease)
		if _, isLoader := err.(*flight.LoaderError); isLoader || errors.Is(err, ErrClosed) {
			return nil, err
		}
		c.warn("GetOrLoad could not store the loaded value", key, err)
		return v, nil // the caller gets its value; nothing is stored
	}
	t := c.ticket(key)
	at := time.Now()
	var filled bool
	err = c.redis(ctx, "set", len(stored), func(ctx context.Context) error {
		var err error
		filled, err = c.l2.Fill(ctx, full, lease, stored, ttl)
		return err
	})
	switch {
	case err != nil:
		c.dropL1(key)                    // Redis state unknown
		c.releaseLease(ctx, full, lease) // waiters need not wait out the lease
		if errors.Is(err, ErrClosed) {
			return nil, err
		}
		c.warn("GetOrLoad could not store the loaded value", key, err)
	case !filled:
		c.stats.LeasesLost.Add(1) // a write came first: it stays
		return leased{v: v, at: started}, nil
	default:
		c.accepted(key, t, stored, ttl, true)
		return leased{v: v, at: at}, nil
	}
	return v, nil
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

// loadUnstored runs the loader and returns its value without storing it:
// under FailOpen with Redis failing, or while another Client holds the
// key's lease and this one does not wait for it.
func loadUnstored[T any](ctx context.Context, c *Client, load func(context.Context) (T, error), ttl time.Duration) (any, error) {
	started := time.Now()
	v, _, err := runLoader(ctx, c, load, ttl)
	if err != nil {
		return nil, err
	}
	return leased{v: v, at: started}, nil
}

// keepLeases renews each lease on its key (fulls[i], leases[i]), one after
// the other, every LeaseTTL/3 until stop is called (which waits for the
// renewer to end) or Close, so a load longer than the lease stays the only
// one. A renewal that finds its lease gone changes nothing.
func (c *Client) keepLeases(ctx context.Context, fulls, leases []string) (stop func()) {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	unlink := context.AfterFunc(c.bg, cancel) // Close ends it too
	wait := c.l2.KeepLeases(rctx, fulls, leases, c.leaseTTL, c.rel.AttemptTimeout())
	return func() { unlink(); cancel(); wait() }
}

// releaseLease gives the key back (deletes the lease if still there),
// within one attempt's bound whatever ctx says; the lease expires anyway.
func (c *Client) releaseLease(ctx context.Context, full, lease string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.rel.AttemptTimeout())
	defer cancel()
	_, _ = c.l2.Release(rctx, full, lease)
}

// leaseLoadBatch is loadBatch with leases: one pipeline plants a lease on
// each key (or finds its entry, or another's lease), the loader runs once
// for every key without an entry, and one pipeline stores each value whose
// lease still holds.
func leaseLoadBatch[T any](ctx context.Context, c *Client, keys []string, loader func(context.Context, []string) (map[string]T, error)) (map[string]any, error) {
	fulls := make([]string, len(keys))
	leases := make([]string, len(keys))
	tickets := make([]ticket, len(keys))
	for i, k := range keys {
		fulls[i], leases[i], tickets[i] = c.fullKey(k), l2.NewLease(), c.ticket(k)
	}
	var states []l2.LeaseState
	var entries [][]byte
	var lefts []time.Duration
	var errs []error
	acquireAt := time.Now()
	if err := c.redis(ctx, "lease", 0, func(ctx context.Context) error {
		states, entries, lefts, errs = c.l2.AcquireMany(ctx, fulls, leases, c.leaseTTL)
		return errors.Join(errs...)
	}); err != nil && errs == nil { // refused before any attempt: every key loads, unleased
		errs = slices.Repeat([]error{err}, len(keys))
	}
	res := make(map[string]any, len(keys))
	var load []string
	var mine []int // indexes of keys whose lease this call holds
	for i, k := range keys {
		if errs[i] == nil && states[i] == l2.LeaseFoundEntry {
			if v, err := openFound[T](ctx, c, k, entries[i], lefts[i], tickets[i]); err == nil {
				res[k] = leased{v: v, at: acquireAt}
				continue
			}
		}
		load = append(load, k)
		if errs[i] == nil && states[i] == l2.LeaseAcquired {
			mine = append(mine, i)
		}
	}
	if len(load) == 0 {
		return res, nil
	}
	stop := c.keepLeases(ctx, pick(fulls, mine), pick(leases, mine))
	started := time.Now()
	vals, ttl, err := runLoader(ctx, c, func(ctx context.Context) (map[string]T, error) { return loader(ctx, load) }, c.defaultTTL)
	stop()
	if err != nil {
		for _, i := range mine {
			c.releaseLease(ctx, fulls[i], leases[i])
		}
		return nil, err
	}
	for _, k := range load {
		if v, ok := vals[k]; ok {
			res[k] = leased{v: v, at: started} // until its store succeeds, below
		}
	}
	var items []l2.Item
	var at []int // the index in keys of each item
	size := 0
	for _, i := range mine {
		v, ok := vals[keys[i]]
		var stored []byte
		if ok {
			if stored, err = c.sealValue(ctx, keys[i], v); err != nil {
				c.warn("MGetOrLoad could not store a loaded value", keys[i], err)
			}
		}
		if !ok || err != nil { // nothing to cache: give the key back
			c.releaseLease(ctx, fulls[i], leases[i])
			continue
		}
		items, at = append(items, l2.Item{Key: fulls[i], Value: stored, TTL: ttl}), append(at, i)
		size += len(stored)
	}
	if len(items) == 0 {
		return res, nil
	}
	for _, i := range at {
		tickets[i] = c.ticket(keys[i]) // the fill's, taken before it is sent
	}
	fillAt := time.Now()
	var done []bool
	var ferrs []error
	// Under the guard (deadline, breaker, budget): every fill failing is the
	// round trip failing (counted, retried when transient); a single fill's
	// failure is its key's, counted below.
	err = c.redis(ctx, "mset", size, func(ctx context.Context) error {
		done, ferrs = c.l2.FillMany(ctx, items, pick(leases, at))
		if !slices.Contains(ferrs, nil) {
			return ferrs[0]
		}
		return nil
	})
	if ferrs == nil { // refused before any attempt
		done, ferrs = make([]bool, len(items)), slices.Repeat([]error{err}, len(items))
	}
	for j, i := range at {
		switch {
		case ferrs[j] != nil:
			c.dropL1(keys[i])
			if errors.Is(ferrs[j], ErrClosed) {
				return nil, ferrs[j]
			}
			if err == nil {
				c.stats.L2Errors.Add(1)
			}
			c.warn("MGetOrLoad could not store the loaded values", keys[i], ferrs[j])
		case !done[j]:
			c.stats.LeasesLost.Add(1)
		default:
			res[keys[i]] = leased{v: vals[keys[i]], at: fillAt}
			c.accepted(keys[i], tickets[i], items[j].Value, ttl, false) // batches are not refreshed
		}
	}
	return res, nil
}

// pick returns s[i] for each i in idx.
func pick[E any](s []E, idx []int) []E {
	out := make([]E, len(idx))
	for j, i := range idx {
		out[j] = s[i]
	}
	return out
}
