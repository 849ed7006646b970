package cachekit

// The read path, on one screen: Get reads L1 and opens the entry (DecryptNow
// -> envelope open -> bounded msgpack check, entry.go) and decodes; on an L1
// miss it reads L2, authenticates before admitting the bytes to L1,
// backfills L1 no longer than the entry's remaining TTL, and decodes. Get,
// GetWithTTL, AppendValue, MGet and GetOrLoad all come through loadTTL or
// fromL1/fromL2. L1 only ever holds the same sealed bytes that L2 holds
// (the write path, write.go, stores them). Each public operation is
// observed once, by Begin and End (internal/observe); what a Redis
// failure or miss means to the caller is outcome.go's. Under a name key the
// public calls first swap the caller's key for its opaque name (local,
// client.go), and everything below works on that name.

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/cachekit-io/cachekit-go/cachekit/internal/observe"
	"github.com/cachekit-io/cachekit-go/internal/chunked"
	"github.com/cachekit-io/cachekit-go/l2"
	"github.com/cachekit-io/cachekit-go/protocol"
)

// Get decodes the value stored under key into dst, a non-nil pointer. It
// returns ErrNotFound when neither tier has the key, and an *EntryError
// that also matches ErrNotFound when the entry found cannot be opened
// (see EntryError).
func (c *Client) Get(ctx context.Context, key string, dst any) error {
	_, err := c.get(ctx, observe.OpGet, key, dst, false)
	return err
}

// get is Get and, with wantTTL, GetWithTTL, observed as op: it also
// returns how long the entry has left (L1's remaining time on an L1 hit,
// Redis's PTTL otherwise).
func (c *Client) get(ctx context.Context, op observe.Op, key string, dst any, wantTTL bool) (time.Duration, error) {
	key = c.local(key)
	ctx, oc := c.obs.Begin(ctx, op, key, 1)
	left, tier, size, err := c.getPayload(ctx, key, dst, wantTTL)
	if oc != nil { // the result is built only for an observer
		c.obs.End(ctx, oc, observe.Result{Tier: observe.TierNamed(string(tier)), Size: size}, err)
	}
	return left, err
}

// getPayload reads key into dst; besides the remaining TTL it returns the
// tier that answered and the payload's size, for the observer.
func (c *Client) getPayload(ctx context.Context, key string, dst any, wantTTL bool) (time.Duration, Tier, int, error) {
	if c.closed.Load() {
		return 0, "", 0, ErrClosed
	}
	if v := reflect.ValueOf(dst); v.Kind() != reflect.Pointer || v.IsNil() {
		return 0, "", 0, fmt.Errorf("%w (got %T)", ErrInvalidDestination, dst)
	}
	s := getScratch()
	defer putScratch(s)
	// The remaining TTL bounds an L1 backfill: without L1 (and unless the
	// caller wants it) a plain GETRANGE saves Redis a PTTL per read.
	payload, tier, left, err := c.loadTTL(ctx, s, key, wantTTL || c.l1 != nil, nil)
	size := len(payload)
	if err != nil {
		return 0, tier, size, err
	}
	if wantTTL && tier == TierL1 {
		// What L1 holds key for now (a write after the read above may
		// have replaced the entry: then it is the newer entry's).
		var ok bool
		if left, ok = c.l1.Remaining(key); !ok {
			return 0, tier, 0, ErrNotFound // expired or dropped since the read: a miss
		}
	}
	if err := c.decode(payload, dst); err != nil {
		return 0, tier, size, &EntryError{Tier: tier, KeyDigest: c.keyDigest(key), Err: err}
	}
	return left, tier, size, nil
}

