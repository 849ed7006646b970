package cachekit

import (
	"context"
	"errors"
	"time"

	"github.com/cachekit-io/cachekit-go/cachekit/internal/observe"
	"github.com/cachekit-io/cachekit-go/l2"
	"github.com/cachekit-io/cachekit-go/protocol"
)

// Delete removes keys from L2 and then from L1, whatever L2 answered, so
// this process never serves a deleted value from L1. The keys go to Redis
// in one round trip (a pipeline with a DEL per key), which also carries
// their invalidation messages when Options.Invalidation is on (they follow
// in a second round trip on a cluster). Deleting a key that is not cached
// is not an error.
func (c *Client) Delete(ctx context.Context, keys ...string) error {
	_, err := c.deleteCounted(ctx, keys)
	return err
}

// deleteCounted is Delete, observed, returning how many keys held an entry
// in Redis (Raw.Delete reports it).
func (c *Client) deleteCounted(ctx context.Context, keys []string) (int64, error) {
	keys = c.names.Locals(keys)
	key := "" // a span names one key by its digest, several by their number
	if len(keys) == 1 {
		key = keys[0]
	}
	ctx, oc := c.obs.Begin(ctx, observe.OpDelete, key, len(keys))
	n, err := c.delete(ctx, keys)
	c.obs.End(ctx, oc, c.tierAsked(), err)
	return n, err
}

func (c *Client) delete(ctx context.Context, keys []string) (int64, error) {
	if c.closed.Load() {
		return 0, ErrClosed
	}
	var n int64
	var err error
	if c.l2 != nil && len(keys) > 0 {
		err = c.ordered(keys, func() error { return c.redis(ctx, "del", 0, c.delCall(keys, &n)) })
	}
	for _, k := range keys {
		c.dropL1(k)
	}
	return n, err
}

// Touch sets the time to live of key to ttl (Redis PEXPIRE) without
// reading or rewriting its value, and returns ErrNotFound when key is not
// cached (a negative entry is not extended: it reads as absent, as for
// Exists). This process's L1 copy takes the new expiry (or is dropped, when
// another write of key overlapped). Other instances' L1 copies keep their
// expiry, except with Options.Invalidation on, where Redis reports the
// PEXPIRE and they drop their copies.
func (c *Client) Touch(ctx context.Context, key string, ttl time.Duration) error {
	key = c.local(key)
	ctx, oc := c.obs.Begin(ctx, observe.OpTouch, key, 1)
	err := c.touch(ctx, key, ttl)
	c.obs.End(ctx, oc, c.tierAsked(), err)
	return err
}

// tierAsked is the result of a command that asks Redis, or L1 without it.
func (c *Client) tierAsked() observe.Result {
	if c.l2 != nil {
		return observe.Result{Tier: observe.L2}
	}
	return observe.Result{Tier: observe.L1}
}

func (c *Client) touch(ctx context.Context, key string, ttl time.Duration) error {
	if c.closed.Load() {
		return ErrClosed
	}
	ttl, err := protocol.NormalizeTTL(ttl)
	if err != nil {
		return err
	}
	if c.l2 == nil {
		if !c.l1.ExtendLatest(key, ttl) {
			return ErrNotFound
		}
		return nil
	}
	t := c.ticket(key)
	var found bool
	err = c.redis(ctx, "expire", 0, func(ctx context.Context) error {
		var err error
		found, err = c.l2.Expire(ctx, c.fullKey(key), ttl)
		return err
	})
	switch {
	case err != nil:
		c.dropL1(key) // the expiry in Redis is unknown
		return err
	case !found:
		c.dropL1(key)
		return ErrNotFound
	}
	// The L1 copy takes the new expiry only if nothing wrote key since t
	// (Extend re-stores the value L1 holds now, read under its write
	// lock); otherwise it is dropped, which also turns away a backfill
	// still carrying the old TTL: L1 never outlives Redis. Under
	// Invalidation's fallback it is dropped: extending it would stretch
	// its lifetime bound.
	if c.l1 != nil && !(t.ok && t.life == 0 && c.l1.Extend(key, ttl-c.now().Sub(t.at), t.ver)) {
		c.dropL1(key)
	}
	if c.swr != nil {
		c.swr.Rewritten(key, c.now(), ttl)
	}
	return nil
}

// DeleteLocal drops keys from this process's L1 only (Redis and other
// instances are untouched): the next read of each goes to Redis. It is a
// no-op without L1.
func (c *Client) DeleteLocal(keys ...string) {
	for _, k := range keys {
		c.dropL1(c.local(k))
	}
}

// FlushLocal empties this process's L1 (Redis and other instances are
// untouched). It is a no-op without L1.
func (c *Client) FlushLocal() {
	if c.l1 != nil {
		c.l1.Clear()
	}
	if c.swr != nil {
		c.swr.ForgetAll()
	}
}

// Exists reports whether key is cached in L1 or L2. It does not open the
// entry: a key holding a negative entry (a cached "not found") or a lease
// is absent to it, told by 12 bytes and a length that it cannot
// authenticate (bytes forged to look like one also read as absent).
func (c *Client) Exists(ctx context.Context, key string) (bool, error) {
	key = c.local(key)
	ctx, oc := c.obs.Begin(ctx, observe.OpExists, key, 1)
	ok, r, err := c.exists(ctx, key)
	c.obs.End(ctx, oc, r, err)
	return ok, err
}

func (c *Client) exists(ctx context.Context, key string) (bool, observe.Result, error) {
	if c.closed.Load() {
		return false, observe.Result{}, ErrClosed
	}
	if c.l1 != nil {
		if v, ok := c.l1.Get(key); ok {
			return !isNegativeEntry(v), observe.Result{Tier: observe.L1}, nil
		}
	}
	if c.l2 == nil {
		return false, observe.Result{Tier: observe.L1}, nil
	}
	var ok bool
	err := c.redis(ctx, "exists", 0, func(ctx context.Context) error {
		var err error
		ok, err = c.l2.Exists(ctx, c.fullKey(key))
		return err
	})
	return ok, observe.Result{Tier: observe.L2}, err
}

// TTL returns the remaining lifetime of key in L2. It returns ErrNotFound
// for a missing key, a negative entry or a lease (read as Exists reads
// them); in L1-only mode it returns ErrNotFound as well, since L1 does not
// expose expiry times.
func (c *Client) TTL(ctx context.Context, key string) (time.Duration, error) {
	key = c.local(key)
	ctx, oc := c.obs.Begin(ctx, observe.OpTTL, key, 1)
	d, err := c.ttl(ctx, key)
	c.obs.End(ctx, oc, c.tierAsked(), err)
	return d, err
}

func (c *Client) ttl(ctx context.Context, key string) (time.Duration, error) {
	if c.closed.Load() {
		return 0, ErrClosed
	}
	if c.l2 == nil {
		return 0, ErrNotFound
	}
	var d time.Duration
	err := c.redis(ctx, "ttl", 0, func(ctx context.Context) error {
		var err error
		d, err = c.l2.TTL(ctx, c.fullKey(key))
		return err
	})
	if errors.Is(err, l2.ErrNotFound) {
		return 0, ErrNotFound
	}
	return d, err
}
