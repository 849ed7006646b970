package cachekit

import (
	"context"
	"time"

	"github.com/cachekit-io/cachekit-go/cachekit/internal/observe"
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

// AutoKey returns the CacheKit protocol's auto-mode key for a call of
// function with args, as cache-key-format.md defines it
// ("ns:{namespace}:func:{function}:args:{hash}:1s", at most 250
// characters), the key cachekit-py's decorator derives for the same call
// with the same settings. Auto-mode keys and containers are SDK-internal:
// two SDKs that wrote under one auto-mode key would keep overwriting
// each other's entries, each refusing the other's container (WIRE-21), so
// share values across SDKs with interop mode (InteropKey) instead.
// function is the function's qualified name,
// "{module}.{name}" (a Go package path and function name, or a Python
// function's __module__ and __qualname__), namespace may be empty (no ns:
// segment). The key is the one for a cache configured as this SDK is by
// default (the integrity envelope on, MessagePack), with positional
// arguments only; protocol.GenerateKey takes the other settings and named
// arguments. Arguments may be nil, bool, integers, floats, strings, []byte,
// time.Time, protocol.UUID, protocol.Set, slices and string-keyed maps.
// Errors match protocol.ErrInvalidKey (no module or name in function,
// invalid UTF-8) or protocol.ErrUnsupported (an argument of another type),
// and never echo the arguments.
func AutoKey(namespace, function string, args ...any) (string, error) {
	return protocol.AutoKey(namespace, function, args...)
}
