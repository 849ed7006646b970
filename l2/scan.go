package l2

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Scan calls fn with the keys matching pattern (SCAN MATCH, count keys
// asked per step), walking every master of a cluster. fn is never called
// concurrently; an error from fn stops the walk and is returned.
func (s *Store) Scan(ctx context.Context, pattern string, count int64, fn func(keys []string) error) error {
	if err := s.check("scan"); err != nil {
		return err
	}
	var mu sync.Mutex // ForEachMaster walks the masters concurrently
	walk := func(ctx context.Context, c redis.Cmdable) error {
		var cursor uint64
		for {
			keys, next, err := c.Scan(ctx, cursor, pattern, count).Result()
			if err != nil {
				return fail("scan", err)
			}
			if len(keys) > 0 {
				mu.Lock()
				err := fn(keys)
				mu.Unlock()
				if err != nil {
					return err
				}
			}
			if next == 0 {
				return nil
			}
			cursor = next
		}
	}
	if s.cluster != nil {
		return s.cluster.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return walk(ctx, m) })
	}
	return walk(ctx, s.rdb)
}