// loadTTL finds key's entry, opens it and returns its msgpack payload
// (which lives in s and is valid until s is returned to the pool), the tier
// that answered (on a miss or a Redis failure, the last tier asked) and,
// for an entry read from L2, its remaining TTL there (0
// for an L1 hit, no expiry, or when withTTL is false and only GETRANGE was
// sent). With served non-nil, an entry read from L2 is also left there
// (Redis's bytes, never written to: SWR's refresh compares against them).
// Reliability wraps the L2 round trip only; decrypt and decode run outside
// it.
func (c *Client) loadTTL(ctx context.Context, s *scratch, key string, withTTL bool, served *[]byte) ([]byte, Tier, time.Duration, error) {
	if c.closed.Load() {
		return nil, "", 0, ErrClosed
	}
	if key == "" {
		return nil, "", 0, errEmptyKey
	}
	if c.l1 != nil {
		// fromL1, without its call on the hit path (measured: bench-ir's
		// L1Hit rows).
		if stored, ok := c.l1.Get(key); !ok {
			c.stats.L1Misses.Add(1)
		} else if payload, err := c.open(ctx, s, key, stored); err == nil {
			c.l1Hit(key)
			return payload, TierL1, 0, nil
		} else if payload, hit, err := c.l1OpenFailed(ctx, s, key, stored, err); hit || err != nil {
			return payload, TierL1, 0, err
		}
	}
	if c.l2 == nil {
		return nil, TierL1, 0, ErrNotFound
	}
	t := c.ticket(key)
	var stored []byte
	var ttl time.Duration
	err := c.readL2(ctx, c.fullKey(key), withTTL, &stored, &ttl)
	if err != nil {
		return nil, TierL2, 0, c.readErr(ctx, key, err)
	}
	payload, err := c.fromL2(ctx, s, key, stored, ttl, t)
	if err != nil {
		return nil, TierL2, 0, err
	}
	if served != nil {
		*served = stored
	}
	return payload, TierL2, ttl, nil
}

// fromL1 opens key's L1 entry. hit is false on a miss; an entry that fails
// to open is dropped and the read falls through to L2 (hit false, err nil).
// A negative entry, which the value's open refuses, is a hit whose error
// is a *NegativeHitError (or dropped like a failed entry, when it no
// longer opens as one).
func (c *Client) fromL1(ctx context.Context, s *scratch, key string) (payload []byte, hit bool, err error) {
	stored, ok := c.l1.Get(key)
	if !ok {
		c.stats.L1Misses.Add(1)
		return nil, false, nil
	}
	if payload, err = c.open(ctx, s, key, stored); err == nil {
		c.l1Hit(key)
		return payload, true, nil
	}
	return c.l1OpenFailed(ctx, s, key, stored, err)
}

// l1Hit counts an L1 hit of key and, while invalidation runs on its
// fallback, renews the entry's bounded lifetime.
func (c *Client) l1Hit(key string) {
	c.stats.L1Hits.Add(1)
	if c.inv != nil {
		if life := c.inv.L1Cap(); life > 0 { // the fallback's lifetime
			c.renew(key, time.Duration(life))
		}
	}
}

// l1OpenFailed is fromL1 for stored, key's L1 entry, which the value's
// open refused with err (off the hit path): a negative entry is read as
// one; any other entry is counted, evicted and warned about, and the read
// falls through to L2.
func (c *Client) l1OpenFailed(ctx context.Context, s *scratch, key string, stored []byte, err error) ([]byte, bool, error) {
	if err == errNegativeEntry { // before notTheEntry: never a caller's error
		if err = c.readNegative(ctx, s, TierL1, key, stored, 0, ticket{}); isNegativeHit(err) || notTheEntry(ctx, err) {
			return nil, err != nil, err
		}
		c.l1.Delete(key) // lapsed, or not one: Redis decides
		return nil, false, nil
	}
	if notTheEntry(ctx, err) {
		return nil, false, err
	}
	c.openFailed(ctx, TierL1, err)
	c.l1.Delete(key)
	c.warn("l1 entry failed to open; evicted", key, err)
	return nil, false, nil
}

// fromL2 opens bytes Redis returned for key and, once they authenticate,
// backfills L1 with them for at most ttl (the entry's remaining TTL in
// Redis; 0 means unknown or none, and nothing is backfilled), only if
// nothing wrote, deleted or invalidated key since t was taken. Get, MGet
// and GetOrLoad all read Redis entries through here. An entry that does
// not open is a miss (IOP-24): counted, warned about and returned as an
// Unopenable *EntryError, which matches ErrNotFound. A negative entry is
// read by readNegative: a *NegativeHitError (backfilled the same way).
func (c *Client) fromL2(ctx context.Context, s *scratch, key string, stored []byte, ttl time.Duration, t ticket) ([]byte, error) {
	payload, err := c.open(ctx, s, key, stored)
	if err != nil {
		if err == errNegativeEntry {
			return nil, c.readNegative(ctx, s, TierL2, key, stored, ttl, t)
		}
		if notTheEntry(ctx, err) {
			return nil, err
		}
		c.openFailed(ctx, TierL2, err)
		c.warn("l2 entry failed to open", key, err)
		return nil, &EntryError{Tier: TierL2, KeyDigest: c.keyDigest(key), Err: err, Unopenable: true}
	}
	c.stats.L2Hits.Add(1)
	if c.l1 != nil && ttl > 0 {
		c.admit(key, t, stored, ttl, false)
	}
	return payload, nil
}

