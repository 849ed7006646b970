package cachekit

import (
	"context"
	"errors"
	"time"

	"github.com/cachekit-io/cachekit-go/l1"
	"github.com/cachekit-io/cachekit-go/l2"
	"github.com/cachekit-io/cachekit-go/protocol"
)

// MGet returns the values cached under keys, decoded as T, in a map keyed
// by the caller's keys; missing keys are absent. L1 is consulted first and
// all L1 misses are fetched from Redis in one round trip (one MGET, or one
// pipeline of per-slot MGETs on a cluster). Entries that fail to open are
// left out and reported together in the returned error (errors.Join of
// *EntryError); the other values are still returned.
func MGet[T any](ctx context.Context, c *Client, keys []string) (map[string]T, error) {
	out := make(map[string]T, len(keys))
	err := c.mget(ctx, keys, func(key string, payload []byte, tier Tier) error {
		var v T
		if err := decodeInto(payload, &v); err != nil {
			return &EntryError{Tier: tier, KeyDigest: c.keyDigest(key), Err: err}
		}
		out[key] = v
		return nil
	})
	return out, err
}

// mget resolves keys and calls found for each opened entry.
func (c *Client) mget(ctx context.Context, keys []string, found func(key string, payload []byte, tier Tier) error) error {
	if c.closed.Load() {
		return ErrClosed
	}
	s := getScratch()
	defer putScratch(s)
	var errs []error
	misses := make([]string, 0, len(keys))
	for _, key := range keys {
		if c.l1 != nil {
			if stored, ok := c.l1.Get(key); ok {
				payload, err := c.open(ctx, s, key, stored)
				if err == nil {
					c.stats.l1Hits.Add(1)
					if err := found(key, payload, TierL1); err != nil {
						errs = append(errs, err)
					}
					continue
				}
				if errors.Is(err, ErrClosed) {
					return err
				}
				c.stats.l1OpenFail.Add(1)
				c.l1.Delete(key)
			} else {
				c.stats.l1Misses.Add(1)
			}
		}
		misses = append(misses, key)
	}
	if len(misses) == 0 || c.l2 == nil {
		c.stats.l2Misses.Add(uint64(len(misses) * boolInt(c.l2 != nil)))
		return errors.Join(errs...)
	}
	full := make([]string, len(misses))
	vers := make([]l1.Version, len(misses))
	for i, key := range misses {
		full[i] = c.fullKey(key)
		if c.l1 != nil {
			vers[i] = c.l1.Version(key)
		}
	}
	var vals [][]byte
	err := c.rel.do(ctx, "mget", func(ctx context.Context) error {
		var err error
		vals, err = c.l2.MGet(ctx, full)
		return err
	})
	if err != nil {
		c.stats.l2Errors.Add(1)
		if c.degradable(ctx, err) {
			// FailOpen: the L2 part of the batch is a miss.
			c.stats.degraded.Add(1)
			c.warn("redis read failed; MGet degraded to misses", "", err)
			return errors.Join(errs...)
		}
		return err
	}
	for i, stored := range vals {
		key := misses[i]
		if stored == nil {
			c.stats.l2Misses.Add(1)
			continue
		}
		payload, err := c.open(ctx, s, key, stored)
		if err != nil {
			if errors.Is(err, ErrClosed) {
				return err
			}
			c.stats.l2OpenFail.Add(1)
			errs = append(errs, &EntryError{Tier: TierL2, KeyDigest: c.keyDigest(key), Err: err})
			continue
		}
		c.stats.l2Hits.Add(1)
		if err := found(key, payload, TierL2); err != nil {
			errs = append(errs, err)
		}
		// MGET does not return TTLs: backfill L1 for the client's default
		// TTL at most, and only if no Set or Delete of the key happened since.
		if c.l1 != nil {
			c.l1.SetIfVersion(key, stored, c.backfillTTL(), vers[i])
		}
	}
	return errors.Join(errs...)
}

// backfillTTL bounds the L1 lifetime of entries read without their TTL.
func (c *Client) backfillTTL() time.Duration { return min(c.defaultTTL, maxBackfillWithoutTTL) }

// maxBackfillWithoutTTL caps how long an entry read by MGet (whose
// remaining L2 TTL is unknown) may live in L1.
const maxBackfillWithoutTTL = 30 * time.Second

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// MSet stores every value of items under its key for ttl, in one pipelined
// round trip to Redis, then in L1. Values are encoded and sealed exactly as
// SetWithTTL does.
func (c *Client) MSet(ctx context.Context, items map[string]any, ttl time.Duration) error {
	if c.closed.Load() {
		return ErrClosed
	}
	ttl, err := protocol.NormalizeTTL(ttl)
	if err != nil {
		return err
	}
	s := getScratch()
	defer putScratch(s)
	batch := make([]l2.Item, 0, len(items))
	keys := make([]string, 0, len(items))
	for key, v := range items {
		if err := c.checkKey(key); err != nil {
			return err
		}
		payload, err := c.encode(s, v)
		if err != nil {
			return err
		}
		stored, err := c.seal(ctx, s, key, payload)
		if err != nil {
			return err
		}
		batch = append(batch, l2.Item{Key: c.fullKey(key), Value: stored, TTL: ttl})
		keys = append(keys, key)
	}
	if c.l2 != nil {
		err := c.rel.do(ctx, "mset", func(ctx context.Context) error { return c.l2.MSet(ctx, batch) })
		if err != nil {
			c.stats.l2Errors.Add(1)
			if c.l1 != nil {
				for _, k := range keys {
					c.l1.Delete(k)
				}
			}
			if c.degradable(ctx, err) {
				c.stats.degraded.Add(1)
				c.warn("redis write failed; MSet absorbed (fail-open)", "", err)
				return nil
			}
			return err
		}
		if c.inv != nil {
			msgs := make([][]byte, len(keys))
			for i, k := range keys {
				msgs[i] = c.publishMsg(k)
			}
			if err := c.rel.do(ctx, "publish", func(ctx context.Context) error {
				return c.l2.Publish(ctx, c.inv.channel, msgs...)
			}); err != nil {
				c.inv.publishFailures.Add(1)
				c.warn("invalidation not published after MSet", "", err)
			}
		}
	}
	if c.l1 != nil {
		for i, k := range keys {
			if !c.l1.Set(k, batch[i].Value, ttl) {
				c.stats.l1Rejected.Add(1)
			}
			if c.swr != nil {
				c.swr.rewritten(k, c.now(), ttl)
			}
		}
	}
	return nil
}
