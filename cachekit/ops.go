package cachekit

import (
	"context"
	"errors"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/chunked"
	"github.com/cachekit-io/cachekit-go/l2"
)

// Delete removes key from L2 and then from L1, whatever L2 answered, so this
// process never serves the deleted value from L1.
func (c *Client) Delete(ctx context.Context, key string) error {
	if c.closed.Load() {
		return ErrClosed
	}
	var err error
	if c.l2 != nil {
		full := c.fullKey(key)
		err = c.rel.do(ctx, "del", func(ctx context.Context) error {
			if c.inv == nil {
				_, err := c.l2.Delete(ctx, full)
				return err
			}
			_, err := c.l2.DeletePublish(ctx, full, c.inv.channel, c.publishMsg(key))
			return err
		})
		if be := (*BackendError)(nil); errors.As(err, &be) && be.Op == "publish" {
			c.inv.publishFailures.Add(1)
			c.warn("invalidation not published after Delete", key, err)
			err = nil
		}
		if err != nil {
			c.stats.l2Errors.Add(1)
			c.met.add(ctx, opDelErr)
		} else {
			c.met.add(ctx, opDelOK)
		}
	}
	c.dropL1(key)
	return err
}

// Exists reports whether key is cached in L1 or L2. It does not open the
// entry.
func (c *Client) Exists(ctx context.Context, key string) (bool, error) {
	if c.closed.Load() {
		return false, ErrClosed
	}
	if c.l1 != nil {
		if _, ok := c.l1.Get(key); ok {
			return true, nil
		}
	}
	if c.l2 == nil {
		return false, nil
	}
	var ok bool
	err := c.rel.do(ctx, "exists", func(ctx context.Context) error {
		var err error
		ok, err = c.l2.Exists(ctx, c.fullKey(key))
		return err
	})
	if err != nil {
		c.stats.l2Errors.Add(1)
	}
	return ok, err
}

// TTL returns the remaining lifetime of key in L2. It returns ErrNotFound
// for a missing key; in L1-only mode it returns ErrNotFound as well, since
// L1 does not expose expiry times.
func (c *Client) TTL(ctx context.Context, key string) (time.Duration, error) {
	if c.closed.Load() {
		return 0, ErrClosed
	}
	if c.l2 == nil {
		return 0, ErrNotFound
	}
	var d time.Duration
	err := c.rel.do(ctx, "ttl", func(ctx context.Context) error {
		var err error
		d, err = c.l2.TTL(ctx, c.fullKey(key))
		return err
	})
	if errors.Is(err, l2.ErrNotFound) {
		return 0, ErrNotFound
	}
	return d, err
}

// RawGet returns the stored (sealed) bytes of key exactly as Redis holds
// them, without opening them. It is meant for inspection tools.
func (c *Client) RawGet(ctx context.Context, key string) ([]byte, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if c.l2 == nil {
		if c.l1 != nil {
			if b, ok := c.l1.Get(key); ok {
				return chunked.Append(nil, b), nil
			}
		}
		return nil, ErrNotFound
	}
	var b []byte
	err := c.rel.do(ctx, "get", func(ctx context.Context) error {
		var err error
		b, err = c.l2.Get(ctx, c.fullKey(key))
		return err
	})
	if errors.Is(err, l2.ErrNotFound) {
		return nil, ErrNotFound
	}
	return b, err
}