// Values stored from a []byte, read back without msgpack's copy.

// AppendValue appends the []byte value stored under key to dst and returns
// the extended slice. With encryption on and an L1 hit it allocates nothing
// when dst has room. The value must have been stored from a []byte
// (otherwise ErrNotBytes).
func (c *Client) AppendValue(ctx context.Context, dst []byte, key string) ([]byte, error) {
	return c.appendValue(ctx, observe.OpAppendValue, dst, key, true)
}

// appendValue is AppendValue observed as op; with bin false it appends the
// whole msgpack payload, whatever it holds (Raw.AppendPayload).
func (c *Client) appendValue(ctx context.Context, op observe.Op, dst []byte, key string, bin bool) ([]byte, error) {
	key = c.local(key)
	ctx, oc := c.obs.Begin(ctx, op, key, 1)
	s := getScratch()
	// The remaining TTL is needed only to bound an L1 backfill: without L1
	// a plain GETRANGE saves Redis a PTTL per read.
	payload, tier, _, err := c.loadTTL(ctx, s, key, c.l1 != nil, nil)
	if err == nil && !bin {
		dst = chunked.Append(dst, payload)
	} else if err == nil {
		// protocol.BytesItem inlines here: the bin or str header parsed
		// as CheckMsgpack parsed it, with no call on the hit path.
		if raw, ok := protocol.BytesItem(payload); ok {
			dst = chunked.Append(dst, raw)
		} else {
			err = &EntryError{Tier: tier, KeyDigest: c.keyDigest(key), Err: ErrNotBytes}
		}
	}
	putScratch(s)
	if oc != nil {
		c.obs.End(ctx, oc, observe.Result{Tier: observe.TierNamed(string(tier)), Size: len(payload)}, err)
	}
	return dst, err
}

// GetBytes returns a copy of the []byte value stored under key.
func (c *Client) GetBytes(ctx context.Context, key string) ([]byte, error) {
	out, err := c.appendValue(ctx, observe.OpGetBytes, nil, key, true)
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []byte{}
	}
	return out, nil
}

// readL2 reads full's entry, at most c.maxEntry bytes of it, into *stored
// and, when withTTL, its remaining TTL into *ttl, under the reliability
// stack: first at most l2.LongRead bytes; a longer value (an *l2.LongError
// with its length, no failure) is read in a second call given that
// length's transfer allowance on top of its deadlines, as a Set of it was
// (never the allowance of MaxValueBytes for every read: a hung Redis would
// then hold a small read for seconds).
func (c *Client) readL2(ctx context.Context, full string, withTTL bool, stored *[]byte, ttl *time.Duration) error {
	err := c.redis(ctx, "get", 0, c.getCall(full, withTTL, false, stored, ttl))
	if n, long := l2.IsLong(err); long {
		err = c.redis(ctx, "get", min(n, c.maxEntry), c.getCall(full, withTTL, true, stored, ttl))
	}
	return err
}

// getCall reads full's entry, at most c.maxEntry bytes of it, into *stored
// and, when withTTL, its remaining TTL into *ttl: a bounded first read, or
// (long) the read of a value the first one reported long.
func (c *Client) getCall(full string, withTTL, long bool, stored *[]byte, ttl *time.Duration) func(context.Context) error {
	return func(ctx context.Context) (err error) {
		switch {
		case withTTL && long:
			*stored, *ttl, err = c.l2.GetLongWithTTLUpTo(ctx, full, c.maxEntry)
		case withTTL:
			*stored, *ttl, err = c.l2.GetWithTTLUpTo(ctx, full, c.maxEntry)
		case long:
			*stored, err = c.l2.GetLongUpTo(ctx, full, c.maxEntry)
		default:
			*stored, err = c.l2.GetUpTo(ctx, full, c.maxEntry)
		}
		return err
	}
}

