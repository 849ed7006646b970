package cachekit

// The write path: Set seals (encode -> envelope -> AAD -> EncryptNow,
// entry.go) and writes L2 then L1, L1 only if no other write, delete or
// invalidation of the key overlapped the Redis round trip.

import (
	"context"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/observe"
	"github.com/cachekit-io/cachekit-go/protocol"
)

// Set stores value under key for the Client's DefaultTTL.
func (c *Client) Set(ctx context.Context, key string, value any) error {
	ctx, oc := c.obs.Begin(ctx, observe.OpSet, key, 1)
	r, err := c.setWithTTL(ctx, key, value, c.defaultTTL)
	c.obs.End(ctx, oc, r, err)
	return err
}

// SetWithTTL stores value under key for ttl. ttl must be positive and at
// most 30 days; sub-second TTLs are rounded up to one second. The value is
// encoded with msgpack (canonical msgpack in interop mode). L2 is written
// first, then L1 (only if no other write, delete or invalidation of key
// overlapped; otherwise L1 drops key). Once SetWithTTL returns nil, a Get in
// this process returns the new value or a later one, with two exceptions:
// under Reliability.FailOpen a nil return may mean Redis was unreachable and
// the write was absorbed (ReliabilityStats counts it as Degraded), and in
// L1-only mode L1 admission may reject it (Stats counts L1Rejected).
func (c *Client) SetWithTTL(ctx context.Context, key string, value any, ttl time.Duration) error {
	ctx, oc := c.obs.Begin(ctx, observe.OpSetWithTTL, key, 1)
	r, err := c.setWithTTL(ctx, key, value, ttl)
	c.obs.End(ctx, oc, r, err)
	return err
}

func (c *Client) setWithTTL(ctx context.Context, key string, value any, ttl time.Duration) (observe.Result, error) {
	if c.closed.Load() {
		return observe.Result{}, ErrClosed
	}
	ttl, err := protocol.NormalizeTTL(ttl)
	if err != nil {
		return observe.Result{}, err
	}
	stored, err := c.sealValue(ctx, key, value)
	if err != nil {
		return observe.Result{}, err
	}
	r, err := c.store(ctx, key, stored, ttl)
	r.Size = len(stored)
	return r, err
}

// store writes sealed bytes to L2 then L1. The L1 write is conditional
// (see ticket): if another write, a delete or an invalidation of key
// overlapped the Redis round trip, L1 drops the key instead, since Redis may
// hold the other value. Under FailOpen a failed L2 write is absorbed (and L1
// dropped, so neither tier has the new value).
func (c *Client) store(ctx context.Context, key string, stored []byte, ttl time.Duration) (observe.Result, error) {
	t := c.ticket(key)
	r := observe.Result{Tier: observe.L1}
	if c.l2 != nil {
		r.Tier = observe.L2
		if err := c.writeL2(ctx, key, stored, ttl); err != nil {
			c.dropL1(key) // L2 state unknown: never serve the old value from L1
			return c.writeFailed(ctx, key, err)
		}
	}
	c.accepted(key, t, stored, ttl)
	return r, nil
}

// accepted is what follows a write Redis accepted (in L1-only mode, the
// write itself): L1 takes the sealed bytes if nothing wrote, deleted or
// invalidated key since t (else it drops key), and SWR learns the new
// expiry. Set, MSet and SetIfAbsent/SetIfPresent all end here.
func (c *Client) accepted(key string, t ticket, stored []byte, ttl time.Duration) {
	if c.l1 != nil {
		c.admit(key, t, stored, ttl, true)
	}
	if c.swr != nil {
		c.swr.Rewritten(key, c.now(), ttl)
	}
}

// writeL2 stores sealed bytes in Redis under the reliability stack and, with
// invalidation on, publishes the write in the same round trip. A failed
// publish is a warning: the value is stored.
func (c *Client) writeL2(ctx context.Context, key string, stored []byte, ttl time.Duration) error {
	full := c.fullKey(key)
	err := c.rel.DoSized(ctx, "set", len(stored), func(ctx context.Context) error {
		if c.inv == nil {
			return c.l2.Set(ctx, full, stored, ttl)
		}
		return c.l2.SetPublish(ctx, full, stored, ttl, c.inv.channel, c.publishMsg(key))
	})
	if isPublishErr(err) {
		c.publishFailed("Set", []string{key}, err)
		return nil
	}
	if err != nil {
		c.stats.l2Errors.Add(1)
	}
	return err
}
