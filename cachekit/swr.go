package cachekit

import (
	"context"
	"errors"
	"time"

	"github.com/cachekit-io/cachekit-go/cachekit/internal/flight"
	"github.com/cachekit-io/cachekit-go/cachekit/internal/observe"
	"github.com/cachekit-io/cachekit-go/l1"
	"github.com/cachekit-io/cachekit-go/l2"
)

// getSWR is GetOrLoad's read when SWR is on: it reads like Get, learns the
// entry's expiry from L2 when it came from there, and starts a background
// refresh when the entry is due.
func getSWR[T any](ctx context.Context, c *Client, key string, ttl time.Duration, load func(context.Context) (T, error)) (T, observe.Result, error) {
	var zero, v T
	var ver l1.Version
	if c.l1 != nil {
		ver = c.l1.Version(key)
	}
	s := getScratch()
	var served []byte // the sealed entry read: a refresh replaces exactly these bytes, or nothing
	payload, tier, remaining, err := c.loadTTL(ctx, s, key, true, &served)
	r := observe.Result{Tier: observe.TierNamed(string(tier)), Size: len(payload)}
	if err == nil {
		if derr := c.decode(payload, &v); derr != nil {
			err = &EntryError{Tier: tier, KeyDigest: c.keyDigest(key), Err: derr}
		}
	}
	putScratch(s)
	if err != nil {
		return zero, r, err
	}
	now := c.now()
	if tier == TierL2 {
		c.swr.Observe(key, now, remaining, ttl)
		if c.l1 != nil {
			ver = c.l1.Version(key) // after our own backfill
		}
	}
	if c.swr.Claim(key, now, ttl) {
		if tier == TierL1 {
			// The bytes L1 served; if a write replaced them since, the
			// version check drops the refresh anyway.
			served, _ = c.l1.Get(key)
		}
		c.obs.Event(ctx, "cachekit.swr_refresh")
		startRefresh(ctx, c, key, ttl, ver, served, load)
	}
	return v, r, nil
}

// startRefresh reloads key in the background. It keeps ctx's values but
// not its cancellation; it ends after LoadTimeout, and Close cancels it
// (and waits for it).
func startRefresh[T any](ctx context.Context, c *Client, key string, ttl time.Duration, ver l1.Version, served []byte, load func(context.Context) (T, error)) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.loadTimeout)
	stop := context.AfterFunc(c.bg, cancel)
	started := c.swr.Go(func() {
		defer stop()
		defer cancel()
		err := refresh(rctx, c, key, ttl, ver, served, load)
		c.swr.Done(key, c.now(), err != nil)
		c.obs.SWRRefresh(rctx, err == nil)
		if err != nil && c.bg.Err() == nil {
			c.warn("SWR refresh failed; serving the stale entry until it expires", key, err)
		}
	})
	if !started { // Close is waiting: give the claim back
		stop()
		cancel()
		c.swr.Done(key, c.now(), false)
	}
}

// refresh reloads key, read top to bottom as a GetOrLoad load: its claim
// is the entry that was served (served, compared by digest and, read
// before the loader runs, its absolute expiry, in the script that writes:
// a Set, Delete, lease or any other write of the key since then makes the
// refresh a no-op, whoever made it, even one of the same bytes); it runs
// the loader, and lands its value (or, with negative caching, its "not
// found" as a negative entry) by that compare, then in L1 as Set does (and
// not at all if this process saw a write, delete or invalidation of the
// key since the read).
func refresh[T any](ctx context.Context, c *Client, key string, ttl time.Duration, ver l1.Version, served []byte, load func(context.Context) (T, error)) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = flight.Panicked(r)
		}
	}()
	if served == nil {
		return nil // the entry left L1 before it could be read back: nothing to compare
	}
	f := fill{kind: fillDigest, replace: l2.Digest(served), ver: ver}
	if c.l2 != nil {
		err := c.redis(ctx, "ttl", 0, func(ctx context.Context) (err error) {
			f.expiry, err = c.l2.ExpireTime(ctx, c.fullKey(key))
			return err
		})
		switch {
		case errors.Is(err, l2.ErrNotFound):
			return nil // gone since it was served: nothing to refresh
		case err != nil && !l2.Declined(err):
			return err
		} // a server without PEXPIRETIME: the digest alone is compared
	}
	res, ttl, err := loadStep(ctx, c, load, ttl)
	_, err = landKey(ctx, c, key, res, ttl, f, err)
	return err
}
