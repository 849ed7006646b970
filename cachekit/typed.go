package cachekit

import (
	"context"
	"time"
)

// Typed is a view of a Client for values of one type T: the generic API
// without repeating the type parameter at each call.
//
//	users := cachekit.NewTyped[User](client)
//	u, err := users.GetOrLoad(ctx, "user:42", loadUser)
type Typed[T any] struct{ c *Client }

// NewTyped returns a typed view of c.
func NewTyped[T any](c *Client) Typed[T] { return Typed[T]{c: c} }

// Client returns the underlying Client.
func (t Typed[T]) Client() *Client { return t.c }

// Get returns the T stored under key, or ErrNotFound.
func (t Typed[T]) Get(ctx context.Context, key string) (T, error) { return Get[T](ctx, t.c, key) }

// GetWithTTL returns the T stored under key and how long it has left; see
// the package-level GetWithTTL.
func (t Typed[T]) GetWithTTL(ctx context.Context, key string) (T, time.Duration, error) {
	return GetWithTTL[T](ctx, t.c, key)
}

// Set stores v under key for the Client's DefaultTTL.
func (t Typed[T]) Set(ctx context.Context, key string, v T) error { return t.c.Set(ctx, key, v) }

// SetWithTTL stores v under key for ttl.
func (t Typed[T]) SetWithTTL(ctx context.Context, key string, v T, ttl time.Duration) error {
	return t.c.SetWithTTL(ctx, key, v, ttl)
}

// SetIfAbsent stores v under key for ttl only if key is not cached; see
// Client.SetIfAbsent.
func (t Typed[T]) SetIfAbsent(ctx context.Context, key string, v T, ttl time.Duration) (bool, error) {
	return t.c.SetIfAbsent(ctx, key, v, ttl)
}

// SetIfPresent stores v under key for ttl only if key is cached; see
// Client.SetIfPresent.
func (t Typed[T]) SetIfPresent(ctx context.Context, key string, v T, ttl time.Duration) (bool, error) {
	return t.c.SetIfPresent(ctx, key, v, ttl)
}

// MSet stores every value of items for the Client's DefaultTTL in one
// round trip.
func (t Typed[T]) MSet(ctx context.Context, items map[string]T) error {
	return MSet(ctx, t.c, items)
}

// MSetWithTTL stores every value of items for ttl in one round trip.
func (t Typed[T]) MSetWithTTL(ctx context.Context, items map[string]T, ttl time.Duration) error {
	return MSetWithTTL(ctx, t.c, items, ttl)
}

// Delete removes keys from both tiers.
func (t Typed[T]) Delete(ctx context.Context, keys ...string) error { return t.c.Delete(ctx, keys...) }

// Exists reports whether key is cached; see Client.Exists.
func (t Typed[T]) Exists(ctx context.Context, key string) (bool, error) { return t.c.Exists(ctx, key) }

// TTL returns the remaining lifetime of key in Redis; see Client.TTL.
func (t Typed[T]) TTL(ctx context.Context, key string) (time.Duration, error) {
	return t.c.TTL(ctx, key)
}

// Touch sets key's time to live to ttl; see Client.Touch.
func (t Typed[T]) Touch(ctx context.Context, key string, ttl time.Duration) error {
	return t.c.Touch(ctx, key, ttl)
}

// GetOrLoad returns the cached T or loads, stores (for the Client's
// DefaultTTL) and returns it; see the package-level GetOrLoad.
func (t Typed[T]) GetOrLoad(ctx context.Context, key string, load func(context.Context) (T, error)) (T, error) {
	return GetOrLoad(ctx, t.c, key, load)
}

// GetOrLoadTTL is GetOrLoad with a TTL; see the package-level GetOrLoadTTL.
func (t Typed[T]) GetOrLoadTTL(ctx context.Context, key string, ttl time.Duration, load func(context.Context) (T, error)) (T, error) {
	return GetOrLoadTTL(ctx, t.c, key, ttl, load)
}

// MGet returns the cached values of keys, one round trip to Redis for the
// L1 misses; see the package-level MGet.
func (t Typed[T]) MGet(ctx context.Context, keys []string) (map[string]T, error) {
	return MGet[T](ctx, t.c, keys)
}

// MGetOrLoad returns the cached values of keys and loads the misses with
// one loader call; see the package-level MGetOrLoad.
func (t Typed[T]) MGetOrLoad(ctx context.Context, keys []string, loader func(ctx context.Context, missing []string) (map[string]T, error)) (map[string]T, error) {
	return MGetOrLoad(ctx, t.c, keys, loader)
}
