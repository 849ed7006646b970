package cachekit

// The Redis calls of Get, Set and Delete as the reliability stack runs
// them. They are written here, apart from the operations, so that a stack
// through the guard passes each file once: the operation's file,
// outcome.go, the guard, this file, then l2.

import (
	"context"
	"time"
)

// getCall reads full's entry, at most c.maxEntry bytes of it, into *stored
// and, when withTTL, its remaining TTL into *ttl.
func (c *Client) getCall(full string, withTTL bool, stored *[]byte, ttl *time.Duration) func(context.Context) error {
	return func(ctx context.Context) (err error) {
		if withTTL {
			*stored, *ttl, err = c.l2.GetWithTTLUpTo(ctx, full, c.maxEntry)
		} else {
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
