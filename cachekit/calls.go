package cachekit

// The Redis calls of Get, Set and Delete as the reliability stack runs
// them. They are written here, apart from the operations, so that a stack
// through the guard passes each file once: the operation's file,
// outcome.go, the guard, this file, then l2.

import (
	"context"
	"time"

	"github.com/cachekit-io/cachekit-go/l2"
)

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