// getInner is Get not observed on its own: a read inside another operation
// (GetOrLoad's, MGetOrLoad's).
func getInner[T any](ctx context.Context, c *Client, key string) (T, observe.Result, error) {
	var v T
	_, tier, size, err := c.getPayload(ctx, key, &v, false)
	r := observe.Result{Tier: observe.TierNamed(string(tier)), Size: size}
	if err != nil {
		var zero T
		return zero, r, err
	}
	return v, r, nil
}

// renew keeps a hot key in L1 under the fallback's lifetime: a hit in the
// last quarter of its entry's lifetime reads the entry from Redis in the
// background (one read per key at a time) and, once it authenticates,
// gives the L1 copy a fresh lifetime through the ticket taken before the
// read, as any backfill (the read is bounded by AttemptTimeout on its own,
// outside the reliability stack's slots): a write, delete or announcement meanwhile wins,
// and no copy is older than the lifetime. Without it a hot key misses once
// per lifetime.
func (c *Client) renew(key string, life time.Duration) {
	if left, ok := c.l1.Remaining(key); !ok || left > life/4 {
		return
	}
	c.inv.Renew(key, func() {
		ctx, cancel := context.WithTimeout(c.bg, c.rel.AttemptTimeout())
		defer cancel()
		t := c.ticket(key)
		var stored []byte
		var ttl time.Duration
		// Outside the reliability stack: a renewal is no caller's work and
		// takes none of the callers' MaxInFlight slots; ctx bounds it.
		if c.getCall(c.fullKey(key), true, false, &stored, &ttl)(ctx) != nil || ttl <= 0 {
			return
		}
		s := getScratch()
		if _, err := c.open(ctx, s, key, stored); err == nil {
			c.admit(key, t, stored, ttl, false)
		}
		putScratch(s)
	})
}

// readNegative is a read's answer for stored, bytes of key in tier that
// have the form of a negative entry: a *NegativeHitError (counted) when it
// opens, after backfilling L1 with it through t for ttl when it came from
// Redis (as fromL2 does for a value); ErrNotFound when it lapsed (within
// negativeSlack); an error that says nothing about the entry as it is;
// else an Unopenable *EntryError (IOP-24: counted, warned about, a miss
// that GetOrLoad replaces).
func (c *Client) readNegative(ctx context.Context, s *scratch, tier Tier, key string, stored []byte, ttl time.Duration, t ticket) error {
	_, _, err := c.openNegative(ctx, s, key, stored)
	switch {
	case err == nil:
		c.stats.NegativeHits.Add(1)
		if tier == TierL2 && c.l1 != nil && ttl > 0 {
			c.admit(key, t, stored, ttl, false)
		}
		return &NegativeHitError{Tier: tier}
	case err == errNegativeLapsed: // not a replay: a plain miss
		if tier == TierL2 {
			c.stats.L2Misses.Add(1)
		}
		return ErrNotFound
	case notTheEntry(ctx, err):
		return err
	}
	c.openFailed(ctx, tier, err)
	c.warn(string(tier)+" negative entry failed to open", key, err)
	return &EntryError{Tier: tier, KeyDigest: c.keyDigest(key), Err: err, Unopenable: true}
}

// Get returns the value stored under key decoded as a T.
//
//	user, err := cachekit.Get[User](ctx, client, "user:42")
func Get[T any](ctx context.Context, c *Client, key string) (T, error) {
	var v T
	if _, err := c.get(ctx, observe.OpGet, key, &v, false); err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// GetWithTTL returns the T stored under key and how long the entry has
// left: on an L1 hit, what L1 holds it for (the TTL it was stored or
// backfilled with, counted down); otherwise Redis's PTTL, read in the same
// round trip as the value. 0 means the entry has no expiry (a key written
// without one by another tool).
func GetWithTTL[T any](ctx context.Context, c *Client, key string) (T, time.Duration, error) {
	var v T
	left, err := c.get(ctx, observe.OpGetWithTTL, key, &v, true)
	if err != nil {
		var zero T
		return zero, 0, err
	}
	return v, left, nil
}
