package cachekit

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/cachekit-io/cachekit-go/cachekit/internal/observe"
	"github.com/cachekit-io/cachekit-go/internal/names"
	"github.com/cachekit-io/cachekit-go/l2"
	"github.com/cachekit-io/cachekit-go/protocol"
)

// MGet returns the values cached under keys, decoded as T, in a map keyed
// by the caller's keys; missing keys are absent, and so are keys whose
// entry is a negative entry (a cached "not found", Options.NegativeTTL),
// with no error. Under Reliability.FailOpen,
// when Redis fails (for every key, or on a cluster for some slots' keys),
// MGet returns the values it did read and an error matching *MissError
// (and ErrNotFound) for the rest, as Get does. L1 is consulted first and
// all L1 misses are fetched from Redis in one round trip (one pipeline: an
// MGET with an EXISTS of the same keys, or a PTTL per key with L1 on; per
// slot on a cluster). A second round trip is sent only when some keys hold
// another Redis type, which MGET reads as missing. Entries that fail to
// open (misses, as Get reads them: each an Unopenable *EntryError matching
// ErrNotFound), entries that do not decode as T and keys that hold another
// Redis type (matching ErrWrongType, as Get reports them) are left out and
// reported together in the returned error (errors.Join of *EntryError);
// the other values are still returned.
func MGet[T any](ctx context.Context, c *Client, keys []string) (map[string]T, error) {
	ctx, oc := c.obs.Begin(ctx, observe.OpMGet, "", len(keys))
	out, r, err := mgetAs[T](ctx, c, c.names.Locals(keys), nil)
	c.obs.End(ctx, oc, r, err)
	return names.AppKeys(c.names, keys, out), err
}

// mgetAs is MGet without observing the operation; the keys found cached
// as "not found" go into negs (when not nil). Its result's tier is L1
// when L1 answered every key, else the last tier asked: L2 when there is
// one.
func mgetAs[T any](ctx context.Context, c *Client, keys []string, negs map[string]bool) (map[string]T, observe.Result, error) {
	out := make(map[string]T, len(keys))
	r := observe.Result{Tier: observe.L1}
	l1Hits, negative := 0, 0
	absorbed, err := c.mget(ctx, keys, func(key string, payload []byte, tier Tier) error {
		if payload == nil { // a negative entry
			negative++
			if negs != nil {
				negs[key] = true
			}
			if tier == TierL1 {
				l1Hits++
			}
			return nil
		}
		var v T
		if err := c.decode(payload, &v); err != nil {
			return &EntryError{Tier: tier, KeyDigest: c.keyDigest(key), Err: err}
		}
		out[key] = v
		r.Size += len(payload)
		if tier == TierL1 {
			l1Hits++
		}
		return nil
	})
	if c.l1 == nil || l1Hits < len(keys) {
		r.Tier = observe.L2 // some key went on to Redis (or would have)
		if c.l2 == nil {
			r.Tier = observe.L1
		}
	}
	switch {
	case absorbed != nil:
		// FailOpen: the values read are returned, and the error tells an
		// outage from misses (it matches *MissError and ErrNotFound).
		r.Out = observe.Degraded
		err = errors.Join(err, &MissError{Err: absorbed})
	case err != nil:
	case len(out) == 0 && negative > 0:
		r.Out = observe.NegativeHit
	case len(out) == 0 && len(keys) > 0:
		r.Out = observe.Miss
	}
	return out, r, err
}

