package cachekit

import (
	"context"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/observe"
	"github.com/cachekit-io/cachekit-go/protocol"
)

// InteropKey returns the interop/v1 key "{namespace}:{operation}:{args_hash}"
// for positional arguments, the key every CacheKit SDK computes for the same
// call. Arguments may be nil, bool, integers, floats, strings, []byte,
// time.Time, protocol.UUID, protocol.Set, slices and string-keyed maps.
func InteropKey(namespace, operation string, args ...any) (string, error) {
	return protocol.InteropKey(namespace, operation, args...)
}

// InteropSet stores value under the interop key of (namespace, operation,
// args) for ttl. The Client must be in interop mode (Options.Interop), so
// other SDKs read the entry.
func (c *Client) InteropSet(ctx context.Context, namespace, operation string, args []any, value any, ttl time.Duration) error {
	key, err := c.interopKey(namespace, operation, args)
	if err != nil {
		ctx, oc := c.obs.Begin(ctx, observe.OpInteropSet, "", 0) // no key to digest
		c.obs.End(ctx, oc, observe.Result{}, err)
		return err
	}
	ctx, oc := c.obs.Begin(ctx, observe.OpInteropSet, key, 1)
	r, err := c.setWithTTL(ctx, key, value, ttl)
	c.obs.End(ctx, oc, r, err)
	return err
}

// InteropGet decodes the value stored under the interop key of (namespace,
// operation, args) into dst.
func (c *Client) InteropGet(ctx context.Context, namespace, operation string, args []any, dst any) error {
	key, err := c.interopKey(namespace, operation, args)
	if err != nil {
		ctx, oc := c.obs.Begin(ctx, observe.OpInteropGet, "", 0) // no key to digest
		c.obs.End(ctx, oc, observe.Result{}, err)
		return err
	}
	_, err = c.get(ctx, observe.OpInteropGet, key, dst, false)
	return err
}

func (c *Client) interopKey(namespace, operation string, args []any) (string, error) {
	if !c.interop {
		return "", configErr("interop helpers need a Client built with Options.Interop")
	}
	return protocol.InteropKey(namespace, operation, args...)
}
