package l2

// Reads with a length bound: go-redis has no reply-size limit, and GET
// makes Redis send, and go-redis read, a value whole however large it is.

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// GetUpTo is Get that reads at most limit+1 bytes of the value, with
// GETRANGE key 0 limit: a value longer than limit comes back cut to
// limit+1 bytes, so the caller refuses it for its size without Redis
// sending, or go-redis reading into memory, the rest. GETRANGE answers a
// missing key with an empty string, so an empty value reads as missing
// (ErrNotFound); no CacheKit entry is empty. A lease reads as missing too.
// limit must be positive.
func (s *Store) GetUpTo(ctx context.Context, key string, limit int) ([]byte, error) {
	if err := s.check("get"); err != nil {
		return nil, err
	}
	b, err := s.rdb.GetRange(ctx, key, 0, int64(limit)).Bytes()
	if err != nil {
		return nil, fail("get", err)
	}
	if len(b) == 0 || IsLease(b) {
		return nil, ErrNotFound
	}
	return b, nil
}

// GetWithTTLUpTo is GetWithTTL that reads at most limit+1 bytes of the
// value, as GetUpTo does, with GETRANGE and PTTL in one pipelined round
// trip. A key PTTL finds with an empty value returns an empty, non-nil
// slice; a lease reads as missing.
func (s *Store) GetWithTTLUpTo(ctx context.Context, key string, limit int) ([]byte, time.Duration, error) {
	b, ttl, err := s.getTTL(ctx, key, func(p redis.Pipeliner) *redis.StringCmd { return p.GetRange(ctx, key, 0, int64(limit)) })
	if err == nil && b == nil {
		b = []byte{}
	}
	return b, ttl, err
}
