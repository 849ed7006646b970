package l2

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Item is one entry of an MSet.
type Item struct {
	Key   string
	Value []byte
	TTL   time.Duration // must be positive
}

// MGet returns the values of keys in key order, nil for a missing key. On a
// standalone client it sends a single MGET. On a cluster client it groups
// the keys by hash slot and sends one MGET per slot, all in one pipeline.
// The returned slices are fresh allocations owned by the caller. An empty
// keys slice returns an empty result without a round trip.
func (s *Store) MGet(ctx context.Context, keys []string) ([][]byte, error) {
	if err := s.check("mget"); err != nil {
		return nil, err
	}
	out := make([][]byte, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	if s.cluster == nil {
		vals, err := s.rdb.MGet(ctx, keys...).Result()
		if err != nil {
			return nil, fail("mget", err)
		}
		if err := fill(out, vals, nil); err != nil {
			return nil, err
		}
		return out, nil
	}
	groups := groupBySlot(keys)
	cmds := make([]*redis.SliceCmd, len(groups))
	_, _ = s.cluster.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, g := range groups {
			cmds[i] = p.MGet(ctx, g.pick(keys)...)
		}
		return nil
	})
	for i, c := range cmds {
		vals, err := c.Result()
		if err != nil {
			return nil, fail("mget", err)
		}
		if err := fill(out, vals, groups[i].idx); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// MGetWithTTL is MGet that also returns the remaining TTL of every key it
// found (as TTL reports it: 0 for no expiry), read with one PTTL per key
// in the same pipelined round trip (one pipeline per node on a cluster). A
// key that expired between its MGET and its PTTL is reported missing.
func (s *Store) MGetWithTTL(ctx context.Context, keys []string) ([][]byte, []time.Duration, error) {
	if err := s.check("mget"); err != nil {
		return nil, nil, err
	}
	out := make([][]byte, len(keys))
	ttls := make([]time.Duration, len(keys))
	if len(keys) == 0 {
		return out, ttls, nil
	}
	groups := []slotGroup{{}}
	if s.cluster != nil {
		groups = groupBySlot(keys)
	}
	mgets := make([]*redis.SliceCmd, len(groups))
	pttls := make([]*redis.DurationCmd, len(keys))
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, g := range groups {
			if g.idx == nil {
				mgets[i] = p.MGet(ctx, keys...)
			} else {
				mgets[i] = p.MGet(ctx, g.pick(keys)...)
			}
		}
		for i, k := range keys {
			pttls[i] = p.PTTL(ctx, k)
		}
		return nil
	})
	for i, c := range mgets {
		vals, err := c.Result()
		if err != nil {
			return nil, nil, fail("mget", err)
		}
		if err := fill(out, vals, groups[i].idx); err != nil {
			return nil, nil, err
		}
	}
	for i, c := range pttls {
		if out[i] == nil {
			continue
		}
		d, err := c.Result()
		if err != nil {
			return nil, nil, fail("mget", err)
		}
		ttl, found := fromPTTL(d)
		if !found {
			out[i] = nil
		}
		ttls[i] = ttl
	}
	return out, ttls, nil
}

// fill copies MGET replies into out: vals[j] goes to out[idx[j]], or to
// out[j] when idx is nil.
func fill(out [][]byte, vals []any, idx []int) error {
	want := len(out)
	if idx != nil {
		want = len(idx)
	}
	if len(vals) != want {
		return &BackendError{Op: "mget", Err: errUnexpectedReply}
	}
	for j, v := range vals {
		at := j
		if idx != nil {
			at = idx[j]
		}
		switch v := v.(type) {
		case nil:
		case string:
			out[at] = []byte(v)
		default:
			return &BackendError{Op: "mget", Err: errUnexpectedReply}
		}
	}
	return nil
}

// MSet stores every item with SET PX, pipelined: one round trip on a
// standalone client, one per node on a cluster. Items apply in order. Every
// TTL must be positive; otherwise ErrInvalidTTL is returned and nothing is
// sent. A failure reports the first failed command; items before and after
// it may or may not have been stored.
func (s *Store) MSet(ctx context.Context, items []Item) error {
	if err := s.check("mset"); err != nil {
		return err
	}
	for i := range items {
		if items[i].TTL <= 0 {
			return ErrInvalidTTL
		}
	}
	if len(items) == 0 {
		return nil
	}
	cmds := make([]*redis.StatusCmd, len(items))
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, it := range items {
			cmds[i] = setCmd(ctx, it.Key, it.Value, it.TTL)
			_ = p.Process(ctx, cmds[i])
		}
		return nil
	})
	for _, c := range cmds {
		if err := c.Err(); err != nil {
			keys := make([]string, len(items))
			for i := range items {
				keys[i] = items[i].Key
			}
			return fail("mset", err)
		}
	}
	return nil
}
