package cachekit

// Reliability.FailOpen: a Redis failure a read or write may absorb.

import (
	"context"
	"errors"

	"github.com/cachekit-io/cachekit-go/internal/guard"
	"github.com/cachekit-io/cachekit-go/l2"
)

// readFailed turns a failed Redis read into the error the caller sees: a
// miss, a degraded miss under FailOpen, or the Redis error.
func (c *Client) readFailed(ctx context.Context, key string, err error) error {
	if errors.Is(err, l2.ErrNotFound) {
		c.stats.l2Misses.Add(1)
		return ErrNotFound
	}
	c.stats.l2Errors.Add(1)
	if c.degradable(ctx, err) {
		c.stats.degraded.Add(1)
		c.warn("redis read failed; treated as a miss (fail-open)", key, err)
		return &MissError{Err: err}
	}
	return err
}

// writeFailed turns a failed Redis write into what the caller sees: nil
// when FailOpen absorbs it (outcome degraded), else the Redis error.
func (c *Client) writeFailed(ctx context.Context, key string, err error) (result, error) {
	c.stats.l2Errors.Add(1)
	if c.degradable(ctx, err) {
		c.stats.degraded.Add(1)
		c.warn("redis write failed; absorbed (fail-open)", key, err)
		return result{tier: tierL2, out: outDegraded}, nil
	}
	return result{tier: tierL2}, err
}

// degradable reports whether a failed L2 call may be degraded under
// FailOpen: a backend failure (not the caller's own cancellation or
// deadline, even one that passed a timer tick before ctx.Err says so; not
// a closed client).
func (c *Client) degradable(ctx context.Context, err error) bool {
	if !c.rel.FailOpen() || ctx.Err() != nil || guard.CallerExpired(ctx) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var be *BackendError
	return errors.As(err, &be)
}
