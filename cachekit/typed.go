package cachekit

import (
	"context"
	"time"
)

// Get returns the value stored under key decoded as a T.
//
//	user, err := cachekit.Get[User](ctx, client, "user:42")
func Get[T any](ctx context.Context, c *Client, key string) (T, error) {
	var v T
	if err := c.Get(ctx, key, &v); err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// Typed is a view of a Client for values of one type T: the generic API
// without repeating the type parameter at each call.
//
//	users := cachekit.NewTyped[User](client)
//	u, err := users.GetOrLoad(ctx, "user:42", time.Minute, loadUser)
type Typed[T any] struct{ c *Client }

// NewTyped returns a typed view of c.
func NewTyped[T any](c *Client) Typed[T] { return Typed[T]{c: c} }

// Client returns the underlying Client.
func (t Typed[T]) Client() *Client { return t.c }

// Get returns the T stored under key, or ErrNotFound.
func (t Typed[T]) Get(ctx context.Context, key string) (T, error) { return Get[T](ctx, t.c, key) }

// Set stores v under key for the Client's DefaultTTL.
func (t Typed[T]) Set(ctx context.Context, key string, v T) error { return t.c.Set(ctx, key, v) }

// SetWithTTL stores v under key for ttl.
func (t Typed[T]) SetWithTTL(ctx context.Context, key string, v T, ttl time.Duration) error {
	return t.c.SetWithTTL(ctx, key, v, ttl)
}

// Delete removes key from both tiers.
func (t Typed[T]) Delete(ctx context.Context, key string) error { return t.c.Delete(ctx, key) }

// GetOrLoad returns the cached T or loads, stores and returns it; see the
// package-level GetOrLoad.
func (t Typed[T]) GetOrLoad(ctx context.Context, key string, ttl time.Duration, load func(context.Context) (T, error)) (T, error) {
	return GetOrLoad(ctx, t.c, key, ttl, load)
}

// MGet returns the cached values of keys, one round trip to Redis for the
// L1 misses; see the package-level MGet.
func (t Typed[T]) MGet(ctx context.Context, keys []string) (map[string]T, error) {
	return MGet[T](ctx, t.c, keys)
}
