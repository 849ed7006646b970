package l2

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Publish sends each message in msgs on channel, in one pipelined round
// trip when there are several. Pub/sub delivery is fire-and-forget: a nil
// error means Redis accepted the messages, not that anyone received them.
func (s *Store) Publish(ctx context.Context, channel string, msgs ...[]byte) error {
	if err := s.check("publish"); err != nil {
		return err
	}
	switch len(msgs) {
	case 0:
		return nil
	case 1:
		return fail("publish", s.rdb.Publish(ctx, channel, msgs[0]).Err())
	}
	cmds := make([]*redis.IntCmd, len(msgs))
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, m := range msgs {
			cmds[i] = p.Publish(ctx, channel, m)
		}
		return nil
	})
	for _, c := range cmds {
		if err := c.Err(); err != nil {
			return fail("publish", err)
		}
	}
	return nil
}

// SetPublish stores val under key like Set and then publishes msg on
// channel. On a standalone or failover client both commands travel in one
// pipelined round trip; on a cluster client they are sent one after the
// other. A failed SET is reported as a *BackendError with Op "set" (and
// nothing is published); a SET that succeeded followed by a failed PUBLISH
// is reported with Op "publish", so callers can tell the value was stored.
func (s *Store) SetPublish(ctx context.Context, key string, val []byte, ttl time.Duration, channel string, msg []byte) error {
	if err := s.check("set"); err != nil {
		return err
	}
	if ttl <= 0 {
		return ErrInvalidTTL
	}
	set := setCmd(ctx, key, val, ttl)
	if s.cluster != nil {
		_ = s.rdb.Process(ctx, set)
		if err := set.Err(); err != nil {
			return fail("set", err)
		}
		return fail("publish", s.rdb.Publish(ctx, channel, msg).Err())
	}
	var pub *redis.IntCmd
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		_ = p.Process(ctx, set)
		pub = p.Publish(ctx, channel, msg)
		return nil
	})
	if err := set.Err(); err != nil {
		return fail("set", err)
	}
	return fail("publish", pub.Err())
}

// DeletePublish removes key like Delete and then publishes msg on channel,
// in one round trip on a standalone client. It returns whether the key
// existed. Errors are reported as for SetPublish, with Op "del" or
// "publish".
func (s *Store) DeletePublish(ctx context.Context, key, channel string, msg []byte) (bool, error) {
	if err := s.check("del"); err != nil {
		return false, err
	}
	if s.cluster != nil {
		n, err := s.deleteCounted(ctx, []string{key}, nil)
		if err != nil {
			return false, fail("del", err)
		}
		return n > 0, fail("publish", s.rdb.Publish(ctx, channel, msg).Err())
	}
	var pub *redis.IntCmd
	n, err := s.deleteCounted(ctx, []string{key}, func(p redis.Pipeliner) { pub = p.Publish(ctx, channel, msg) })
	if err != nil {
		return false, fail("del", err)
	}
	return n > 0, fail("publish", pub.Err())
}
