package l2

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// unlockScript deletes the lock only while it still holds the caller's
// token, so a holder whose lock expired and was taken by someone else
// cannot release the new holder's lock.
var unlockScript = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("DEL", KEYS[1])
end
return 0
`)

// TryLock tries to take the distributed lock lockKey for ttl, marking it
// with token (which must be unique to the caller): SET NX PX and a GET in
// one pipelined round trip. It returns true when lockKey holds token after
// it (taken now, or by an earlier call with the same token whose reply was
// lost, so a retry is safe) and false when someone else holds it. The lock
// expires after ttl unless released earlier with Unlock. ttl must be
// positive (else ErrInvalidTTL); it is truncated to milliseconds, at least
// 1ms.
func (s *Store) TryLock(ctx context.Context, lockKey, token string, ttl time.Duration) (bool, error) {
	if err := s.check("lock"); err != nil {
		return false, err
	}
	if ttl <= 0 {
		return false, ErrInvalidTTL
	}
	set := redis.NewBoolCmd(ctx, "set", lockKey, token, "px", pxMillis(ttl), "nx")
	get := redis.NewStringCmd(ctx, "get", lockKey)
	if err := s.send(ctx, false, set, get); err != nil {
		return false, fail("lock", err)
	}
	if err := set.Err(); err != nil && err != redis.Nil {
		return false, fail("lock", err)
	}
	held, err := get.Result()
	if err != nil && err != redis.Nil {
		return false, fail("lock", err)
	}
	return held == token, nil
}

// Unlock releases lockKey if, and only if, it still holds token; it returns
// whether it did. The compare-and-delete runs as one Lua script (EVALSHA,
// falling back to EVAL when the server does not have it cached).
func (s *Store) Unlock(ctx context.Context, lockKey, token string) (bool, error) {
	if err := s.check("unlock"); err != nil {
		return false, err
	}
	cmd, err := s.script(ctx, false, unlockScript, lockKey, token)
	if err != nil {
		return false, fail("unlock", err)
	}
	n, err := cmd.Int64()
	if err != nil {
		return false, fail("unlock", err)
	}
	return n == 1, nil
}
