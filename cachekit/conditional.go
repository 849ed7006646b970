package cachekit

import (
	"context"
	"time"

	"github.com/cachekit-io/cachekit-go/cachekit/internal/observe"
	"github.com/cachekit-io/cachekit-go/protocol"
)

// SetIfAbsent stores value under key for ttl only if key is not cached
// (Redis SET NX; in L1-only mode, not in L1; a lease or a negative entry,
// a cached "not found", counts as not cached), and reports whether it
// stored it. When it did, L1 takes the value as SetWithTTL's does (dropped instead
// if another write, delete or invalidation of key overlapped); when it did
// not, nothing changes. Reliability.FailOpen does not absorb its errors: a
// caller deciding on stored must not be handed a guess. Stored is
// answered only to the caller whose bytes went in: with encryption an
// attempt whose reply was lost is resent, and a resend that finds its own
// sealed bytes (a fresh nonce: no one else writes them) answers stored;
// without encryption identical bytes prove nothing, so such an attempt is
// not resent and the error matches ErrOutcomeUnknown.
func (c *Client) SetIfAbsent(ctx context.Context, key string, value any, ttl time.Duration) (stored bool, err error) {
	key = c.local(key)
	ctx, oc := c.obs.Begin(ctx, observe.OpSetIfAbsent, key, 1)
	stored, r, err := c.setCond(ctx, key, value, ttl, false)
	c.obs.End(ctx, oc, r, err)
	return stored, err
}

// SetIfPresent stores value under key for ttl only if key is cached
// (Redis SET XX; in L1-only mode, in L1; a lease or a negative entry is
// not cached), and reports whether it stored it.
// L1 and errors are as for SetIfAbsent; when Redis does not hold key, this
// process's L1 drops it too.
func (c *Client) SetIfPresent(ctx context.Context, key string, value any, ttl time.Duration) (stored bool, err error) {
	key = c.local(key)
	ctx, oc := c.obs.Begin(ctx, observe.OpSetIfPresent, key, 1)
	stored, r, err := c.setCond(ctx, key, value, ttl, true)
	c.obs.End(ctx, oc, r, err)
	return stored, err
}

func (c *Client) setCond(ctx context.Context, key string, value any, ttl time.Duration, ifExists bool) (bool, observe.Result, error) {
	if c.closed.Load() {
		return false, observe.Result{}, ErrClosed
	}
	ttl, err := protocol.NormalizeTTL(ttl)
	if err != nil {
		return false, observe.Result{}, err
	}
	sealed, err := c.sealValue(ctx, key, value)
	if err != nil {
		return false, observe.Result{}, err
	}
	if c.l2 == nil {
		// L1 only: the check and the store are one step under the key's
		// write lock, against every other writer in this process.
		if !c.l1.SetIfPresence(key, sealed, ttl, ifExists) {
			return false, observe.Result{Tier: observe.L1, Out: observe.NotStored}, nil
		}
		return true, observe.Result{Tier: observe.L1, Size: len(sealed)}, nil
	}
	t := c.ticket(key)
	full := c.fullKey(key)
	var ok bool
	set := func(ctx context.Context, resend bool) (err error) {
		// A resent SET NX of sealed bytes (a fresh nonce: no one else
		// writes them) that finds the key holding exactly its bytes
		// answers stored: its first attempt stored them and only the
		// reply was lost.
		ok, err = c.l2.SetCond(ctx, full, sealed, ttl, ifExists, resend)
		return err
	}
	err = c.ordered([]string{key}, func() error {
		if ifExists || c.enc == nil {
			// XX keeps its condition when it lands, and bytes others may
			// write tell nothing: a write of unknown outcome is not resent.
			return c.redis(ctx, "set", len(sealed), func(ctx context.Context) error { return set(ctx, false) })
		}
		return c.redisResend(ctx, "set", len(sealed), set)
	})
	if err != nil {
		c.dropL1(key) // L2 state unknown
		return false, observe.Result{Tier: observe.L2}, err
	}
	if !ok {
		if ifExists {
			c.dropL1(key) // Redis does not hold key
		}
		return false, observe.Result{Tier: observe.L2, Out: observe.NotStored}, nil
	}
	c.accepted(key, t, sealed, ttl, false)
	return true, observe.Result{Tier: observe.L2, Size: len(sealed)}, nil
}
