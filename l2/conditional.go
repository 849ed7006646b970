package l2

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// SetCond stores val under key with SET PX and NX (ifExists false: only
// when key does not exist) or XX (ifExists true: only when it does), and
// reports whether Redis stored it. ttl is treated as for Set.
func (s *Store) SetCond(ctx context.Context, key string, val []byte, ttl time.Duration, ifExists bool) (bool, error) {
	if err := s.check("set"); err != nil {
		return false, err
	}
	if ttl <= 0 {
		return false, ErrInvalidTTL
	}
	cond := "nx"
	if ifExists {
		cond = "xx"
	}
	cmd := redis.NewStatusCmd(ctx, "set", key, val, "px", pxMillis(ttl), cond)
	_ = s.rdb.Process(ctx, cmd)
	switch err := cmd.Err(); {
	case errors.Is(err, redis.Nil):
		return false, nil
	case err != nil:
		return false, fail("set", err)
	}
	return true, nil
}

// Expire sets key's time to live to ttl (PEXPIRE) and reports whether the
// key existed. ttl is treated as for Set.
func (s *Store) Expire(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	if err := s.check("expire"); err != nil {
		return false, err
	}
	if ttl <= 0 {
		return false, ErrInvalidTTL
	}
	ok, err := s.rdb.PExpire(ctx, key, time.Duration(pxMillis(ttl))*time.Millisecond).Result()
	if err != nil {
		return false, fail("expire", err)
	}
	return ok, nil
}