// mget resolves keys and calls found for each opened entry, and with a nil
// payload for each negative entry. It reads
// through the same fromL1/fromL2 steps as Get, so an MGet backfill is
// bounded by each entry's remaining TTL in Redis, like a Get's. absorbed
// is the Redis failure FailOpen turned into misses (nil when none): every
// key Redis did not answer for (all of them, or a cluster's failed slots)
// is then left out, and the values read are still found.
func (c *Client) mget(ctx context.Context, keys []string, found func(key string, payload []byte, tier Tier) error) (absorbed, err error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if slices.Contains(keys, "") {
		return nil, errEmptyKey
	}
	s := getScratch()
	defer putScratch(s)
	var errs []error
	misses := make([]string, 0, len(keys))
	for _, key := range keys {
		if c.l1 != nil {
			payload, hit, err := c.fromL1(ctx, s, key)
			if isNegativeHit(err) {
				payload, err = nil, nil // found with a nil payload, below
			}
			if err != nil {
				return nil, err
			}
			if hit {
				if err := found(key, payload, TierL1); err != nil {
					errs = append(errs, err)
				}
				continue
			}
		}
		misses = append(misses, key)
	}
	if len(misses) == 0 || c.l2 == nil { // L1 only: misses are L1's
		return nil, errors.Join(errs...)
	}
	full := make([]string, len(misses))
	tickets := make([]ticket, len(misses))
	for i, key := range misses {
		full[i] = c.fullKey(key)
		tickets[i] = c.ticket(key)
	}
	var vals [][]byte
	var ttls []time.Duration
	err = c.do(ctx, "mget", 0, func(ctx context.Context) error {
		var err error
		if c.l1 != nil {
			vals, ttls, err = c.l2.MGetWithTTL(ctx, full)
		} else {
			vals, err = c.l2.MGet(ctx, full)
			ttls = make([]time.Duration, len(vals))
		}
		return err
	})
	var wt *l2.WrongTypeError
	if errors.As(err, &wt) {
		// Not a Redis failure: those keys hold no entry of ours, and
		// the batch's other values were read.
		for _, i := range wt.Index {
			errs = append(errs, &EntryError{Tier: TierL2, KeyDigest: c.keyDigest(misses[i]),
				Err: &BackendError{Op: "mget", Err: ErrWrongType}})
		}
		err = nil
	}
	var unread map[int]bool // keys of a cluster's failed slots
	if err != nil {
		c.stats.L2Errors.Add(1)
		// FailOpen: what Redis did not answer for is a miss.
		if !c.absorbed(ctx, "redis read failed; MGet degraded to misses", "", err) {
			return nil, err
		}
		absorbed = err
		var pe *l2.PartialError
		if !errors.As(err, &pe) || vals == nil {
			return absorbed, errors.Join(errs...)
		}
		unread = make(map[int]bool, len(pe.Index))
		for _, i := range pe.Index {
			unread[i] = true
		}
	}
	for i, stored := range vals {
		key := misses[i]
		if stored == nil {
			if !unread[i] {
				c.stats.L2Misses.Add(1)
			}
			continue
		}
		payload, err := c.fromL2(ctx, s, key, stored, ttls[i], tickets[i])
		switch {
		case errors.Is(err, ErrClosed):
			return nil, err
		case err == ErrNotFound: // a negative entry that lapsed
			continue
		case isNegativeHit(err):
			err = found(key, nil, TierL2)
		case err == nil:
			err = found(key, payload, TierL2)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return absorbed, errors.Join(errs...)
}

// MSet stores every value of items under its key for Options.DefaultTTL,
// as MSetWithTTL does.
func (c *Client) MSet(ctx context.Context, items map[string]any) error {
	ctx, oc := c.obs.Begin(ctx, observe.OpMSet, "", len(items))
	r, err := c.mset(ctx, names.LocalItems(c.names, items), c.defaultTTL)
	c.obs.End(ctx, oc, r, err)
	return err
}

// MSetWithTTL stores every value of items under its key for ttl, in one
// pipelined round trip to Redis, then in L1. Values are encoded and sealed
// exactly as SetWithTTL does.
func (c *Client) MSetWithTTL(ctx context.Context, items map[string]any, ttl time.Duration) error {
	ctx, oc := c.obs.Begin(ctx, observe.OpMSetWithTTL, "", len(items))
	r, err := c.mset(ctx, names.LocalItems(c.names, items), ttl)
	c.obs.End(ctx, oc, r, err)
	return err
}

func (c *Client) mset(ctx context.Context, items map[string]any, ttl time.Duration) (observe.Result, error) {
	if c.closed.Load() {
		return observe.Result{}, ErrClosed
	}
	ttl, err := protocol.NormalizeTTL(ttl)
	if err != nil {
		return observe.Result{}, err
	}
	batch := make([]l2.Item, 0, len(items))
	keys := make([]string, 0, len(items))
	size := 0
	for key, v := range items {
		stored, err := c.sealValue(ctx, key, v)
		if err != nil {
			return observe.Result{}, err
		}
		batch = append(batch, l2.Item{Key: c.fullKey(key), Value: stored, TTL: ttl})
		keys = append(keys, key)
		size += len(stored)
	}
	tickets := make([]ticket, len(keys))
	for i, k := range keys {
		tickets[i] = c.ticket(k)
	}
	r := observe.Result{Tier: observe.L1, Size: size}
	if c.l2 != nil {
		r.Tier = observe.L2
		if err := c.ordered(keys, func() error {
			return c.redis(ctx, "mset", size, func(ctx context.Context) error { return c.l2.MSet(ctx, batch) })
		}); err != nil {
			for _, k := range keys {
				c.dropL1(k) // L2 state unknown: never serve the old value from L1
			}
			r, err = c.writeFailed(ctx, "", err)
			return r, err
		}
	}
	for i, k := range keys {
		c.accepted(k, tickets[i], batch[i].Value, ttl, false)
	}
	return r, nil
}

// MSet stores every value of items under its key for Options.DefaultTTL,
// in one pipelined round trip to Redis; see Client.MSetWithTTL.
func MSet[T any](ctx context.Context, c *Client, items map[string]T) error {
	return c.MSet(ctx, boxed(items))
}

// MSetWithTTL is MSet with a TTL.
func MSetWithTTL[T any](ctx context.Context, c *Client, items map[string]T, ttl time.Duration) error {
	return c.MSetWithTTL(ctx, boxed(items), ttl)
}

// boxed is items as the map Client.MSet takes.
func boxed[T any](items map[string]T) map[string]any {
	m := make(map[string]any, len(items))
	for k, v := range items {
		m[k] = v
	}
	return m
}
