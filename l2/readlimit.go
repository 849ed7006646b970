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
//
// On the auto-pipelined stream (AutoPipeline) the read asks for at most
// the stream's byte limit; a value found longer is read again, up to
// limit, off the stream, so a large reply never holds up the stream.
func (s *Store) GetUpTo(ctx context.Context, key string, limit int) ([]byte, error) {
	if err := s.check("get"); err != nil {
		return nil, err
	}
	first := s.firstRead(limit)
	get := redis.NewStringCmd(ctx, "getrange", key, 0, int64(first))
	err := s.send(ctx, false, get)
	if err == nil && first < limit && len(get.Val()) > first {
		get = redis.NewStringCmd(ctx, "getrange", key, 0, int64(limit))
		err = s.send(ctx, true, get)
	}
	if err != nil {
		return nil, fail("get", err)
	}
	b, err := get.Bytes()
	if err != nil {
		return nil, fail("get", err)
	}
	if len(b) == 0 || IsLease(b) {
		return nil, ErrNotFound
	}
	return b, nil
}

// GetWithTTLUpTo is GetWithTTL that reads at most limit+1 bytes of the
// value, as GetUpTo does (on the stream too), with GETRANGE and PTTL in one
// pipelined round trip (on the stream, one after the other: an empty value
// found by PTTL is read again in one round trip off it). A key PTTL finds
// with an empty value returns an empty, non-nil slice; a lease reads as
// missing.
func (s *Store) GetWithTTLUpTo(ctx context.Context, key string, limit int) ([]byte, time.Duration, error) {
	first := s.firstRead(limit)
	b, ttl, err := s.getTTL(ctx, key, redis.NewStringCmd(ctx, "getrange", key, 0, int64(first)), false)
	// On the stream another caller's command can run between GETRANGE and
	// PTTL: a key written between them reads as empty yet found. Such a
	// read, like a long value, is read again off the stream, where the two
	// travel in one pipeline.
	if err == nil && first < limit && len(b) > first || err == nil && len(b) == 0 && s.stream != nil {
		b, ttl, err = s.getTTL(ctx, key, redis.NewStringCmd(ctx, "getrange", key, 0, int64(limit)), true)
	}
	if err == nil && b == nil {
		b = []byte{}
	}
	return b, ttl, err
}

// firstRead is how many bytes (plus one) a bounded read of at most limit
// asks for first: limit, or on the stream at most its byte limit.
func (s *Store) firstRead(limit int) int {
	if s.stream != nil {
		return min(limit, s.stream.maxBytes)
	}
	return limit
}
