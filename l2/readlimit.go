package l2

// Reads with a length bound: go-redis has no reply-size limit, and GET
// makes Redis send, and go-redis read, a value whole however large it is.

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// LongRead is the most a bounded read (GetUpTo, GetWithTTLUpTo) asks for
// first: a value longer than that is not read by it but reported as a
// *LongError, so that the caller can give the transfer of its length the
// time it needs before reading it (GetLongUpTo, GetLongWithTTLUpTo). On the
// auto-pipelined stream the stream's byte limit applies if it is smaller.
const LongRead = 128 << 10

// LongError is what a bounded read returns for a value longer than its
// first read: Len is the value's length (STRLEN). It is no failure: Redis
// answered, and the caller reads the value with GetLongUpTo or
// GetLongWithTTLUpTo, with time for Len bytes.
type LongError struct{ Len int }

// Error implements error.
func (e *LongError) Error() string {
	return "l2: the value is long (" + strconv.Itoa(e.Len) + " bytes): read it with GetLongUpTo"
}

// IsLong reports whether err is a *LongError, and the value's length.
func IsLong(err error) (int, bool) {
	var le *LongError
	if errors.As(err, &le) {
		return le.Len, true
	}
	return 0, false
}

// GetUpTo is Get that reads at most limit+1 bytes of the value, with
// GETRANGE key 0 limit: a value longer than limit comes back cut to
// limit+1 bytes, so the caller refuses it for its size without Redis
// sending, or go-redis reading into memory, the rest. GETRANGE answers a
// missing key with an empty string, so an empty value reads as missing
// (ErrNotFound); no CacheKit entry is empty. A lease reads as missing too.
// limit must be positive.
//
// It asks for at most LongRead bytes (the stream's byte limit, if smaller):
// a value found longer is reported as a *LongError with its length, to be
// read with GetLongUpTo, so no caller's deadline sized for a small value
// cuts a large transfer short and no large reply holds up the stream.
func (s *Store) GetUpTo(ctx context.Context, key string, limit int) ([]byte, error) {
	if err := s.check("get"); err != nil {
		return nil, err
	}
	first := s.firstRead(limit)
	b, err := s.getRange(ctx, key, first, false)
	if err == nil && first < limit && len(b) > first {
		return nil, s.long(ctx, key)
	}
	return b, err
}

// GetLongUpTo is GetUpTo for a value a bounded read reported long: it
// reads at most limit+1 bytes at once, off the stream.
func (s *Store) GetLongUpTo(ctx context.Context, key string, limit int) ([]byte, error) {
	if err := s.check("get"); err != nil {
		return nil, err
	}
	return s.getRange(ctx, key, limit, true)
}

// getRange reads at most n+1 bytes of key's value (large: off the stream);
// an empty value or a lease reads as missing.
func (s *Store) getRange(ctx context.Context, key string, n int, large bool) ([]byte, error) {
	get := redis.NewStringCmd(ctx, "getrange", key, 0, int64(n))
	if err := s.send(ctx, large, get); err != nil {
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

// long reads key's length for a *LongError.
func (s *Store) long(ctx context.Context, key string) error {
	n := redis.NewIntCmd(ctx, "strlen", key)
	if err := s.send(ctx, false, n); err != nil {
		return fail("get", err)
	}
	if err := n.Err(); err != nil {
		return fail("get", err)
	}
	return &LongError{Len: int(n.Val())}
}

// GetWithTTLUpTo is GetWithTTL that reads at most limit+1 bytes of the
// value, as GetUpTo does (a value longer than its first read is a
// *LongError: read it with GetLongWithTTLUpTo), with GETRANGE and PTTL in
// one pipelined round trip (on the stream, one after the other: an empty
// value found by PTTL is read again in one round trip off it). A key PTTL
// finds with an empty value returns an empty, non-nil slice; a lease reads
// as missing.
func (s *Store) GetWithTTLUpTo(ctx context.Context, key string, limit int) ([]byte, time.Duration, error) {
	first := s.firstRead(limit)
	b, ttl, err := s.getTTL(ctx, key, redis.NewStringCmd(ctx, "getrange", key, 0, int64(first)), false)
	if err == nil && first < limit && len(b) > first {
		return nil, 0, s.long(ctx, key)
	}
	// On the stream another caller's command can run between GETRANGE and
	// PTTL: a key written between them reads as empty yet found. Such a
	// read is read again off the stream, where the two travel in one
	// pipeline.
	if err == nil && len(b) == 0 && s.streamBytes() > 0 {
		b, ttl, err = s.getTTL(ctx, key, redis.NewStringCmd(ctx, "getrange", key, 0, int64(first)), true)
	}
	if err == nil && b == nil {
		b = []byte{}
	}
	return b, ttl, err
}

// GetLongWithTTLUpTo is GetWithTTLUpTo for a value a bounded read
// reported long: GETRANGE of at most limit+1 bytes and PTTL in one
// pipeline, off the stream.
func (s *Store) GetLongWithTTLUpTo(ctx context.Context, key string, limit int) ([]byte, time.Duration, error) {
	b, ttl, err := s.getTTL(ctx, key, redis.NewStringCmd(ctx, "getrange", key, 0, int64(limit)), true)
	if err == nil && b == nil {
		b = []byte{}
	}
	return b, ttl, err
}

// firstRead is how many bytes (plus one) a bounded read of at most limit
// asks for first: limit, at most LongRead, and on the stream at most its
// byte limit.
func (s *Store) firstRead(limit int) int {
	limit = min(limit, LongRead)
	if max := s.streamBytes(); max > 0 {
		return min(limit, max)
	}
	return limit
}
