package l2

import (
	"context"
	"time"
)

// SetCond stores val under key with SET PX and NX (ifExists false: only
// when key does not exist) or XX (ifExists true: only when it does), and
// reports whether Redis stored it; a key holding a placeholder (a lease, a
// negative entry) counts as missing (NX stores over it, XX does not). It is
// one script. ttl is treated as for Set. again is as for Fill; the script
// honours it for NX only (an XX that lands keeps its condition).
func (s *Store) SetCond(ctx context.Context, key string, val []byte, ttl time.Duration, ifExists, again bool) (bool, error) {
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
	ch, msg := s.announceArgs(key)
	return s.runDone(ctx, "set", s.large(len(val)), setCondScript, key, val, pxMillis(ttl), cond, againArg(again), ch, msg)
}

// Expire sets key's time to live to ttl (PEXPIRE) and reports whether the
// key held an entry (a key holding a placeholder is left as it is). ttl is treated
// as for Set.
func (s *Store) Expire(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	if err := s.check("expire"); err != nil {
		return false, err
	}
	if ttl <= 0 {
		return false, ErrInvalidTTL
	}
	ch, msg := s.announceArgs(key)
	return s.runDone(ctx, "expire", false, expireScript, key, pxMillis(ttl), ch, msg)
}
