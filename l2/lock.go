package l2

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/internal/ctxwait"
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

// LockOrWait takes lockKey for ttl (TryLock with a fresh token, sent
// through run, the caller's reliability stack: a retry finds its own
// token) or, when another holds it, calls waiting once and polls probe
// with a backoff (5 ms doubling to 100 ms) until probe reports the
// holder's result (found), ctx ends, or the lock would have expired by
// now. unlock releases a lock it took, through run, within attempt
// whatever ctx says (the lock expires anyway); otherwise, and on an error
// taking it, unlock does nothing.
func (s *Store) LockOrWait(ctx context.Context, lockKey string, ttl, attempt time.Duration, now func() time.Time,
	run func(ctx context.Context, op string, fn func(context.Context) error) error, waiting func(), probe func() bool) (unlock func(), found bool, err error) {
	token, noop := NewToken(), func() {}
	var ok bool
	err = run(ctx, "lock", func(ctx context.Context) error {
		var err error
		ok, err = s.TryLock(ctx, lockKey, token, ttl)
		return err
	})
	if err != nil {
		return noop, false, err
	}
	if ok {
		return func() {
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), attempt)
			defer cancel()
			_ = run(uctx, "unlock", func(ctx context.Context) error {
				_, err := s.Unlock(ctx, lockKey, token)
				return err
			})
		}, false, nil
	}
	waiting()
	deadline := now().Add(ttl)
	for wait := 5 * time.Millisecond; now().Before(deadline); wait = min(wait*2, 100*time.Millisecond) {
		if !ctxwait.Sleep(ctx, wait) {
			return noop, false, nil
		}
		if probe() {
			return noop, true, nil
		}
	}
	return noop, false, nil
}
