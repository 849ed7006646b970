package cachekit

// The write path: Set seals (encode -> envelope -> AAD -> EncryptNow,
// entry.go) and writes L2 then L1, L1 only if no other write, delete or
// invalidation of the key overlapped the Redis round trip.

import (
	"context"
	"time"

	"github.com/cachekit-io/cachekit-go/cachekit/internal/observe"
	"github.com/cachekit-io/cachekit-go/l1"
	"github.com/cachekit-io/cachekit-go/protocol"
)

// Set stores value under key for the Client's DefaultTTL.
func (c *Client) Set(ctx context.Context, key string, value any) error {
	key = c.local(key)
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
// L1-only mode L1 admission may refuse it: at once when its sealed bytes
// alone exceed L1MaxBytes, or, for a key L1 did not hold, after SetWithTTL
// returned (L1 serves the new value meanwhile and decides in the
// background). Stats counts either in L1Rejected.
func (c *Client) SetWithTTL(ctx context.Context, key string, value any, ttl time.Duration) error {
	key = c.local(key)
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
	c.accepted(key, t, stored, ttl, false)
	return r, nil
}

// accepted is what follows a write Redis accepted (in L1-only mode, the
// write itself): L1 takes the sealed bytes if nothing wrote, deleted or
// invalidated key since t (else it drops key), and SWR learns the new
// expiry (and, when track, for a GetOrLoad's loaded or refreshed value,
// starts tracking the key). Set, MSet, SetIfAbsent/SetIfPresent, the lease fills
// and SWR's refresh all end here.
func (c *Client) accepted(key string, t ticket, stored []byte, ttl time.Duration, track bool) {
	if c.l1 != nil {
		c.admit(key, t, stored, ttl, true)
	}
	switch {
	case c.swr == nil:
	case track:
		c.swr.Record(key, c.now(), ttl, ttl)
	default:
		c.swr.Rewritten(key, c.now(), ttl)
	}
}

// writeL2 stores sealed bytes in Redis under the reliability stack and, with
// invalidation on, publishes the write in the same round trip (a failed
// publish is l2's to report: announceFailed warns; the value is stored).
func (c *Client) writeL2(ctx context.Context, key string, stored []byte, ttl time.Duration) error {
	return c.ordered([]string{key}, func() error {
		return c.redis(ctx, "set", len(stored), c.setCall(c.fullKey(key), stored, ttl))
	})
}

// ordered runs write, a Redis write of keys, in order with interop-mode
// loads of them (keyorder.go); outside interop mode it just runs it.
func (c *Client) ordered(keys []string, write func() error) error {
	if c.order == nil {
		return write()
	}
	return c.order.write(keys, write)
}

// L1 coherence: every path that writes L1 after a Redis round trip (Set,
// MSet, GetOrLoad's store, the SWR refresh, Get and MGet backfills) takes a
// ticket before the round trip and writes L1 through admit afterwards.
//
// The ticket holds the key's L1 version. Set, Delete, an invalidation and
// Clear all advance it, so a write whose round trip overlapped any of them
// does not land: a reader's backfill is then simply skipped (whoever moved
// the version left L1 right), and a writer drops the key from L1, since the
// overlapping write may have reached Redis after its own. The ticket also
// says whether L1 may be written at all: with invalidation on, not while
// no coherence mode holds (see invalidation.go). The version is read
// before the mode, and a loss clears L1 (advancing every version) after it
// marks the mode lost, so a write that saw a mode cannot land once it was
// lost.
//
// An L1 entry never outlives its Redis entry: its lifetime is the TTL sent
// to (or read from) Redis, counted from when the ticket was taken, before
// the command left; in Invalidation's fallback it is also at most
// FallbackL1Lifetime, counted the same way.

// ticket is what an L1 write after a Redis round trip needs from before it.
type ticket struct {
	ver    l1.Version
	at     time.Time
	ok     bool // L1 may be written (a coherence mode, or invalidation off)
	direct bool // L1-only mode: L1 is the store, writes are unconditional
	// life, when positive, bounds the entry's L1 lifetime (Invalidation's
	// fallback), counted from at as the Redis TTL is.
	life time.Duration
}

// ticket returns key's ticket. It reads the clock, so only paths that write
// L1 take one.
func (c *Client) ticket(key string) ticket {
	if c.l1 == nil {
		return ticket{}
	}
	if c.l2 == nil {
		return ticket{direct: true}
	}
	t := ticket{ver: c.l1.Version(key), at: c.now(), ok: true}
	if c.inv != nil {
		lim := c.inv.L1Cap()
		t.ok, t.life = lim >= 0, time.Duration(lim)
	}
	return t
}

// admit stores sealed bytes in L1 for ttl counted from t, if nothing wrote,
// deleted or invalidated key since t was taken. A writer (whose bytes are
// now in Redis) that cannot admit drops the key from L1 instead, counted in
// Stats.L1Rejected. It reports whether L1 took the bytes.
func (c *Client) admit(key string, t ticket, stored []byte, ttl time.Duration, writer bool) bool {
	if t.direct {
		if c.l1.Set(key, stored, ttl) {
			return true
		}
		c.stats.L1Rejected.Add(1)
		return false
	}
	if t.life > 0 {
		ttl = min(ttl, t.life)
	}
	if left := ttl - c.now().Sub(t.at); t.ok && left > 0 && c.l1.SetIfVersion(key, stored, left, t.ver) {
		return true
	}
	if writer {
		c.stats.L1Rejected.Add(1)
		c.dropL1(key)
	}
	return false
}

// dropL1 removes key from L1 (advancing its version) and forgets its SWR
// expiry.
func (c *Client) dropL1(key string) {
	if c.l1 != nil {
		c.l1.Delete(key)
	}
	if c.swr != nil {
		c.swr.Forget(key)
	}
}

// setCall stores sealed bytes under full (announced with Invalidation).
func (c *Client) setCall(full string, stored []byte, ttl time.Duration) func(context.Context) error {
	return func(ctx context.Context) error { return c.l2.Set(ctx, full, stored, ttl) }
}

// delCall deletes keys (announced with Invalidation) and leaves in *n how
// many held an entry.
func (c *Client) delCall(keys []string, n *int64) func(context.Context) error {
	full := make([]string, len(keys))
	for i, k := range keys {
		full[i] = c.fullKey(k)
	}
	return func(ctx context.Context) (err error) { *n, err = c.l2.Delete(ctx, full...); return err }
}
